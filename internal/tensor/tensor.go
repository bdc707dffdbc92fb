package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// Tensor is a host tensor: an element type, a shape and the raw
// little-endian element bytes, row-major. See the package documentation
// for when Data shares memory with a Go slice.
type Tensor struct {
	DType serialization.DataType
	Shape []int64
	Data  []byte
}

// DataType is a tensor element type.
type DataType = serialization.DataType

// littleEndian is true when the host stores integers little-endian, the
// byte order of Tensor.Data, so slices can be reinterpreted in place. It is
// set once, at init, and never changes.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Numel returns the element count of shape (1 for a scalar, shape []).
func Numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// Numel returns the tensor's element count according to its shape.
func (t Tensor) Numel() int64 { return Numel(t.Shape) }

// String describes the tensor as "float32 [2 3]" (no data).
func (t Tensor) String() string { return fmt.Sprintf("%v %v", t.DType, t.Shape) }

// asBytes reinterprets s as bytes without copying.
func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// fromBytes reinterprets b as a []T without copying when the host is
// little-endian and b is aligned for T; ok is false otherwise.
func fromBytes[T any](b []byte) (s []T, ok bool) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b) == 0 {
		return []T{}, true
	}
	if !littleEndian || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%unsafe.Alignof(zero) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size), true
}

// fromValues builds a tensor of dt from values, sharing their memory on
// little-endian hosts and encoding them with put otherwise.
func fromValues[T any](dt DataType, shape []int64, values []T, put func([]byte, T)) Tensor {
	shape = append([]int64{}, shape...)
	if littleEndian {
		return Tensor{DType: dt, Shape: shape, Data: asBytes(values)}
	}
	size := dt.Size()
	b := make([]byte, size*len(values))
	for i, v := range values {
		put(b[size*i:], v)
	}
	return Tensor{DType: dt, Shape: shape, Data: b}
}

// FromFloat32 returns a float32 tensor of the given shape over values,
// without copying on little-endian hosts. The shape is copied. Shape and
// values are not checked against each other here: Execute rejects a tensor
// whose shape does not hold exactly len(values) elements.
func FromFloat32(shape []int64, values []float32) Tensor {
	return fromValues(serialization.Float32, shape, values, func(b []byte, v float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(v)) })
}

// FromFloat64 is FromFloat32 for float64 values.
func FromFloat64(shape []int64, values []float64) Tensor {
	return fromValues(serialization.Float64, shape, values, func(b []byte, v float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(v)) })
}

// FromInt32 is FromFloat32 for int32 values.
func FromInt32(shape []int64, values []int32) Tensor {
	return fromValues(serialization.Int32, shape, values, func(b []byte, v int32) { binary.LittleEndian.PutUint32(b, uint32(v)) })
}

// FromInt64 is FromFloat32 for int64 values.
func FromInt64(shape []int64, values []int64) Tensor {
	return fromValues(serialization.Int64, shape, values, func(b []byte, v int64) { binary.LittleEndian.PutUint64(b, uint64(v)) })
}

// FromBool is FromFloat32 for bool values: one byte each, 0 or 1, always
// shared with values.
func FromBool(shape []int64, values []bool) Tensor {
	return Tensor{DType: serialization.Bool, Shape: append([]int64{}, shape...), Data: asBytes(values)}
}

// FromUint8 is FromFloat32 for uint8 values, always shared with values.
func FromUint8(shape []int64, values []uint8) Tensor {
	return Tensor{DType: serialization.Uint8, Shape: append([]int64{}, shape...), Data: values}
}

// FromInt8 is FromFloat32 for int8 values (the codes of statically
// quantized graphs), always shared with values.
func FromInt8(shape []int64, values []int8) Tensor {
	return Tensor{DType: serialization.Int8, Shape: append([]int64{}, shape...), Data: asBytes(values)}
}

// values returns t's data as a []T after checking its dtype and length:
// a view of Data when it can be, a decoded copy otherwise.
func values[T any](t Tensor, dt DataType, get func([]byte) T) ([]T, error) {
	if t.DType != dt {
		return nil, fmt.Errorf("wgdelegate: tensor is %v, not %v", t.DType, dt)
	}
	size := dt.Size()
	if len(t.Data)%size != 0 {
		return nil, fmt.Errorf("wgdelegate: %v tensor has %d data bytes, not a multiple of %d", dt, len(t.Data), size)
	}
	if s, ok := fromBytes[T](t.Data); ok {
		return s, nil
	}
	out := make([]T, len(t.Data)/size)
	for i := range out {
		out[i] = get(t.Data[size*i:])
	}
	return out, nil
}

// Float32s returns a float32 tensor's elements, sharing Data when it can.
// It is an error when the tensor is of another dtype.
func (t Tensor) Float32s() ([]float32, error) {
	return values(t, serialization.Float32, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
}

// Float64s is Float32s for a float64 tensor.
func (t Tensor) Float64s() ([]float64, error) {
	return values(t, serialization.Float64, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
}

// Int32s is Float32s for an int32 tensor.
func (t Tensor) Int32s() ([]int32, error) {
	return values(t, serialization.Int32, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
}

// Int64s is Float32s for an int64 tensor.
func (t Tensor) Int64s() ([]int64, error) {
	return values(t, serialization.Int64, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
}

// Uint8s is Float32s for a uint8 tensor; it always shares Data.
func (t Tensor) Uint8s() ([]uint8, error) {
	if t.DType != serialization.Uint8 {
		return nil, fmt.Errorf("wgdelegate: tensor is %v, not %v", t.DType, serialization.Uint8)
	}
	return t.Data, nil
}

// Int8s is Float32s for an int8 tensor; it always shares Data.
func (t Tensor) Int8s() ([]int8, error) {
	if t.DType != serialization.Int8 {
		return nil, fmt.Errorf("wgdelegate: tensor is %v, not %v", t.DType, serialization.Int8)
	}
	if len(t.Data) == 0 {
		return []int8{}, nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(t.Data))), len(t.Data)), nil
}

// Bools returns a bool tensor's elements as a new slice (any non-zero byte
// is true; bytes are copied so a stray value can never make an invalid Go
// bool).
func (t Tensor) Bools() ([]bool, error) {
	if t.DType != serialization.Bool {
		return nil, fmt.Errorf("wgdelegate: tensor is %v, not %v", t.DType, serialization.Bool)
	}
	out := make([]bool, len(t.Data))
	for i, b := range t.Data {
		out[i] = b != 0
	}
	return out, nil
}
