package shaders

import (
	"strings"
	"testing"
)

// TestParse parses every kernel with the shared templates.
func TestParse(t *testing.T) {
	for _, f := range Files() {
		if _, err := parse(f); err != nil {
			t.Error(err)
		}
	}
}

// TestUnaryFormulaUnknownOp: an op with no formula in
// unary_formulas.tmpl fails the render instead of yielding a kernel that
// only the device would reject.
func TestUnaryFormulaUnknownOp(t *testing.T) {
	// The fields of ops.unaryVariant that unary.wgsl reads.
	type variant struct {
		Op, X, Y, S, T string
		W              int
		XB, YB, Pow    string
		WG             int
	}
	for _, c := range []struct {
		file string
		data any
	}{
		{"unary.wgsl", variant{Op: "softsign", X: "f32", Y: "f32", S: "f32", T: "f32", W: 1, XB: "f32", YB: "f32", WG: 64}},
		{"gemv.wgsl", struct {
			Vec4, Bias, Gate bool
			Act, Res         string
			Rows, Cols       []int
			WG               int
		}{Act: "softsign", Rows: []int{0}, Cols: []int{0}, WG: 8}},
	} {
		_, err := Render(c.file, c.data, "main", Layout(1, 1, true), 64)
		if err == nil || !strings.Contains(err.Error(), `no formula for op "softsign"`) {
			t.Errorf("%s: err %v, want no formula for op \"softsign\"", c.file, err)
		}
	}
}
