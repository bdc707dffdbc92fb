// Package reference is an independent plain-Go interpreter for VkGraphs,
// used as the ground truth in the op conformance suite. It shares nothing
// with the GPU path but the argument accessors (ops.Values) and the host
// element codec (internal/tensor): every op is written again here,
// straightforwardly, in float64.
package reference

import (
	"fmt"
	"math"
	"sort"

	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Tensor is a reference tensor. Values are float64, which holds every int32,
// bool and float32 exactly.
type Tensor struct {
	DType serialization.DataType
	Shape []int64
	V     []float64
}

// Numel returns the element count.
func (t *Tensor) Numel() int64 { return tensor.Numel(t.Shape) }

// New returns a zero tensor.
func New(dt serialization.DataType, shape []int64) *Tensor {
	t := &Tensor{DType: dt, Shape: append([]int64(nil), shape...)}
	t.V = make([]float64, t.Numel())
	return t
}

// Decode reads little-endian element bytes.
func Decode(dt serialization.DataType, shape []int64, data []byte) (*Tensor, error) {
	t := New(dt, shape)
	es := dt.Size()
	if es == 0 || int64(len(data)) < t.Numel()*int64(es) {
		return nil, fmt.Errorf("reference: %d bytes for %v %v", len(data), dt, shape)
	}
	for i := range t.V {
		v, ok := tensor.Element(dt, data[i*es:])
		if !ok {
			return nil, fmt.Errorf("reference: cannot decode %v", dt)
		}
		t.V[i] = v
	}
	return t, nil
}

// Encode writes little-endian element bytes, rounding to the dtype.
func (t *Tensor) Encode() []byte {
	es := t.DType.Size()
	out := make([]byte, len(t.V)*es)
	for i, v := range t.V {
		tensor.PutElement(t.DType, out[i*es:], v)
	}
	return out
}

// Func evaluates one op: it reads inputs with e.In and stores its output
// with e.Set.
type Func func(e *Env, args []int32) error

var registry = map[string]Func{}

// Register adds a reference op under its exact OperatorCall.name.
func Register(name string, fn Func) {
	if _, dup := registry[name]; dup {
		panic("reference: Register called twice for " + name)
	}
	registry[name] = fn
}

// Names lists the registered reference ops.
func Names() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Env is the interpreter state handed to a reference op.
type Env struct {
	ops.Values
	blob  *serialization.Blob
	named serialization.NamedData
	vals  map[int32]*Tensor
	sym   map[int32]int64
	opts  Options
}

// Options are the reference's counterparts of a load's kernel choices
// that change results.
type Options struct {
	// HalfKVCache models ops.Config.HalfKVCache: the KV-cache attentions
	// (sdpa_with_kv_cache, llama.custom_sdpa) read every cached k and v
	// value rounded to half (round to nearest even), as a cache held as
	// halves holds them. The cache tensors themselves keep their float32
	// values (rounding on read is the same, and idempotent).
	HalfKVCache bool
}

// Decl returns the dtype and shape the graph declares for tensor id.
func (e *Env) Decl(id int32) (serialization.DataType, []int64, error) {
	if e.Kind(id) != serialization.KindTensor {
		return 0, nil, fmt.Errorf("reference: value %d is %v, not a tensor", id, e.Kind(id))
	}
	t := e.G.Values[id].Tensor
	shape := make([]int64, len(t.Dims))
	for i, d := range t.Dims {
		shape[i] = int64(d)
	}
	return t.DataType, shape, nil
}

// In returns the current value of tensor id (an input, a constant, or an
// earlier op's output).
func (e *Env) In(id int32) (*Tensor, error) {
	if t, ok := e.vals[id]; ok {
		return t, nil
	}
	dt, shape, err := e.Decl(id)
	if err != nil {
		return nil, err
	}
	tv := e.G.Values[id].Tensor
	if tv.ConstantID < 0 {
		return nil, fmt.Errorf("reference: tensor %d read before it was written", id)
	}
	data, err := e.blob.ResolveConstant(tv, e.named)
	if err != nil {
		return nil, err
	}
	t, err := Decode(dt, shape, data)
	if err != nil {
		return nil, err
	}
	e.vals[id] = t
	return t, nil
}

// Out returns a zero tensor shaped and typed as the graph declares id.
func (e *Env) Out(id int32) (*Tensor, error) {
	dt, shape, err := e.Decl(id)
	if err != nil {
		return nil, err
	}
	return New(dt, shape), nil
}

// NewOut returns a zero tensor of shape for output id, with its declared
// dtype. Reference ops compute their output shapes from their inputs (as
// torch does); the shape may be smaller than the declared upper bound but
// not larger.
func (e *Env) NewOut(id int32, shape []int64) (*Tensor, error) {
	dt, decl, err := e.Decl(id)
	if err != nil {
		return nil, err
	}
	t := &Tensor{DType: dt, Shape: append([]int64(nil), shape...)}
	n, capN := t.Numel(), (&Tensor{Shape: decl}).Numel()
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("reference: value %d: negative size in %v", id, shape)
		}
	}
	if n > capN {
		return nil, fmt.Errorf("reference: value %d: shape %v exceeds the declared %v", id, shape, decl)
	}
	t.V = make([]float64, n)
	return t, nil
}

