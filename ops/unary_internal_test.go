package ops

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// unaryHelpers returns the functions of unary_formulas.tmpl's
// "unary_helpers" in a kernel of one element (vec4 false) or four per
// invocation: common.tmpl's "num" helpers, whose names end in 4 for vec4s,
// and the transcendental forms.
func unaryHelpers(vec4 bool) []string {
	sfx := ""
	if vec4 {
		sfx = "4"
	}
	var out []string
	for _, h := range []string{"is_nan", "fkey", "flt", "fle", "feq", "ftotal", "fmax", "fmin", "fclamp", "frelu", "fabs", "fneg"} {
		out = append(out, h+sfx)
	}
	return append(out, "tanh_", "sigmoid_", "erfc_", "gelu_", "gelu_tanh_")
}

// unaryScalarArgs adds op's scalar args to b: the bounds, slope, lambd or
// approximation the formula reads (approx for gelu).
func unaryScalarArgs(b *serialization.Builder, op, approx string) []int32 {
	switch op {
	case "gelu":
		return []int32{b.String(approx)}
	case "hardtanh", "clamp":
		return []int32{b.Double(-1.5), b.Double(2.25)}
	case "hardshrink", "leaky_relu":
		return []int32{b.Double(0.375)}
	}
	return nil
}

// wgslFn returns the text of WGSL function name in src, or "".
func wgslFn(src, name string) string {
	i := strings.Index(src, "\nfn "+name+"(")
	if i < 0 {
		return ""
	}
	j := strings.Index(src[i:], "\n}\n")
	if j < 0 {
		return ""
	}
	return src[i+1 : i+j+2]
}

// unaryKernelFormula returns the expression unary.wgsl's apply returns,
// with the op's scalars as A and B.
func unaryKernelFormula(t *testing.T, src string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  return (.*);$`).FindAllStringSubmatch(wgslFn(src, "apply"), -1)
	if len(m) != 1 {
		t.Fatalf("apply has %d return statements, want 1:\n%s", len(m), wgslFn(src, "apply"))
	}
	return strings.NewReplacer("params.af", "A", "params.bf", "B").Replace(m[0][1])
}

// fusedStepFormula returns the expression fused.wgsl assigns to v in step
// k (op), with the step's scalars as A and B.
func fusedStepFormula(t *testing.T, src string, k int, op string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  v = (.*); // (\S+)$`).FindAllStringSubmatch(src, -1)
	if len(m) <= k || m[k][2] != op {
		t.Fatalf("step %d of the fused kernel is not %s:\n%s", k, op, src)
	}
	p := fmt.Sprintf("params.sc[%d].", k)
	return strings.NewReplacer(p+"x", "A", p+"y", "B").Replace(m[k][1])
}

