// Package graph builds a decoded VkGraph on a WebGPU device and executes it.
//
// Build runs in phases, like the reference runtimes:
//
//  1. Every op in the chain is looked up in the ops registry; all missing ops
//     are reported at once, before any GPU object exists.
//  2. Prescan: the sources of et_vk.prepack.default are collected, and every
//     argument of every other op (ValueList items included) and every graph
//     output counts as a direct use. A constant that is a prepack source and
//     never used directly is deferred: it gets no buffer of its own.
//  3. Values: tensors are sized (overflow-checked) and every constant's bytes
//     are resolved (inline region or named data) so a missing key fails
//     early, naming the key.
//  4. Memory: package memplan gives one buffer per non-negative mem_obj_id,
//     sized to its largest user, and a dedicated buffer to every constant and
//     negative-id tensor. Non-deferred constants are written with queue
//     writes straight from the caller's (memory-mapped) bytes.
//  5. Ops record their dispatches in chain order; prepack writes its constant
//     straight into its output's dedicated buffer. Parameters go to one
//     uniform arena; bind groups are created once.
//  6. One reused staging buffer per output.
//
// Execute uploads inputs, replays every dispatch in one compute pass and one
// submit, copies the outputs into their staging buffers in the same command
// buffer, and reads them back.
package graph
