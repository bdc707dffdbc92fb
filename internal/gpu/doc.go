// Package gpu is the only place in wgdelegate that touches the WebGPU binding
// (github.com/cogentcore/webgpu). Everything above it speaks in terms of
// Device, Buffer, Pipeline, BindGroup and Run.
//
// The seam exists because the binding has sharp edges that must be handled in
// exactly one place (lavapipe's hazards):
//
//   - Adapter.GetLimits leaves MaxPushConstantSize uninitialised; requesting a
//     device with the garbage value can fail, so it is overwritten.
//   - Device.Poll(true) gives up after 5 s and then reports the queue empty
//     while work is still running; waits here poll without blocking and sleep
//     between polls, driven by the map callbacks themselves.
//   - Validation errors at Queue.Submit abort the process and cannot be
//     caught. Map state is tracked so a buffer that is mapped or pending a map
//     is never used by a submission, and a failed Finish (nil command buffer)
//     is never submitted.
//   - The binding logs warnings to stderr by default; logging is off unless
//     asked for.
//   - llvmpipe wakes a worker pool for every dispatch (tens of µs on a small
//     host) and takes its size only from LP_NUM_THREADS, read when an
//     instance enumerates its adapters. Options.CPUThreads sets the variable
//     around that moment, under a process-wide lock, and restores it, so
//     each Device gets its own setting.
package gpu
