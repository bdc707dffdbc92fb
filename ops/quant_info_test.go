package ops

import "testing"

// TestQuantWeightOf: every weight-quantized op named is registered, its
// argument indices are distinct and in range of its doc comment's list,
// and other ops are not quantized.
func TestQuantWeightOf(t *testing.T) {
	nargs := map[string]int{ // from the ops' documented argument layouts
		"et_vk.linear_q4gsw.default":           6,
		"et_vk.linear_dq8ca_q4gsw.default":     9,
		"et_vk.embedding_q4gsw.default":        6,
		"et_vk.linear_qcs4w.default":           4,
		"aten._weight_int8pack_mm.default":     4,
		"et_vk.linear_weight_int4.default":     6,
		"et_vk.linear_q8ta_q8csw.default":      8,
		"et_vk.q8ta_linear.default":            11,
		"et_vk.q8ta_linear_gemv.default":       11,
		"et_vk.q8ta_conv2d.default":            17,
		"et_vk.q8ta_conv2d_pw.default":         17,
		"et_vk.q8ta_conv2d_dw.default":         17,
		"et_vk.q8ta_conv2d_transposed.default": 18,
	}
	if len(nargs) != len(quantWeights) {
		t.Fatalf("%d quantized ops in the table, %d expected", len(quantWeights), len(nargs))
	}
	for name, n := range nargs {
		q, ok := QuantWeightOf(name)
		if !ok {
			t.Fatalf("%s: not in the table", name)
		}
		if _, ok := Lookup(name); !ok {
			t.Errorf("%s: not registered", name)
		}
		seen := map[int]bool{}
		for _, i := range []int{q.Weight, q.Scales, q.Sums, q.Group} {
			if i == -1 {
				continue
			}
			if i < 0 || i >= n-1 || seen[i] {
				t.Errorf("%s: argument index %d out of [0, %d) or repeated", name, i, n-1)
			}
			seen[i] = true
		}
		if q.Weight < 0 || q.Scales < 0 || (q.Bits != 4 && q.Bits != 8) || q.Format == "" || q.Layout == "" {
			t.Errorf("%s: incomplete entry %+v", name, q)
		}
	}
	if _, ok := QuantWeightOf("aten.linear.default"); ok {
		t.Error("aten.linear is reported quantized")
	}
}
