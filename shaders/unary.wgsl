// unary.wgsl: elementwise y = op(x) for the aten unary ops and for dtype
// conversion (Op "copy": _to_copy). ops/unary.go picks the variant
// (unaryVariant):
//
//   - Op: the formula. copy, sin/cos/tan, bitwise_not, logical_not and pow
//     are written here (only this kernel runs them); every other op's is
//     unary_formulas.tmpl's, which the fused and matmul kernels render too.
//   - X, Y: element types of x and y (f32, i32, bool, u8, i8). 1-byte
//     tensors are packed four to a u32 word, little-endian.
//   - S: the scalar type the formula computes in (f32 or i32); T is S or
//     vec4<S>. load converts X to T, store converts T to Y (float to int
//     truncates toward zero, to bool is != 0, to u8/i8 keeps the low byte).
//   - W: elements per invocation, 1 or 4. With W = 4, a packed side is one
//     word per invocation (so no two invocations share a word), and a
//     4-byte side is a vec4 when the count is a multiple of 4, else four
//     guarded scalars.
@group(0) @binding(0) var<storage, read> x: array<{{.XB}}>;
@group(0) @binding(1) var<storage, read_write> y: array<{{.YB}}>;

// Go twin: unaryParams in ops/unary.go.
struct Params {
  n: u32,      // invocations with work
  numel: u32,  // elements
  ai: i32,     // integer scalars: bounds, exponent
  bi: i32,
  af: f32,     // float scalars: bounds, slope, lambd, exponent
  bf: f32,
  nan: f32,    // quiet NaN and +Inf (WGSL has no literal for them)
  inf: f32,
}
@group(0) @binding(2) var<uniform> params: Params;

fn load(i: u32) -> {{.T}} {
{{- if eq .XB "u32"}}
  let b = (vec4<u32>(x[i]) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u);
{{- if eq .X "i8"}}
  return {{.T}}(bitcast<vec4<i32>>(b << vec4<u32>(24u)) >> vec4<u32>(24u));
{{- else if eq .X "bool"}}
  return {{.T}}(select(vec4<i32>(0), vec4<i32>(1), b != vec4<u32>(0u)));
{{- else}}
  return {{.T}}(vec4<i32>(b));
{{- end}}
{{- else if or (eq .W 1) (ne .XB .X)}}
  return {{.T}}(x[i]);
{{- else}}
  var v = vec4<{{.X}}>();
  for (var k = 0u; k < 4u; k++) {
    let j = 4u * i + k;
    if (j < params.numel) { v[k] = x[j]; }
  }
  return {{.T}}(v);
{{- end}}
}

{{- $U := "u32"}}{{if eq .W 4}}{{$U = "vec4<u32>"}}{{end}}
fn store(i: u32, r: {{.T}}) {
{{- if eq .YB "u32"}}
{{- if eq .Y "bool"}}
{{- if eq .S "f32"}}
  // Zero tested on the bits: NaN converts to true (naga's != is an
  // ordered compare), and so does a subnormal (an adapter that flushes
  // would compare it equal to 0).
  let b = select(vec4<u32>(1u), vec4<u32>(0u), (bitcast<{{$U}}>(r) & {{$U}}(0x7fffffffu)) == {{$U}}(0u));
{{- else}}
  let b = select(vec4<u32>(1u), vec4<u32>(0u), r == {{.T}}());
{{- end}}
{{- else}}
  let b = bitcast<vec4<u32>>(vec4<i32>(r)) & vec4<u32>(255u);
{{- end}}
  y[i] = b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
{{- else if or (eq .W 1) (ne .YB .Y)}}
  y[i] = {{.YB}}(r);
{{- else}}
  let v = vec4<{{.Y}}>(r);
  for (var k = 0u; k < 4u; k++) {
    let j = 4u * i + k;
    if (j < params.numel) { y[j] = v[k]; }
  }
{{- end}}
}

{{template "unary_helpers" (args "S" .S "T" .T)}}
{{- $s := ""}}{{if eq .W 4}}{{$s = "4"}}{{end}}
{{- if or (eq .Op "sin") (eq .Op "cos") (eq .Op "tan")}}

{{template "num_trig"}}
{{- else if and (eq .Op "pow") (eq .S "f32")}}

{{template "num_div"}}
{{- end}}

