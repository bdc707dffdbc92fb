package numguard

import (
	"strings"
	"testing"
)

// guardPrelude declares what the snippets use: bindings, a struct, a
// uniform, a const and a user function.
const guardPrelude = `
struct Params { n: u32, s: f32, v: vec4<f32>, k: i32, }
struct State { v: f32, i: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> ix: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
const third = 1.0 / 3.0;
const L: u32 = 4u;
var<private> table: array<u32, 3> = array<u32, 3>(1u, 2u, 3u);
fn half(v: f32) -> f32 { return v * 0.5; }
fn idx(i: u32) -> u32 { return i >> 1u; }
`

// TestGuardFindings: each snippet (a function body) has the findings
// listed (op and expression), or none: integer and index arithmetic,
// constants and the helpers' calls pass; float min/max/clamp/saturate,
// float / and % (operators and compound assignments) and sin/cos/tan fail,
// however their operands are typed (bindings, struct fields, swizzles,
// lets, vars, function returns, constructors, builtins).
func TestGuardFindings(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       []string // "op: expr"
	}{
		{"int division", `let a = ix[0] / params.n; let b = i32(a) % params.k; let c = a / 4u; let d = 7 / 2;`, nil},
		{"int min max clamp", `let a = min(ix[0], params.n - 1u); let b = max(params.k, 0); let c = clamp(params.k, 0, 9);`, nil},
		{"index arithmetic", `let i = table[idx(ix[1]) % 3u] / L;`, nil},
		{"constant division", `let a = x[0] * third; let b = 1.0 / 3.0;`, nil},
		{"float division of data", `let a = x[0] / params.s;`, []string{"/: x[0] / params.s"}},
		{"float by literal", `let a = x[0]; let b = a / 2.0;`, []string{"/: a / 2.0"}},
		{"literal by float", `let r = 1.0 / sqrt(x[1]);`, []string{"/: 1.0 / sqrt(x[1])"}},
		{"vec4 division", `let a = q[0] / params.v.x;`, []string{"/: q[0] / params.v.x"}},
		{"swizzle", `let a = q[0].xy % vec2<f32>(2.0);`, []string{"%: q[0].xy % vec2<f32>(2.0)"}},
		{"compound", `var a = x[0]; a /= 3.0; var n = ix[0]; n /= 3u;`, []string{"/: a /= 3.0"}},
		{"struct field", `var s = State(x[0], 0u); let a = s.v / 2.0;`, []string{"/: s.v / 2.0"}},
		{"function return", `let a = half(x[0]) / x[1];`, []string{"/: half(x[0]) / x[1]"}},
		{"inferred var", `var a = 0.0; for (var i = 0u; i < 4u; i++) { a += x[i]; } let m = a / f32(params.n);`, []string{"/: a / f32(params.n)"}},
		{"float max", `let a = max(x[0], 0.0);`, []string{"max: max(x[0], 0.0)"}},
		{"float min vec4", `let a = min(q[0], vec4<f32>(1.0));`, []string{"min: min(q[0], vec4<f32>(1.0))"}},
		{"float clamp", `let a = clamp(x[0], -1.0, 1.0);`, []string{"clamp: clamp(x[0], -1.0, 1.0)"}},
		{"saturate", `let a = saturate(x[0]);`, []string{"saturate: saturate(x[0])"}},
		{"nested", `let a = min(max(x[0], 0.0), 6.0);`, []string{"min: min(max(x[0], 0.0), 6.0)", "max: max(x[0], 0.0)"}},
		{"trig", `let a = sin(x[0]) + cos(x[1]) * tan(x[2]);`, []string{"sin: sin(x[0])", "cos: cos(x[1])", "tan: tan(x[2])"}},
		{"bitcast", `let a = bitcast<f32>(ix[0]) / 2.0; let b = bitcast<u32>(x[0]) / 2u;`, []string{"/: bitcast<f32>(ix[0]) / 2.0"}},
		{"select", `let a = select(x[0], 0.0, x[0] < 0.0) / 2.0;`, []string{"/: select(x[0], 0.0, x[0] < 0.0) / 2.0"}},
		{"untyped", `let a = mystery(ix[0]) / 2u;`, []string{"/: mystery(ix[0]) / 2u"}},
		{"loop and continuing", `var i = 0u; loop { let f = x[i] / 3.0; continuing { i += 1u; break if i > 3u; } }`, []string{"/: x[i] / 3.0"}},
		{"switch", `switch params.k { case 0, 1: { let a = x[0] / 2.0; } default: {} }`, []string{"/: x[0] / 2.0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := New(nil, nil)
			src := guardPrelude + "\nfn main() {\n  " + c.body + "\n}\n"
			fs, err := g.Check("snippet.wgsl{}", src)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				if f.Func == "main" {
					got = append(got, f.Op+": "+f.Expr)
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("findings\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
			}
		})
	}
}

// TestGuardHelpersAndAllow: a helper is exempt only with the text the
// templates render (a changed body, or a kernel's own function of that
// name, is a finding); an allow-list entry covers its expression in its
// function and file only, and Unused reports the entries never needed.
func TestGuardHelpersAndAllow(t *testing.T) {
	helper := "fn fmax(a: f32, b: f32) -> f32 {\n  return max(a, b);\n}"
	g := New(map[string][]string{"fmax": {helper}}, []Allow{
		{File: "k.wgsl", Func: "main", Expr: "x[0] / params.s", Reason: "test"},
		{File: "other.wgsl", Func: "main", Expr: "x[1] / params.s", Reason: "test"},
	})
	src := guardPrelude + helper + `
fn main() {
  let a = fmax(x[0], x[1]) + x[0] / params.s + x[1] / params.s;
}`
	fs, err := g.Check("k.wgsl{A:1}", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Expr != "x[1] / params.s" {
		t.Errorf("findings %v, want only x[1] / params.s (the other file's entry)", fs)
	}
	if u := g.Unused(); len(u) != 1 || u[0].File != "other.wgsl" {
		t.Errorf("unused %v, want the other.wgsl entry", u)
	}
	changed := strings.Replace(src, "return max(a, b);", "return max(b, a);", 1)
	fs, err = g.Check("k.wgsl{A:1}", changed)
	if err != nil {
		t.Fatal(err)
	}
	var helperFinding bool
	for _, f := range fs {
		helperFinding = helperFinding || (f.Op == "helper" && f.Func == "fmax")
	}
	if !helperFinding {
		t.Errorf("a changed fmax body passed: %v", fs)
	}
}

// TestGuardParseErrors: text the checker does not understand is an error,
// not a silent pass.
func TestGuardParseErrors(t *testing.T) {
	for _, src := range []string{
		"fn main() { let a = ; }",
		"fn main() { let a = x[0] / ; }",
		"fn main( {",
		"struct S { a: f32 ",
		"fn main() { /* unterminated }",
		"fn main() { let a = 1 $ 2; }",
	} {
		if _, err := New(nil, nil).Check("bad.wgsl", src); err == nil {
			t.Errorf("%q: no error", src)
		}
	}
}

// TestFileOf names the kernel file of a kernel name.
func TestFileOf(t *testing.T) {
	for in, want := range map[string]string{
		"softmax.wgsl{Log:false}": "softmax.wgsl",
		"unary.wgsl":              "unary.wgsl",
		"inline":                  "inline",
	} {
		if got := FileOf(in); got != want {
			t.Errorf("FileOf(%q) = %q, want %q", in, got, want)
		}
	}
}
