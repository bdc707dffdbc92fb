package wgdelegate

import (
	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Tensor is a host tensor: an element type, a shape and the raw
// little-endian element bytes, row-major. It is the same type as
// graph.Tensor, so tensors pass between the two packages as they are
// (graph.Tensor(t) and Tensor(gt) still compile, and copy nothing).
//
// The From* constructors and the typed accessors (Float32s, Int32s, ...)
// are zero-copy on little-endian hosts (amd64, arm64, riscv64, wasm, ...):
// the tensor's Data and the Go slice share memory, so writing to one
// changes the other. Do not change a slice while an Execute that reads it
// is running. On big-endian hosts, and when Data is not aligned for the
// element type, they copy.
//
// Its methods are Numel, String ("float32 [2 3]", no data) and the typed
// accessors Float32s, Float64s, Int32s, Int64s, Float16s (half bit
// patterns), Uint8s and Int8s (both always shared) and Bools (always
// copied, so a stray byte never makes an invalid Go bool); an accessor
// called on a tensor of another dtype returns an error.
type Tensor = tensor.Tensor

// DataType is a tensor element type.
type DataType = serialization.DataType

// Element types a Tensor may hold. The device computes in float32, int32
// and the 1-byte types; int64 and float64 inputs are narrowed on upload
// (an int64 that does not fit is an error) and outputs the program declares
// 64-bit are widened on readback.
//
// Float16 (force_fp16 exports): the device holds FLOAT16 tensors as
// float32 and computes them in float32 (there is no f16 arithmetic on
// every adapter; constants are widened exactly at load), so device memory
// for them is twice the serialized size (MemoryStats.Float16TensorBytes).
// At the boundary a FLOAT16 input or output has the dtype its
// staging_datatype gives: float32 for a force_fp16 export (what its host
// feeds and receives), float16 otherwise. Either way a FLOAT16 input
// accepts float16, float32 and float64 data: float32 and float64 values
// are rounded to the nearest half on upload, as the reference runtime's
// staging copy does, so the two give the same results. Outputs are
// halves' values, narrowed to float16 (round to nearest even) when the
// host dtype is float16.
const (
	Bool    = serialization.Bool
	Uint8   = serialization.Uint8
	Int8    = serialization.Int8
	Int32   = serialization.Int32
	Float16 = serialization.Float16
	Float32 = serialization.Float32
	Float64 = serialization.Float64
	Int64   = serialization.Int64
)

// Numel returns the element count of shape (1 for a scalar, shape []).
func Numel(shape []int64) int64 { return tensor.Numel(shape) }

// FromFloat32 returns a float32 tensor of the given shape over values,
// without copying on little-endian hosts (see Tensor). The shape is copied.
// Shape and values are not checked against each other here: Execute rejects
// a tensor whose shape does not hold exactly len(values) elements.
func FromFloat32(shape []int64, values []float32) Tensor { return tensor.FromFloat32(shape, values) }

// FromFloat64 is FromFloat32 for float64 values. The device computes in
// float32: the values are narrowed on upload.
func FromFloat64(shape []int64, values []float64) Tensor { return tensor.FromFloat64(shape, values) }

// FromInt32 is FromFloat32 for int32 values.
func FromInt32(shape []int64, values []int32) Tensor { return tensor.FromInt32(shape, values) }

// FromInt64 is FromFloat32 for int64 values. The device computes in int32:
// the values are narrowed on upload and one that does not fit is an error.
func FromInt64(shape []int64, values []int64) Tensor { return tensor.FromInt64(shape, values) }

// FromFloat16 is FromFloat32 for float16 values given as IEEE binary16 bit
// patterns (Float32ToHalf makes one from a float32).
func FromFloat16(shape []int64, bits []uint16) Tensor { return tensor.FromFloat16(shape, bits) }

// Float32ToHalf returns the bits of the float16 nearest f (ties to even;
// ±Inf beyond the half range, NaN kept).
func Float32ToHalf(f float32) uint16 { return tensor.Float32ToHalf(f) }

// HalfToFloat32 returns the exact float32 value of the float16 with bits h.
func HalfToFloat32(h uint16) float32 { return tensor.HalfToFloat32(h) }

// FromBool is FromFloat32 for bool values: one byte each, 0 or 1, always
// shared with values (a Go bool is such a byte on every host).
func FromBool(shape []int64, values []bool) Tensor { return tensor.FromBool(shape, values) }

// FromUint8 is FromFloat32 for uint8 values, always shared with values.
func FromUint8(shape []int64, values []uint8) Tensor { return tensor.FromUint8(shape, values) }

// FromInt8 is FromFloat32 for int8 values (the codes of statically
// quantized graphs whose inputs are int8), always shared with values.
func FromInt8(shape []int64, values []int8) Tensor { return tensor.FromInt8(shape, values) }

// Float32Tensor, Int32Tensor and Int64Tensor are the older names of
// FromFloat32, FromInt32 and FromInt64.
func Float32Tensor(shape []int64, values []float32) Tensor { return FromFloat32(shape, values) }

// Int32Tensor is FromInt32.
func Int32Tensor(shape []int64, values []int32) Tensor { return FromInt32(shape, values) }

// Int64Tensor is FromInt64.
func Int64Tensor(shape []int64, values []int64) Tensor { return FromInt64(shape, values) }
