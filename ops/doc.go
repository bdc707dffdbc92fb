// Package ops holds the operator implementations, one op family per file,
// each registered in init under the exact OperatorCall.name it implements
// (for example "aten.add.Tensor"). An op reads its arguments through the
// checked accessors of Builder and records WGSL compute dispatches; it never
// touches the flatbuffer or the GPU binding directly.
//
// Every op file opens with the argument layout it reads. Every op has an
// independent plain-Go reference in package ops/reference, and the
// conformance suite in ops/opstest runs both on random inputs.
package ops
