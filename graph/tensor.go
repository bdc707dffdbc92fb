package graph

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// Tensor is a host tensor: an element type, a shape and the raw
// little-endian element bytes, row-major.
type Tensor struct {
	DType serialization.DataType
	Shape []int64
	Data  []byte
}

// Numel returns the element count of shape.
func Numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// Float32Tensor builds a float32 tensor from values.
func Float32Tensor(shape []int64, values []float32) Tensor {
	b := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return Tensor{DType: serialization.Float32, Shape: append([]int64(nil), shape...), Data: b}
}

// Int32Tensor builds an int32 tensor from values.
func Int32Tensor(shape []int64, values []int32) Tensor {
	b := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return Tensor{DType: serialization.Int32, Shape: append([]int64(nil), shape...), Data: b}
}

// Int64Tensor builds an int64 tensor from values.
func Int64Tensor(shape []int64, values []int64) Tensor {
	b := make([]byte, 8*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return Tensor{DType: serialization.Int64, Shape: append([]int64(nil), shape...), Data: b}
}

// Float32s decodes a float32 tensor's data.
func (t Tensor) Float32s() ([]float32, error) {
	if t.DType != serialization.Float32 {
		return nil, fmt.Errorf("graph: tensor is %v, not float32", t.DType)
	}
	out := make([]float32, len(t.Data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out, nil
}

// Int32s decodes an int32 tensor's data.
func (t Tensor) Int32s() ([]int32, error) {
	if t.DType != serialization.Int32 {
		return nil, fmt.Errorf("graph: tensor is %v, not int32", t.DType)
	}
	out := make([]int32, len(t.Data)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out, nil
}

// Int64s decodes an int64 tensor's data.
func (t Tensor) Int64s() ([]int64, error) {
	if t.DType != serialization.Int64 {
		return nil, fmt.Errorf("graph: tensor is %v, not int64", t.DType)
	}
	out := make([]int64, len(t.Data)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return out, nil
}

// scalar decodes a one-element tensor of any host dtype as a float64.
func (t Tensor) scalar() (float64, error) {
	d := t.Data
	switch t.DType {
	case serialization.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(d))), nil
	case serialization.Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(d)), nil
	case serialization.Int32:
		return float64(int32(binary.LittleEndian.Uint32(d))), nil
	case serialization.Int64:
		return float64(int64(binary.LittleEndian.Uint64(d))), nil
	case serialization.Int8:
		return float64(int8(d[0])), nil
	case serialization.Uint8, serialization.Bool:
		return float64(d[0]), nil
	}
	return 0, fmt.Errorf("cannot read a %v element", t.DType)
}
