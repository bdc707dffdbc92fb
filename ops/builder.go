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

// Tensor describes a tensor value. Tensors are flat, contiguous, row-major
// storage buffers allocated at their serialized (upper-bound) size.
//
// Dims, Numel and NBytes are the live shape: for a graph input, the shape
// the caller passed to Execute; for an op output, what the producing op set
// with Builder.SetDims; before that, the serialized dims. MaxDims and
// MaxNumel are the serialized sizes, i.e. the buffer's capacity.
//
// DType is the device element type. A tensor serialized as FLOAT16
// (force_fp16 exports) is held and computed as float32: its DType is
// Float32 and Half is set, so no op needs a half variant; an op whose
// semantics depend on the serialized dtype (softmax's half_to_float)
// reads Half.
type Tensor struct {
	ID       int32
	DType    serialization.DataType
	Dims     []int64
	Numel    int64
	NBytes   int64
	Constant bool
	MaxDims  []int64
	MaxNumel int64
	Half     bool
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
	// DoubleList accepts DoubleList (or an IntList, converted).
	DoubleList(id int32) ([]float64, error)
	ValueList(id int32) ([]int32, error)
	String(id int32) (string, error)
	IsNull(id int32) bool

	// Dispatch records a compute dispatch: inputs bind read-only at 0..,
	// outputs read-write after them, and params (if non-nil) as a uniform
	// block last. groups is the workgroup grid.
	Dispatch(k *shaders.Kernel, inputs, outputs []int32, params []byte, groups [3]uint32) error
	// SetDims sets the live shape of tensor id, an output of the calling
	// op. Every op computes its outputs' shapes from its inputs' live
	// shapes (as torch does) and sets them before dispatching. It fails
	// with *ArgError when the shape has more elements than the tensor's
	// serialized capacity or a negative size.
	SetDims(id int32, dims []int64) error
	// SetInt sets the live value of SymInt id (sym_size.int, the symbolic
	// add/sub/mul/floordiv ops).
	SetInt(id int32, v int64) error

	// MaterializeConstant writes constant src's bytes straight into dst's
	// dedicated buffer.
	MaterializeConstant(src, dst int32) error
	// MaxWorkgroupsPerDim is the device's per-dimension workgroup limit.
	MaxWorkgroupsPerDim() uint32

	// OnRefresh gives what is being recorded an update function: when
	// only SymInt values (or host-read input values) it read change, the
	// graph may call update, on a builder holding the new values, instead
	// of recording it again. update reads those values as recording does,
	// sets what they decide (a SymInt's value, an output's shape) and
	// records the same dispatches with their new params, parsing nothing
	// else; where the values change more (a shape, a kernel, a guard), it
	// records something else or fails, and the graph records everything
	// again.
	OnRefresh(update func(b Builder) error)

	// Config is the load's kernel choices, DeviceProfile the device it
	// records for (Resolve turns the two into the kernel family).
	Config() Config
	DeviceProfile() DeviceProfile

	// HostElement returns element flat (row-major) of tensor id, a graph
	// input (the data given to the current Execute) or a constant, read on
	// the host while recording (by an op registered with Op.HostReads; the
	// graph re-records whenever those values change). Values computed on
	// the device cannot be read.
	HostElement(id int32, flat int64) (float64, error)

	// The weights as the load holds them.

	// PackWeight returns a read-only tensor holding weight id (a constant,
	// or a prepack output of one) transformed by spec, created once per
	// graph (from a packed-weight cache when there is one). It fails with
	// ErrNotPacked when it cannot pack now (first asked for while
	// re-recording, or a weight held in chunks) and with *ArgError when id
	// is no weight.
	PackWeight(id int32, spec PackSpec) (Tensor, error)
	// Persistent returns id itself when it is a writable tensor, else a
	// per-graph writable copy of constant id, initialised with its bytes
	// once at load and kept across Execute calls (a KV cache that an op
	// such as sdpa_with_kv_cache receives as a constant and updates in
	// place).
	Persistent(id int32) (Tensor, error)
	// HalfCache returns the packed-halves buffer (an Int32 tensor of
	// HalfCacheWords words, writable, persistent across Execute calls)
	// that stands for KV cache id, and whether there is one
	// (Config.HalfKVCache).
	HalfCache(id int32) (Tensor, bool, error)
	// ChunkedWeight reports whether tensor id is a weight held in chunks
	// (chunk.go): it has no buffer of its own, and an op reads it through
	// SliceWeight.
	ChunkedWeight(id int32) bool
	// ChunkBytes is the most bytes one buffer (a chunk, or a scratch
	// output) may hold: the device's (or the load's lowered) binding and
	// buffer size limit.
	ChunkBytes() int64
	// SliceWeight returns a read-only tensor holding elements [begin, end)
	// of weight id (a constant, or a prepack output of one; chunked or
	// not) along dim, with a buffer of its own, made once per graph from
	// the weight's bytes at load.
	SliceWeight(id int32, dim int, begin, end int64) (Tensor, error)
	// Scratch returns a writable tensor of dtype dt and (maximum) dims
	// with a buffer of its own, private to the calling op; key tells
	// apart an op's several scratch tensors. Made at load, found again
	// when re-recording; the op sets its live shape with SetDims.
	Scratch(key int, dt serialization.DataType, dims []int64) (Tensor, error)
}

// Ops are re-run: the graph calls every op function once at load and again,
// in chain order, whenever the live input shapes or SymInt input values of
// an Execute differ from the last recording. An op function must therefore
// be deterministic and derive everything (output shapes, uniforms, grids,
// kernel variants) from the Builder; MaterializeConstant writes only the
// first time.

// Output checks that id is a tensor of dtype dt (arg is its index in the
// op's args, for errors), sets its live shape to dims and returns it.
func Output(b Builder, arg int, id int32, dt serialization.DataType, dims []int64) (Tensor, error) {
	t, err := b.Tensor(id)
	if err != nil {
		return Tensor{}, argErr(arg, err)
	}
	if t.DType != dt {
		return Tensor{}, Errorf(arg, "out is %v, want %v", t.DType, dt)
	}
	if err := b.SetDims(id, dims); err != nil {
		return Tensor{}, argErr(arg, err)
	}
	return b.Tensor(id)
}

// NumelOf returns the element count of dims (1 for rank 0), or -1 when a
// size is negative or the product overflows int64.
func NumelOf(dims []int64) int64 {
	n := int64(1)
	for _, d := range dims {
		if d < 0 || (d != 0 && n > math.MaxInt64/d) {
			return -1
		}
		n *= d
	}
	return n
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
