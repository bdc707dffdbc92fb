// Package wgdelegate runs ExecuTorch Vulkan-delegate models on the GPU
// through WebGPU.
//
// A model is a .pte program whose execution plan calls one or several
// "VulkanBackend" delegates (or a raw VH00 delegate blob), with its weights
// in the program's named data or in .ptd files. Open builds it: constants
// are written from the memory-mapped files straight into their GPU buffers,
// memory is planned from the exporter's mem_obj_ids, and every op becomes a
// recorded WGSL compute dispatch. Execute uploads inputs, replays the
// dispatches in one compute pass and one submit per delegate, and reads the
// outputs back.
//
//	m, err := wgdelegate.Open(ctx, "model.pte", wgdelegate.WithDataFiles("weights.ptd"))
//	if err != nil { ... }
//	defer m.Close()
//	outs, err := m.Execute(ctx, wgdelegate.FromFloat32([]int64{1, 4}, x))
//	if err != nil { ... } // a *InputError for a wrong dtype or shape, ...
//	y, err := outs[0].Float32s()
//	if err != nil { ... }
//
// Options choose the device (WithDevice; by default a process-wide device
// shared by all models), extra .ptd files (WithDataFiles, WithData), a
// logger (WithLogger), a progress callback (WithProgress) and whether every
// weight is checked against its SHA-256 key (WithVerifyData). A model that
// keeps state across Executes (a decoder's KV caches) holds one sequence:
// its user claims it with ClaimState, as llm.New does, so that a second
// user is refused rather than interleaved. Tensors are
// built from Go slices with FromFloat32, FromInt32, FromInt64, FromFloat64,
// FromBool and FromUint8, and read with Float32s, Int32s, ...; both share
// memory with the slice on little-endian hosts.
//
// Only execution plans made of delegate calls run here: a program that
// also calls portable kernels (a partially delegated model) is rejected at
// Open with a *PlanError naming the first such instruction.
//
// Errors are typed. The error values and types of the packages underneath
// (FormatError and ErrTruncated, ErrNoDelegate, ErrUnsupported, InputError,
// ...) are re-exported here, so this package alone is enough to classify a
// failure with errors.Is and errors.As.
//
// This package is a thin facade: the format lives in serialization, the
// build and execute phases in graph, the kernels in ops and shaders.
package wgdelegate
