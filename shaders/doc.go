// Package shaders holds the WGSL kernels, embedded with go:embed, and renders
// their variants. A variant is data: a template file and the values rendered
// into it. Its identity is the SHA-256 of the final source (plus entry point
// and binding layout), so the same kernel is the same pipeline everywhere.
//
// The .tmpl files hold named templates parsed with every kernel: common.tmpl
// the pieces several kernels share (row addressing, workgroup trees), and
// unary_formulas.tmpl the elementwise unary formulas and their helper
// functions, written once for the unfused unary kernel, the fused
// elementwise chain and the matmul epilogue, so that an op computes the same
// float32 operations in the same order in all of them.
package shaders
