// Package models builds the small networks that the examples and the
// end-to-end tests share: a CNN, an MLP with a dynamic batch, a
// transformer decoder layer with a KV cache, and a multi-layer Llama laid
// out like an ExecuTorch llama export (with llama2.c checkpoint reading
// and writing, so that llama2.c's run.c can run the same weights, and
// ImportLlama2C, which writes a checkpoint as export_llama's .pte and
// .ptd for `wgdelegate import llama2c`). Each is
// written with serialization.Builder exactly as the ExecuTorch Vulkan
// exporter would lay it out (op names, argument order, SymInts for dynamic
// sizes, named constants for weights), with deterministic random weights,
// and each can be run on the plain-Go reference interpreter
// (ops/reference) to check what the GPU computed.
package models
