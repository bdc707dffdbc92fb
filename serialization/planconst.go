package serialization

import (
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/wgdelegate/wgdelegate/serialization/internal/fb/executorch"
)

// PlanScalar is an output of an execution plan that is an Int, Bool or
// Double EValue. A plan with no instructions returns such values as
// constants: that is how export_llama writes its metadata methods
// (get_max_seq_len, get_vocab_size, get_bos_id, use_kv_cache, ...).
type PlanScalar struct {
	Output int    // index in the plan's outputs
	Kind   string // "Int", "Bool" or "Double"
	Int    int64
	Bool   bool
	Double float64
}

// Int returns the value of the plan's first output when it is an Int or
// Bool scalar (a Bool as 0 or 1), and whether it is one: a metadata
// method's value.
func (ep *ExecutionPlan) Int() (int64, bool) {
	for _, s := range ep.Scalars {
		if s.Output != 0 {
			continue
		}
		switch s.Kind {
		case "Int":
			return s.Int, true
		case "Bool":
			if s.Bool {
				return 1, true
			}
			return 0, true
		}
	}
	return 0, false
}

// planScalars reads the plan's outputs that are Int, Bool or Double
// EValues into ep.Scalars.
func (pd *programDecoder) planScalars(vstart uint32, ep *ExecutionPlan, pi int) error {
	v := pd.v
	for oi, vi := range ep.Outputs {
		ev, et, err := v.evalueAt(vstart, uint32(vi))
		if err != nil {
			return err
		}
		kind := ev.ValType()
		size := 8
		switch kind {
		case executorch.KernelTypesInt, executorch.KernelTypesDouble:
		case executorch.KernelTypesBool:
			size = 1
		default:
			continue
		}
		s := PlanScalar{Output: oi, Kind: kind.String()}
		tpos, ok, err := v.ref(et, 1, "EValue.val")
		if err != nil {
			return err
		}
		if !ok {
			return v.errAt(uint64(et.pos), ErrBadFlatbuffer, nil, "plan %d value %d: %s EValue without a value table", pi, vi, s.Kind)
		}
		tt, err := v.table(tpos, s.Kind)
		if err != nil {
			return err
		}
		if err := v.scalar(tt, 0, size, s.Kind); err != nil {
			return err
		}
		pos := flatbuffers.UOffsetT(tt.pos)
		switch kind {
		case executorch.KernelTypesInt:
			var x executorch.Int
			x.Init(v.buf, pos)
			s.Int = x.IntVal()
		case executorch.KernelTypesBool:
			var x executorch.Bool
			x.Init(v.buf, pos)
			s.Bool = x.BoolVal()
		case executorch.KernelTypesDouble:
			var x executorch.Double
			x.Init(v.buf, pos)
			s.Double = x.DoubleVal()
		}
		ep.Scalars = append(ep.Scalars, s)
	}
	return nil
}
