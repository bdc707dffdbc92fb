// Package tensor is the host tensor: an element type, a shape and the raw
// little-endian element bytes, row-major, with the one codec every other
// package uses to turn those bytes into Go values and back.
//
// The public wgdelegate.Tensor and graph.Tensor are aliases of Tensor, so a
// tensor passes between the facade, the graph, the .npy reader and writer
// and the tests as it is, without a conversion or a copy. The package is
// pure Go (it imports only the standard library and serialization for the
// dtype) so that the plain-Go packages that handle host data (npy,
// ops/reference) do not link the GPU binding.
//
// # Sharing memory
//
// The From* constructors and the typed accessors (Float32s, Int32s, ...)
// are zero-copy on little-endian hosts (amd64, arm64, riscv64, wasm, ...):
// the tensor's Data and the Go slice share memory, so writing to one
// changes the other. On big-endian hosts, and when Data is not aligned for
// the element type, they copy. Bool and Uint8 tensors always share (a Go
// bool is one byte, 0 or 1, on every host); Bools copies instead, so that a
// stray byte can never become an invalid Go bool.
//
// # Codec
//
// Element and PutElement convert one element of any supported dtype to and
// from float64, which holds every int32, bool and float32 exactly; the
// plain-Go reference interpreter computes in it. Widen and Narrow convert
// between the 64-bit host dtypes a caller may use (int64, float64) and the
// 32-bit ones the device computes in (int32, float32): narrowing an int64
// that does not fit int32 is an *OverflowError, never a silent wrap.
//
// Errors are prefixed "wgdelegate:", the package whose API the type is.
package tensor