fn apply(v: {{.T}}) -> {{.T}} {
{{- if eq .Op "copy"}}
  return v;
{{- else if or (eq .Op "sin") (eq .Op "cos") (eq .Op "tan")}}
  // Range-reduced (common.tmpl "num_trig"): WGSL's own sin and cos are
  // bounded only on [-pi, pi].
{{- if eq .W 4}}
  return vec4<f32>({{.Op}}_(v.x), {{.Op}}_(v.y), {{.Op}}_(v.z), {{.Op}}_(v.w));
{{- else}}
  return {{.Op}}_(v);
{{- end}}
{{- else if eq .Op "bitwise_not"}}
{{- if eq .X "bool"}}
  return v ^ {{.T}}(1);
{{- else}}
  return ~v;
{{- end}}
{{- else if and (eq .Op "logical_not") (eq .S "f32")}}
  // On the bits, as store's: a subnormal is not 0 on any adapter.
  return select({{.T}}(0), {{.T}}(1), (bitcast<{{$U}}>(v) & {{$U}}(0x7fffffffu)) == {{$U}}(0u));
{{- else if eq .Op "logical_not"}}
  return select({{.T}}(0), {{.T}}(1), v == {{.T}}(0));
{{- else if eq .Op "pow"}}
{{- if eq .Pow "int"}}
  // Binary powering; a negative exponent powers 1/x (torch: x^-1 is
  // 1/x, x^2 is x*x, x^3 is x*x*x, all reproduced exactly, 1/x correctly
  // rounded by div_rn).
  var b = v;
  var k = params.ai;
{{- if eq .S "f32"}}
  if (k < 0) {
    b = div_rn{{$s}}({{.T}}(1.0), v);
    k = -k;
  }
{{- end}}
  var e = u32(k);
  var r = {{.T}}(1);
  loop {
    if ((e & 1u) != 0u) { r = r * b; }
    e = e >> 1u;
    if (e == 0u) { break; }
    b = b * b;
  }
  return r;
{{- else if eq .Pow "sqrt"}}
  return sqrt(v);
{{- else if eq .Pow "rsqrt"}}
  return 1.0 / sqrt(v);
{{- else if eq .Pow "inf"}}
  // |x| = 1 gives 1; else +Inf exponent: |x| > 1 → Inf, |x| < 1 → 0,
  // and the reverse for -Inf.
  let a = abs(v);
  let big = (a > {{.T}}(1.0)) == {{if eq .W 4}}vec4<bool>(params.af > 0.0){{else}}(params.af > 0.0){{end}};
  let r = select(select({{.T}}(), {{.T}}(params.inf), big), {{.T}}(1.0), a == {{.T}}(1.0));
  return select(r, v, is_nan{{$s}}(v));
{{- else if eq .Pow "nan"}}
  return select({{.T}}(params.nan), {{.T}}(1.0), v == {{.T}}(1.0));
{{- else}}
  // x^e = 2^(e*log2|x|); a finite negative x with a fractional e is NaN
  // (C's pow(-Inf, e) is Inf or 0).
  // llvmpipe's exp2 turns NaN into 0, so NaN is passed on by hand, and
  // ±0 (whose log2 is -Inf, which an adapter need not honour) gives C's
  // +0 for a positive exponent and +Inf for a negative one, on the bits.
  let z = (bitcast<{{$U}}>(v) & {{$U}}(0x7fffffffu)) == {{$U}}(0u);
  var r = select(exp2(params.af * log2(abs(v))), select({{.T}}(), {{.T}}(params.inf), params.af < 0.0), z);
  r = select(r, v, is_nan{{$s}}(v));
{{- if eq .Pow "frac"}}
  return select(r, {{.T}}(params.nan), (v < {{.T}}()) & (v > {{.T}}(-params.inf)));
{{- else}}
  return r;
{{- end}}
{{- end}}
{{- else}}
  // The formula shared with the fused kernels (unary_formulas.tmpl).
{{- $a := "params.af"}}{{$b := "params.bf"}}
{{- if eq .S "i32"}}{{$a = "params.ai"}}{{$b = "params.bi"}}{{end}}
  return {{template "unary_formula" (args "Op" .Op "S" .S "T" .T "A" $a "B" $b)}};
{{- end}}
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n) { return; }
  store(i, apply(load(i)));
}
