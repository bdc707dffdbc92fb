package ops

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// ErrArg classifies errors about an op's arguments: a wrong value kind, a
// bad shape, an unsupported dtype or argument value.
var ErrArg = errors.New("bad op argument")

// ArgError describes a bad argument of one op.
type ArgError struct {
	Op  string // op name, filled in by the graph
	Arg int    // index into args, or -1
	Msg string
}

func (e *ArgError) Error() string {
	if e.Arg >= 0 {
		return fmt.Sprintf("ops: %s: arg %d: %s", e.Op, e.Arg, e.Msg)
	}
	return fmt.Sprintf("ops: %s: %s", e.Op, e.Msg)
}

// Unwrap lets errors.Is(err, ErrArg) match.
func (e *ArgError) Unwrap() error { return ErrArg }

// Errorf returns an *ArgError for argument arg (-1 for the op as a whole).
func Errorf(arg int, format string, a ...any) error {
	return &ArgError{Arg: arg, Msg: fmt.Sprintf(format, a...)}
}

// Tensor describes a tensor value as the graph allocated it. Dims are the
// serialized (upper-bound) sizes; tensors are flat, contiguous, row-major.
type Tensor struct {
	ID       int32
	DType    serialization.DataType
	Dims     []int64
	Numel    int64
	NBytes   int64
	Constant bool
}

// Builder is what an op sees of the graph being built. Value accessors check
// the value kind and return *ArgError on a mismatch; they never panic.
type Builder interface {
	// Kind returns the kind of value id, or KindNone when id is out of range.
	Kind(id int32) serialization.ValueKind
	Tensor(id int32) (Tensor, error)
	// Int accepts Int, an integral Double, or a SymInt (its current value).
	Int(id int32) (int64, error)
	// Float accepts Double or Int (the exporter deduplicates 1 and 1.0).
	Float(id int32) (float64, error)
	Bool(id int32) (bool, error)
	// IntList accepts IntList or a ValueList of Int/SymInt values.
	IntList(id int32) ([]int64, error)
	ValueList(id int32) ([]int32, error)
	String(id int32) (string, error)
	IsNull(id int32) bool

	// Dispatch records a compute dispatch: inputs bind read-only at 0..,
	// outputs read-write after them, and params (if non-nil) as a uniform
	// block last. groups is the workgroup grid.
	Dispatch(k *shaders.Kernel, inputs, outputs []int32, params []byte, groups [3]uint32) error
	// MaterializeConstant writes constant src's bytes straight into dst's
	// dedicated buffer.
	MaterializeConstant(src, dst int32) error
	// MaxWorkgroupsPerDim is the device's per-dimension workgroup limit.
	MaxWorkgroupsPerDim() uint32
}

// Grid returns a workgroup grid covering n invocations with workgroups of wg
// invocations, folded into 2-D when one dimension would exceed maxPerDim.
// Shaders recover the linear index as gid.x + gid.y * (nwg.x * wg).
func Grid(n uint64, wg uint32, maxPerDim uint32) ([3]uint32, error) {
	if n == 0 {
		return [3]uint32{0, 1, 1}, nil
	}
	groups := (n + uint64(wg) - 1) / uint64(wg)
	if groups <= uint64(maxPerDim) {
		return [3]uint32{uint32(groups), 1, 1}, nil
	}
	y := (groups + uint64(maxPerDim) - 1) / uint64(maxPerDim)
	if y > uint64(maxPerDim) {
		return [3]uint32{}, Errorf(-1, "%d invocations exceed the dispatch grid", n)
	}
	x := (groups + y - 1) / y
	return [3]uint32{uint32(x), uint32(y), 1}, nil
}

// Params packs a uniform block. Fields are appended little-endian; callers
// mirror a WGSL struct whose members are all 4-byte scalars or vec4s, so the
// packing matches WGSL's uniform layout without implicit padding.
type Params struct{ b []byte }

// U32 appends a u32.
func (p *Params) U32(v uint32) *Params { p.b = binary.LittleEndian.AppendUint32(p.b, v); return p }

// I32 appends an i32.
func (p *Params) I32(v int32) *Params { return p.U32(uint32(v)) }

// F32 appends an f32.
func (p *Params) F32(v float32) *Params { return p.U32(math.Float32bits(v)) }

// U32s appends vs as n u32 values (zero-filled), n a multiple of 4 so the
// array maps onto array<vec4<u32>, n/4>.
func (p *Params) U32s(vs []uint32, n int) *Params {
	for i := 0; i < n; i++ {
		var v uint32
		if i < len(vs) {
			v = vs[i]
		}
		p.U32(v)
	}
	return p
}

// Pad appends zero u32s until the block is a multiple of 16 bytes.
func (p *Params) Pad() *Params {
	for len(p.b)%16 != 0 {
		p.U32(0)
	}
	return p
}

// Bytes returns the packed block, padded to 16 bytes.
func (p *Params) Bytes() []byte { p.Pad(); return p.b }
