package ops

import (
	"errors"
	"strings"
)

// Config is a load's kernel choices, carried as data by the graph's options
// (graph.Options.Kernels, wgdelegate.WithKernels) rather than set for the
// whole process, so models with different choices can live side by side.
// The zero value is the default: the kernel family the device profile
// implies (DeviceProfile.Family), with the choices measured best for it.
// The other fields are per-load overrides for benchmarks and tests.
type Config struct {
	// Family picks the kernel family (FamilyAuto by default: by the
	// adapter's class, FamilyCPU on lavapipe, FamilyGPU on a GPU); the
	// CLI's --kernels auto|cpu|gpu. Forcing FamilyGPU on lavapipe runs
	// the GPU kernels there (slowly), which is how they are tested
	// without a GPU.
	Family Family
	// Matmul selects the matmul kernel family (MatmulAuto by default).
	Matmul MatmulPath
	// GEMVCols is the output columns (weight rows) each invocation of
	// the GEMV kernel computes, at most 16 (rounded up to a power of two);
	// 0 picks the default measured best (gemvCols in linear_cpu.go). For
	// benchmarks and tuning on other devices.
	GEMVCols int
	// PackLinear packs constant linear weights into the [K, N] layout of
	// the mm kernel. Off by default because it did not pay on lavapipe:
	// packed/unpacked kernel rate, same run, interleaved, N×N·N×N with
	// bias: 256 0.99–1.04, 512 0.96–1.04, 1024 0.94–1.00 (the vec4 kernel
	// loads as many vec4s per FMA from either layout). For devices where
	// the layout matters, and for benchmarks.
	PackLinear bool
	// NoHalfWeights reads FLOAT16 linear weights (force_fp16 exports) as
	// their float32 copy, with the float32 kernels, instead of packed
	// halves (linear_f16.go: 2 bytes a weight, the half GEMV kernel at
	// every M, 1.2–1.6× their rate on lavapipe); for benchmarks and tests
	// of the float32 path.
	NoHalfWeights bool
	// NoConvPacking reads forward-convolution weights as exported instead
	// of packed into blocks of 16 output channels (1.8–2.0x GFLOP/s with
	// packing); for benchmarks and tests of the unpacked kernel.
	NoConvPacking bool
	// NoElementwiseFusion records every elementwise op on its own instead
	// of fusing chains of them into one kernel; for benchmarks and tests of
	// the unfused chain. A single activation after a matmul is fused into
	// its epilogue either way; SiLU and the add/mul epilogue are not, nor
	// are the decode-step fusions: rms_norm and the one-row linears that
	// read it (fuse_linear.go), the rope with the KV-cache update and the
	// rope tables' slices (fuse_rope.go).
	NoElementwiseFusion bool
	// NoViewAliasing records a copy for every view-like op (view_copy,
	// squeeze/unsqueeze, clone, alias_copy, a select_copy from a dim of
	// size 1) instead of letting its output
	// share its input's buffer where that is safe (package lower's views
	// pass); for tests
	// and benchmarks of the copy.
	NoViewAliasing bool
	// NoQGEMV runs one-row et_vk.linear_q4gsw and linear_dq8ca_q4gsw
	// linears on the tiled
	// quantized kernel (shaders/qlinear.wgsl) instead of the one-row
	// kernel (shaders/qgemv.wgsl); for benchmarks and tests of the former.
	NoQGEMV bool
	// HalfKVCache stores the KV caches of the llama cache ops
	// (sdpa_with_kv_cache, update_cache, llama.custom_sdpa) as packed
	// halves, two bytes an element (the reference runtime's
	// enable_f16_kv_cache): cache writes round to half, attention reads
	// unpack them and computes in float32 (attention_f16.go). A cache
	// that anything else reads, or that is a graph input or output,
	// stays float32.
	HalfKVCache bool
	// SkipKernels names linear-family table entries (linearKernels in
	// linear_family.go; LinearKernelNames), comma-separated, that the
	// kernel choice passes over, so that the next entry that fits serves
	// the call: "gpu/q4gemv,gpu/qcgemv" runs the 4-bit and int8 GEMVs
	// they replaced (gpu/qgemv), "gpu/tiled128" the 64×64 tiled matmul,
	// "gpu/skinny" the GEMV for 8 < M ≤ 16. For benchmarks that measure a
	// new kernel against the one before it in the same run, and for tests
	// of the kernels behind. A name that is no entry fails the load
	// (ErrConfig).
	SkipKernels string
}

// ErrConfig classifies a Config whose choices name something that does
// not exist (Config.SkipKernels).
var ErrConfig = errors.New("ops: bad kernel configuration")

// skipped returns the entries of c.SkipKernels.
func (c Config) skipped() []string {
	var out []string
	for _, s := range strings.Split(c.SkipKernels, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// skipsKernel reports whether c.SkipKernels names table entry name.
func (c Config) skipsKernel(name string) bool {
	if c.SkipKernels == "" {
		return false
	}
	for _, s := range c.skipped() {
		if s == name {
			return true
		}
	}
	return false
}
