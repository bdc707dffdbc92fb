// Package shaders holds the WGSL kernels, embedded with go:embed, and renders
// their variants. A variant is data: a template file and the values rendered
// into it. Its identity is the SHA-256 of the final source (plus entry point
// and binding layout), so the same kernel is the same pipeline everywhere.
//
// The .tmpl files hold named templates parsed with every kernel: common.tmpl
// the pieces several kernels share (row addressing, workgroup trees, the
// linear family's bindings, Params and epilogues, the fused linear groups'
// prologue) and the numerics helpers, and unary_formulas.tmpl the elementwise unary formulas
// and their helper functions, written once for the unfused unary kernel, the
// fused elementwise chain and the matmul epilogue, so that an op computes
// the same float32 operations in the same order in all of them.
//
// # Numerics
//
// WGSL lets an adapter assume no NaN, leave min/max/clamp undefined on NaN,
// divide within 2.5 ulp, bound sin/cos only on [-pi, pi], flush subnormals
// and fuse a*b+c. Every float min, max, clamp, data division and sin/cos/tan
// of a kernel therefore goes through common.tmpl's helpers ("num": is_nan,
// flt/fle/feq, fmax/fmin, fclamp, frelu, fabs, fneg; "num_div": div_rn,
// round_div; "num_round": keep_rounded; "num_trig": sin_, cos_, tan_), which
// decide on the bits in integer arithmetic, so results are the same on
// every adapter. internal/numguard checks every kernel the conformance
// cases render for a bare one (ops/opstest TestNumericsGuard); its
// allow-list names the divisions that stay, each compared with a
// tolerance, and why. NumericHelperSources and RenderText serve the guard
// and the helpers' device tests.
//
// # The kernel ABI
//
// Every kernel follows one binding convention, which ops' Dispatch calls,
// the graph's bind groups and the pipeline cache all assume (Layout builds
// it):
//
//   - group 0 only; the op's input tensors first, bound read-only
//     (ReadOnly), in the order the op passes them; then its outputs, bound
//     read_write (ReadWrite); then at most one uniform block named params
//     (Uniform), the last binding.
//   - Tensors are flat, contiguous, row-major storage buffers at their
//     serialized (upper-bound) size; 4-byte elements are f32 or i32 (int64
//     and float64 tensors arrive narrowed), 1-byte elements (bool, u8, i8)
//     are packed four to a u32 word, little-endian. A buffer is never bound
//     twice in one dispatch with one binding writable (see package memplan).
//   - params is a struct whose Go twin, with explicit padding, lives next to
//     the op that fills it; a size test pins each pair. Live shapes, element
//     counts and scalars travel there, so a re-recording for new shapes
//     changes uniforms and grids, not kernels.
//   - The workgroup size is a template value ({{.WG}}); the grid is
//     ops.Grid's: one dimension, folded into two when it would exceed the
//     device's maxComputeWorkgroupsPerDimension, so kernels compute their
//     linear invocation index from global_invocation_id and
//     num_workgroups and guard it against the count in params.
package shaders
