// Package ops holds the operator implementations, one op family per file,
// each registered in init under the exact OperatorCall.name it implements
// (for example "aten.add.Tensor"). An op reads its arguments through the
// checked accessors of Builder and records WGSL compute dispatches; it never
// touches the flatbuffer or the GPU binding directly.
//
// Every op file opens with the argument layout it reads. Every op has an
// independent plain-Go reference in package ops/reference, and the
// conformance suite in ops/opstest runs both on random inputs.
//
// # Fused ops
//
// Which ops record together is not decided here: package lower's passes
// decide it once, on the whole graph, and a fused op of its plan reaches
// the kernel registered for its kind (RegisterFused; fused.go): the
// elementwise chains (fuse.go), a linear with its epilogue
// (fuse_epilogue.go), rms_norm with the linears that read it
// (fuse_linear.go), the rope with its KV-cache attention and the rope
// tables read whole (fuse_rope.go). A kernel reads its members' arguments
// with the same checked accessors as the ops, checks what depends on the
// live shapes, and records what fits; FusableElementwise, TakesEpilogue,
// EpilogueActivations and Op.View tell the passes what the kernels take.
// An op sees the graph only through Builder: no op asks for a capability
// the builder may lack.
//
// # Kernels by device class
//
// A kernel's shape depends on the device: lavapipe (Mesa's llvmpipe, a CPU
// adapter) runs each storage load as a loop over 8 lanes and turns
// barriers into coroutine switches, so its kernels give each invocation
// many output columns and no workgroup memory; a GPU wants the opposite,
// 32 or more lanes along K loading neighbouring 16-byte words, a few
// output rows per workgroup, and workgroup-memory reductions and tiles.
// The graph describes its device to every op (DeviceProfile: the adapter's
// class, vendor, name, limits, through Builder.DeviceProfile) and the
// load's choices (Builder.Config); Resolve turns them into a kernel Family:
// Config.Family when set (FamilyCPU, FamilyGPU: the CLI's --kernels), else
// FamilyCPU for a CPU adapter and FamilyGPU for a GPU.
//
// Kernel choice is data: the linear family (aten.linear, mm, bmm, addmm,
// matmul, FLOAT16 weights as packed halves, linear_q4gsw,
// linear_dq8ca_q4gsw, linear_qcs4w, _weight_int8pack_mm,
// linear_weight_int4 and the q8ta linears; LinearFamilyOps) records
// through one table (linearKernels in linear_family.go) whose entries say
// which family and calls they fit, which weight packing they read and how
// they record; the first entry of the load's family that fits a call
// records it. The packings a weight needs are asked of the table too,
// at record time (linearPacks) and, for the graph's analysis, at load
// (Op.LoadPack, LoadPackFor). The entries today:
//
//	cpu/gemv-half     FLOAT16 weights, packed halves, any M (gemv_f16.wgsl)
//	gpu/gemv-half     the same, M ≤ 16 (gemv_gpu.wgsl)
//	gpu/tiled-half    the same, any M (matmul_gpu.wgsl)
//	cpu/gemv          float32 linear, one row, or ≤ 16 rows with N % 4 != 0 (gemv.wgsl)
//	cpu/tiled-packed  float32 linear, weight packed [K, N] (Config.PackLinear; matmul.wgsl)
//	cpu/tiled         every float32 call (matmul.wgsl)
//	gpu/skinny        float32 linear, 8 < M ≤ 16, K % 4 == 0 (gemv_skinny.wgsl)
//	gpu/gemv          float32 linear, M ≤ 16 (gemv_gpu.wgsl)
//	gpu/tiled128      float32, M > 64 a batch: 128×128 tiles, 8×8 an invocation (matmul_tiled128.wgsl)
//	gpu/tiled         every float32 call (matmul_gpu.wgsl)
//	gpu/q4gemv        q4gsw/dq8ca_q4gsw (K, g multiples of 8), M ≤ 8, scales packed per row (gemv_quant.wgsl)
//	gpu/qcgemv        qcs4w (K % 8 == 0) and int8 weights, M ≤ 8 (gemv_quant.wgsl)
//	cpu/qgemv         one-row q4gsw/dq8ca_q4gsw, K and g multiples of 32 (qgemv.wgsl)
//	gpu/qgemv         q4gsw/dq8ca_q4gsw (K, g multiples of 32) and int8 weights, M ≤ 16 (gemv_gpu.wgsl)
//	gpu/qtiled        every other weight-quantized call, codes dequantized into the tile (matmul_gpu.wgsl)
//	cpu/qlinear       every other weight-quantized call (qlinear.wgsl)
//	any/q8ta          the int8 × int8 linears (q8ta_linear.wgsl)
//
// Config.Matmul, NoQGEMV and NoHalfWeights override the choice in both
// families (PackLinear only concerns the cpu family's tiled kernel);
// Config.SkipKernels passes over entries by name, so that a kernel that
// replaced another (gpu/q4gemv, gpu/qcgemv, gpu/tiled128, gpu/skinny) can
// be measured against it in one run. Each
// kernel's comment gives the measurements that chose its shape and the
// adapter they were taken on; the GPU kernels' shapes come from published
// designs and their H100 measurements are owed (linear_gpu.go). Every
// other op records the same kernels in both families. The conformance
// suite runs every case under the cpu family and the linear-family cases
// under the gpu family, on whatever adapter it finds (all cases under both
// in the long sweeps).
package ops
