// Package prepack decides which constants are prepacked and how their bytes
// reach the GPU.
//
// The exporter inserts et_vk.prepack.default(constant) -> out before every
// consumer of a constant that does not pack its own weights (section 3.9 of
// the format notes). The out tensor is dedicated (mem_obj_id -1) and
// persistent. A constant whose only uses are such prepacks needs no GPU
// buffer of its own: its bytes are written once, from the memory-mapped file,
// straight into each prepack output (graph.Build does the writing through
// the device queue, in chunks of at most 16 MiB). Ops that pack their own
// weights (linear, mm, ...) receive the constant directly, so it keeps a
// buffer.
package prepack