// TestUnaryFormulasAgree renders every unary op a chain may fuse through
// the unfused kernel (unary.wgsl) and through fused chains (fused.wgsl) in
// which it is the first step (the chain's head) and a later step, for one
// and four elements per invocation, and requires the same formula (up to
// where each kernel keeps the op's scalars) and the same helper functions.
// The matmul and GEMV epilogue activations must render the formula of the
// op of the same name too. (ops/opstest's TestFuseUnaryMatchesUnfused runs
// them on the device.)
func TestUnaryFormulasAgree(t *testing.T) {
	f := serialization.Float32
	type opCase struct{ name, op, approx string }
	var cases []opCase
	for name, op := range fuseUnary {
		if op == "gelu" {
			cases = append(cases, opCase{name, op, "none"}, opCase{name, op, "tanh"})
			continue
		}
		cases = append(cases, opCase{name, op, ""})
	}
	slices.SortFunc(cases, func(a, b opCase) int { return strings.Compare(a.op+a.approx, b.op+b.approx) })
	// formulas[formula][n] is the unfused kernel of n elements.
	formulas := map[string]map[uint32]unaryRendered{}
	for _, c := range cases {
		for _, n := range []uint32{7, 8} {
			t.Run(fmt.Sprintf("%s/n=%d", strings.TrimSuffix(c.op+"/"+c.approx, "/"), n), func(t *testing.T) {
				// The op alone: a recorder does not fuse.
				b := serialization.NewBuilder()
				x, y := b.Tensor(f, []uint32{n}, -1), b.Tensor(f, []uint32{n}, -1)
				args := append(append([]int32{x}, unaryScalarArgs(b, c.op, c.approx)...), y)
				fn, ok := Lookup(c.name)
				if !ok {
					t.Fatalf("%s is not registered", c.name)
				}
				r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535}
				if err := fn(r, args); err != nil {
					t.Fatal(err)
				}
				unfused := r.dispatches[0].k.Source
				want := unaryKernelFormula(t, unfused)
				formula := c.op
				if c.approx == "tanh" {
					formula = "gelu_tanh"
				}
				if formulas[formula] == nil {
					formulas[formula] = map[uint32]unaryRendered{}
				}
				formulas[formula][n] = unaryRendered{want, unfused}

				// The op as a chain's head (neg follows) and as its
				// second step (after neg).
				for k, order := range []string{"head", "joined"} {
					b := serialization.NewBuilder()
					x, h, y := b.Tensor(f, []uint32{n}, -1), b.Tensor(f, []uint32{n}, -1), b.Tensor(f, []uint32{n}, -1)
					sc := unaryScalarArgs(b, c.op, c.approx)
					if order == "head" {
						b.Op(c.name, append(append([]int32{x}, sc...), h)...)
						b.Op("aten.neg.default", h, y)
					} else {
						b.Op("aten.neg.default", x, h)
						b.Op(c.name, append(append([]int32{h}, sc...), y)...)
					}
					fr := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535}
					steps, err := fusedElementwise(fr, chainGroup(b.Graph()))
					if err != nil {
						t.Fatal(err)
					}
					if len(fr.dispatches) != 1 || !strings.HasPrefix(fr.dispatches[0].k.Name, "fused.wgsl") || steps != 2 {
						t.Fatalf("%s: %d dispatches for %d ops: not one fused chain", order, len(fr.dispatches), steps)
					}
					fused := fr.dispatches[0].k.Source
					if got := fusedStepFormula(t, fused, k, formula); got != want {
						t.Errorf("%s: fused formula\n\t%s\nunfused\n\t%s", order, got, want)
					}
					for _, h := range unaryHelpers(n == 8) {
						if got, want := wgslFn(fused, h), wgslFn(unfused, h); got == "" || got != want {
							t.Errorf("%s: fused kernel's %s\n%s\nunfused kernel's\n%s", order, h, got, want)
						}
					}
				}
			})
		}
	}

	// The epilogue activations, in the vec4 (n = 8) and scalar (n = 7)
	// matmul kernels and the GEMV kernel (scalar).
	for _, act := range []string{"relu", "clamp", "sigmoid", "gelu", "gelu_tanh"} {
		for _, vec4 := range []bool{false, true} {
			sh := matmulShader{Vec4: vec4, Rows: []int{0}, Cols: []int{0}, WGX: 16, WGY: 1, Act: act}
			k, err := shaders.Render("matmul.wgsl", sh, "main", shaders.Layout(2, 1, true), 16)
			if err != nil {
				t.Fatal(err)
			}
			n := uint32(7)
			if vec4 {
				n = 8
			}
			checkEpilogue(t, fmt.Sprintf("matmul Vec4=%v %s", vec4, act), k.Source, formulas[act][n], vec4)
		}
		sh := gemvShader{Act: act, Rows: []int{0}, Cols: []int{0}, WG: 8}
		k, err := shaders.Render("gemv.wgsl", sh, "main", shaders.Layout(2, 1, true), 8)
		if err != nil {
			t.Fatal(err)
		}
		checkEpilogue(t, "gemv "+act, k.Source, formulas[act][7], false)
	}
}

// unaryRendered is an unfused unary kernel's source and its formula.
type unaryRendered struct{ formula, src string }

// checkEpilogue compares a matmul kernel's act with the unfused unary
// kernel's formula and helpers (vec4: four elements per invocation).
func checkEpilogue(t *testing.T, name, src string, want unaryRendered, vec4 bool) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  return (.*);$`).FindStringSubmatch(wgslFn(src, "act"))
	if m == nil {
		t.Errorf("%s: no act:\n%s", name, src)
		return
	}
	if got := strings.NewReplacer("params.act_lo", "A", "params.act_hi", "B").Replace(m[1]); got != want.formula {
		t.Errorf("%s: epilogue formula\n\t%s\nunfused\n\t%s", name, got, want.formula)
	}
	for _, h := range unaryHelpers(vec4) {
		if got, w := wgslFn(src, h), wgslFn(want.src, h); got == "" || got != w {
			t.Errorf("%s: %s\n%s\nunfused kernel's\n%s", name, h, got, w)
		}
	}
}

// chainGroup is g's whole chain as one FusedElementwise group.
func chainGroup(g *serialization.Graph) *Group {
	grp := &Group{Kind: FusedElementwise}
	for i, op := range g.Chain {
		grp.Calls = append(grp.Calls, Call{Index: i, Name: op.Name, Args: op.Args})
	}
	return grp
}