// SetInt sets the live value of SymInt id.
func (e *Env) SetInt(id int32, v int64) error {
	if e.Kind(id) != serialization.KindSymInt {
		return fmt.Errorf("reference: value %d is %v, not a SymInt", id, e.Kind(id))
	}
	e.sym[id] = v
	return nil
}

// Set stores the value of tensor id, rounding to its dtype.
func (e *Env) Set(id int32, t *Tensor) {
	for i, v := range t.V {
		t.V[i] = Round(t.DType, v)
	}
	e.vals[id] = t
}

// isFloat reports whether dt is a floating-point dtype.
func isFloat(dt serialization.DataType) bool {
	return dt == serialization.Float32 || dt == serialization.Float16 || dt == serialization.Float64
}

// Round rounds v to what dtype dt can hold (float32 and float16 rounding
// to nearest even, integer
// truncation toward zero with int32 wrap-around, bool as 0/1).
func Round(dt serialization.DataType, v float64) float64 {
	switch dt {
	case serialization.Float32:
		return float64(float32(v))
	case serialization.Float16:
		return tensor.RoundHalf(v)
	case serialization.Int32:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0
		}
		return float64(int32(int64(v)))
	case serialization.Int64:
		return math.Trunc(v)
	case serialization.Bool:
		if v != 0 {
			return 1
		}
		return 0
	}
	return v
}

// Run interprets the blob's graph on inputs (in input_ids order) and returns
// the outputs (in output_ids order).
//
// FLOAT16 tensors hold half values: every op's output is rounded to half
// (Set), constants are the serialized halves, and an input fed in another
// dtype is rounded to half. An output whose staging_datatype is FLOAT32
// (force_fp16) is returned as float32, any other FLOAT16 output as
// float16: what the host feeds and receives (vkgraph-format §3.2).
func Run(blob *serialization.Blob, named serialization.NamedData, inputs []*Tensor) ([]*Tensor, error) {
	return RunOptions(blob, named, inputs, Options{})
}

// RunOptions is Run with opts.
func RunOptions(blob *serialization.Blob, named serialization.NamedData, inputs []*Tensor, opts Options) ([]*Tensor, error) {
	g := blob.Graph
	e := &Env{blob: blob, named: named, vals: map[int32]*Tensor{}, sym: map[int32]int64{}, opts: opts}
	e.Values = ops.Values{G: g, Sym: func(id int32) (int64, bool) { v, ok := e.sym[id]; return v, ok }}
	if len(inputs) != len(g.InputIDs) {
		return nil, fmt.Errorf("reference: %d inputs for %d", len(inputs), len(g.InputIDs))
	}
	for i, id := range g.InputIDs {
		if e.Kind(int32(id)) == serialization.KindSymInt {
			// A SymInt input is given as a one-element tensor.
			if len(inputs[i].V) != 1 {
				return nil, fmt.Errorf("reference: SymInt input %d needs one element, has %d", i, len(inputs[i].V))
			}
			e.sym[int32(id)] = int64(inputs[i].V[0])
			continue
		}
		in := inputs[i]
		if dt, _, err := e.Decl(int32(id)); err == nil && dt == serialization.Float16 && in.DType != dt {
			// A FLOAT16 input fed in another float dtype (force_fp16
			// exports stage it as float32): its values as halves.
			h := &Tensor{DType: dt, Shape: in.Shape, V: make([]float64, len(in.V))}
			for k, v := range in.V {
				h.V[k] = Round(dt, v)
			}
			in = h
		}
		e.vals[int32(id)] = in
	}
	for i, op := range g.Chain {
		fn, ok := registry[op.Name]
		if !ok {
			return nil, fmt.Errorf("reference: op %d: no reference for %s", i, op.Name)
		}
		if err := fn(e, op.Args); err != nil {
			return nil, fmt.Errorf("reference: op %d (%s): %w", i, op.Name, err)
		}
	}
	outs := make([]*Tensor, len(g.OutputIDs))
	for i, id := range g.OutputIDs {
		if e.Kind(int32(id)) == serialization.KindSymInt {
			v, _ := e.Int(int32(id))
			outs[i] = &Tensor{DType: serialization.Int64, Shape: []int64{}, V: []float64{float64(v)}}
			continue
		}
		t, err := e.In(int32(id))
		if err != nil {
			return nil, err
		}
		if tv := g.Values[id].Tensor; t.DType == serialization.Float16 && tv.StagingDataType == serialization.Float32 {
			// A FLOAT16 output staged as float32: the host receives
			// the halves' exact float32 values.
			t = &Tensor{DType: serialization.Float32, Shape: t.Shape, V: t.V}
		}
		outs[i] = t
	}
	return outs, nil
}
