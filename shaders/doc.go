// Package shaders holds the WGSL kernels, embedded with go:embed, and renders
// their variants. A variant is data: a template file and the values rendered
// into it. Its identity is the SHA-256 of the final source (plus entry point
// and binding layout), so the same kernel is the same pipeline everywhere.
package shaders
