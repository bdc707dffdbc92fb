package numguard

// The reasons of the allow-list, one per kind of division that may stay
// bare: its result is compared by the conformance suite (ops/opstest) with
// a tolerance of 1e-5 relative or wider, against a float64 reference that
// computes the whole formula in another order, so the 2.5 ulp (3e-7
// relative) WGSL allows a division is far inside what the case already
// accepts, and no integer or rounding decision depends on it.
const (
	whyTranscendental = "a transcendental formula (exp-based, 1e-5 tolerance): its exp already differs from the reference by more than a division's 2.5 ulp"
	whyRsqrt          = "rsqrt = 1/sqrt: sqrt itself is not correctly rounded in WGSL, and the op is compared with the 1e-5 tolerance"
	whyHardsigmoid    = "hardswish/hardsigmoid divide by 6 in torch too, after float32 steps the reference takes in float64; compared with the 1e-5 tolerance"
	whyMean           = "a mean or variance over a float32 sum accumulated in another order than the reference's; compared with the 1e-5 tolerance"
	whyNorm           = "layer/group/rms/batch norm statistics (mean, variance, 1/sqrt(var+eps)) from float32 sums; compared with a tolerance"
	whySoftmax        = "softmax normalisation by a float32 sum of exps; compared with a tolerance"
	whyAvgPool        = "avg_pool2d divides a float32 window sum by its count; compared with the 1e-5 tolerance"
)

// Allowed is the numerics guard's allow-list for our kernels: the float
// divisions that stay bare, each with its reason. Everything else that
// divides data (div, div_scalar, floor/trunc division, pow's 1/x, the
// quantizers' x/scale, choose_qparams) goes through div_rn or round_div,
// and every float min/max/clamp through the helpers. An entry no kernel
// of the conformance cases needs fails TestNumericsGuard, so the list
// cannot go stale.
var Allowed = []Allow{
	// unary_formulas.tmpl's helpers, rendered into the unary, fused,
	// matmul and GEMV kernels.
	{Func: "tanh_", Expr: "(1.0 - e) / (1.0 + e)", Reason: whyTranscendental},
	{Func: "sigmoid_", Expr: "select(f32(1.0), e, v < f32()) / (1.0 + e)", Reason: whyTranscendental},
	{Func: "sigmoid_", Expr: "select(vec4<f32>(1.0), e, v < vec4<f32>()) / (1.0 + e)", Reason: whyTranscendental},
	{Func: "erfc_", Expr: "1.0 / (1.0 + 0.5 * z)", Reason: whyTranscendental},
	{Func: "gelu_tanh_", Expr: "v / (1.0 + exp(-2.0 * u))", Reason: whyTranscendental},
	// unary_formulas.tmpl's formulas, in the unfused and fused kernels.
	{File: "unary.wgsl", Func: "apply", Expr: "1.0 / sqrt(v)", Reason: whyRsqrt},
	{File: "fused.wgsl", Func: "main", Expr: "1.0 / sqrt(v)", Reason: whyRsqrt},
	{File: "unary.wgsl", Func: "apply", Expr: "v * fclamp(v + 3.0, f32(0), f32(6)) / 6.0", Reason: whyHardsigmoid},
	{File: "unary.wgsl", Func: "apply", Expr: "v * fclamp4(v + 3.0, vec4<f32>(0), vec4<f32>(6)) / 6.0", Reason: whyHardsigmoid},
	{File: "unary.wgsl", Func: "apply", Expr: "fclamp(v + 3.0, f32(0), f32(6)) / 6.0", Reason: whyHardsigmoid},
	{File: "unary.wgsl", Func: "apply", Expr: "fclamp4(v + 3.0, vec4<f32>(0), vec4<f32>(6)) / 6.0", Reason: whyHardsigmoid},
	{File: "fused.wgsl", Func: "main", Expr: "v * fclamp4(v + 3.0, vec4<f32>(0), vec4<f32>(6)) / 6.0", Reason: whyHardsigmoid},
	{File: "fused.wgsl", Func: "main", Expr: "fclamp4(v + 3.0, vec4<f32>(0), vec4<f32>(6)) / 6.0", Reason: whyHardsigmoid},
	// reduce.wgsl: mean and var.
	{File: "reduce.wgsl", Func: "finish", Expr: "t.v / params.f0", Reason: whyMean},
	{File: "reduce.wgsl", Func: "main", Expr: "acc.v / f32(params.extent)", Reason: whyMean},
	{File: "reduce.wgsl", Func: "main", Expr: "dev / params.f0", Reason: whyMean},
	{File: "reduce.wgsl", Func: "main", Expr: "total.v / params.f0", Reason: whyMean},
	{File: "reduce.wgsl", Func: "main", Expr: "tree(acc, lid).v / f32(params.extent)", Reason: whyMean},
	// norm.wgsl.
	{File: "norm.wgsl", Func: "main", Expr: "1.0 / sqrt(rvar[c] + params.eps)", Reason: whyNorm},
	{File: "norm.wgsl", Func: "main", Expr: "1.0 / sqrt(rvar[i] + params.eps)", Reason: whyNorm},
	{File: "norm.wgsl", Func: "main", Expr: "1.0 / sqrt(ss / n + params.eps)", Reason: whyNorm},
	{File: "norm.wgsl", Func: "main", Expr: "1.0 / sqrt(tree_sum(ss, lid) / n + params.eps)", Reason: whyNorm},
	{File: "norm.wgsl", Func: "main", Expr: "s / n", Reason: whyNorm},
	{File: "norm.wgsl", Func: "main", Expr: "ss / n", Reason: whyNorm},
	{File: "norm.wgsl", Func: "main", Expr: "tree_sum(s, lid) / n", Reason: whyNorm},
	{File: "norm.wgsl", Func: "main", Expr: "tree_sum(ss, lid) / n", Reason: whyNorm},
	// gemv_fused.wgsl's rms_norm prologue (norm.wgsl's formula).
	{File: "gemv_fused.wgsl", Func: "main", Expr: "1.0 / sqrt(ssum / n + params.eps)", Reason: whyNorm},
	{File: "gemv_fused.wgsl", Func: "main", Expr: "ssum / n", Reason: whyNorm},
	// gemv_quant.wgsl's fused form: the same prologue.
	{File: "gemv_quant.wgsl", Func: "main", Expr: "1.0 / sqrt(ssum / n + params.eps)", Reason: whyNorm},
	{File: "gemv_quant.wgsl", Func: "main", Expr: "ssum / n", Reason: whyNorm},
	// softmax.wgsl and the attention kernel's softmax.
	{File: "softmax.wgsl", Func: "result", Expr: "exp(v - m) / s", Reason: whySoftmax},
	{File: "attention.wgsl", Func: "main", Expr: "r / sum", Reason: whySoftmax},
	// pool.wgsl: avg_pool2d.
	{File: "pool.wgsl", Func: "main", Expr: "acc / div", Reason: whyAvgPool},
}
