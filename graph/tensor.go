package graph

import (
	"bytes"

	"github.com/wgdelegate/wgdelegate/internal/tensor"
)

// Tensor is a host tensor: an element type, a shape and the raw
// little-endian element bytes, row-major. It is the same type as
// wgdelegate.Tensor (both alias the one host tensor type), with its
// accessors (Float32s, Int32s, Int64s, ...), which share Data where they
// can; see wgdelegate.Tensor.
type Tensor = tensor.Tensor

// Numel returns the element count of shape.
func Numel(shape []int64) int64 { return tensor.Numel(shape) }

// Float32Tensor builds a float32 tensor from a copy of values (unlike
// wgdelegate.FromFloat32, which shares them).
func Float32Tensor(shape []int64, values []float32) Tensor {
	return copied(tensor.FromFloat32(shape, values))
}

// Int32Tensor builds an int32 tensor from a copy of values.
func Int32Tensor(shape []int64, values []int32) Tensor {
	return copied(tensor.FromInt32(shape, values))
}

// Int64Tensor builds an int64 tensor from a copy of values.
func Int64Tensor(shape []int64, values []int64) Tensor {
	return copied(tensor.FromInt64(shape, values))
}

// copied returns t with its own shape and data: the constructors of this
// package have always copied, and graph's callers may rely on it.
func copied(t Tensor) Tensor {
	return Tensor{DType: t.DType, Shape: append([]int64(nil), t.Shape...), Data: bytes.Clone(t.Data)}
}
