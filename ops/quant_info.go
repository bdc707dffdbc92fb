package ops

// QuantWeight says where a weight-quantized op keeps its weight and what
// the weight's bytes mean: the argument indices of the packed weight, its
// scales, its per-group sums and its group size (-1 where the op has
// none), and a short description of the format. Tools (inspect,
// MemoryStats) read it to report a quantized weight's real device cost
// (a 4-bit weight is half a byte plus its scales).
type QuantWeight struct {
	// Format names the scheme: "q4gsw" (4-bit, symmetric groups), "8da4w"
	// (q4gsw weights with int8 dynamic activations), "qcs4w" (4-bit,
	// symmetric per channel), "q8csw" (8-bit, symmetric per channel),
	// "q4asym" (4-bit asymmetric groups with zero points).
	Format string
	// Bits is the bits per weight in the packed bytes.
	Bits int
	// Layout says how the weight's bytes are laid out.
	Layout string
	// Weight, Scales, Sums and Group are argument indices, -1 when absent.
	// Scales of "q4asym" hold the scale and zero point pairs.
	Weight, Scales, Sums, Group int
}

// quantWeights maps each weight-quantized op to its QuantWeight. Keep it
// in step with the argument layouts in the ops' doc comments.
var quantWeights = map[string]QuantWeight{
	"et_vk.linear_q4gsw.default": {Format: "q4gsw", Bits: 4, Layout: "uint8 [N, K/2], even k in the low nibble, code-8; scales [K/g, N]",
		Weight: 1, Scales: 2, Sums: -1, Group: 3},
	"et_vk.linear_dq8ca_q4gsw.default": {Format: "8da4w", Bits: 4, Layout: "uint8 [N, K/2], even k in the low nibble, code-8; scales [K/g, N]; int32 sums [K/g, N]",
		Weight: 3, Scales: 5, Sums: 4, Group: 6},
	"et_vk.embedding_q4gsw.default": {Format: "q4gsw", Bits: 4, Layout: "uint8 [V, D/2], nibble order from is_linear_weight; scales [V, D/g] or [V]",
		Weight: 0, Scales: 1, Sums: -1, Group: 2},
	"et_vk.linear_qcs4w.default": {Format: "qcs4w", Bits: 4, Layout: "uint8 [N, K/2], even k in the high nibble, code-8; scales [N]",
		Weight: 1, Scales: 2, Sums: -1, Group: -1},
	"aten._weight_int8pack_mm.default": {Format: "q8csw", Bits: 8, Layout: "int8 [N, K]; scales [N]",
		Weight: 1, Scales: 2, Sums: -1, Group: -1},
	"et_vk.linear_weight_int4.default": {Format: "q4asym", Bits: 4, Layout: "uint8 [N, K/2], even k in the high nibble; scale and zero [K/g, N, 2]",
		Weight: 1, Scales: 3, Sums: -1, Group: 2},
	// Statically quantized (PT2E) ops: int8 weights per output channel
	// with their row sums (q8ta_linear.go, q8ta_conv.go).
	"et_vk.linear_q8ta_q8csw.default":      q8csw("int8 [N, K]; scales and int32 sums [N]"),
	"et_vk.q8ta_linear.default":            q8csw("int8 [N, K]; scales and int32 sums [N]"),
	"et_vk.q8ta_linear_gemv.default":       q8csw("int8 [N, K]; scales and int32 sums [N]"),
	"et_vk.q8ta_conv2d.default":            q8csw("int8 [OC, KH·KW·IC/groups]; scales and int32 sums [OC]"),
	"et_vk.q8ta_conv2d_pw.default":         q8csw("int8 [OC, IC]; scales and int32 sums [OC]"),
	"et_vk.q8ta_conv2d_dw.default":         q8csw("int8 [KH, KW, C]; scales and int32 sums [C]"),
	"et_vk.q8ta_conv2d_transposed.default": q8csw("int8 [OC, KH·KW·IC/groups]; scales and int32 sums [OC]"),
}

// q8csw is the QuantWeight of the static int8 ops, whose arguments start
// [x, input_scale, input_zero_point, weights, weight_sums, weight_scales].
func q8csw(layout string) QuantWeight {
	return QuantWeight{Format: "q8csw", Bits: 8, Layout: layout, Weight: 3, Scales: 5, Sums: 4, Group: -1}
}

// QuantWeightOf returns the QuantWeight of the op named name, and whether
// it is a weight-quantized op.
func QuantWeightOf(name string) (QuantWeight, bool) {
	q, ok := quantWeights[name]
	return q, ok
}
