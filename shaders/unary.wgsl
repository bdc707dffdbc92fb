// unary.wgsl: elementwise y = op(x) for the aten unary ops and for dtype
// conversion (Op "copy": _to_copy). ops/unary.go picks the variant
// (unaryVariant):
//
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

fn store(i: u32, r: {{.T}}) {
{{- if eq .YB "u32"}}
{{- if eq .Y "bool"}}
  // !(r == 0), not r != 0: naga's != is an ordered compare, false for
  // NaN, but NaN converts to true.
  let b = select(vec4<u32>(1u), vec4<u32>(0u), r == {{.T}}());
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

// clamp_keep_nan clamps v to [lo, hi] with selects, so NaN stays NaN
// (WGSL's min/max leave NaN unspecified); lo > hi gives hi, as torch.
fn clamp_keep_nan(v: {{.T}}, lo: {{.T}}, hi: {{.T}}) -> {{.T}} {
  let a = select(v, lo, v < lo);
  return select(a, hi, a > hi);
}

{{- if eq .S "f32"}}

fn is_nan(v: {{.T}}) -> {{if eq .W 4}}vec4<bool>{{else}}bool{{end}} {
  return (bitcast<{{if eq .W 4}}vec4<u32>{{else}}u32{{end}}>(v) & {{if eq .W 4}}vec4<u32>{{else}}u32{{end}}(0x7fffffffu)) > {{if eq .W 4}}vec4<u32>{{else}}u32{{end}}(0x7f800000u);
}

// tanh_ is tanh without the overflow of (e^2x-1)/(e^2x+1): a polynomial
// (Cephes tanhf) below 0.625, else 1-2/(1+e^2|x|) from e = e^-2|x|.
fn tanh_(v: {{.T}}) -> {{.T}} {
  let a = abs(v);
  let z = v * v;
  let small = ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z
      + 1.33314422036e-1) * z - 3.33332819422e-1) * z * v + v;
  let e = exp(-2.0 * a);
  let t = (1.0 - e) / (1.0 + e);
  return select(select(t, -t, v < {{.T}}()), small, a < {{.T}}(0.625));
}

// sigmoid_: e = exp(-|v|) is in (0, 1], so neither branch overflows:
// sigmoid(v) = 1/(1+e) for v >= 0 and e/(1+e) for v < 0.
fn sigmoid_(v: {{.T}}) -> {{.T}} {
  let e = exp(-abs(v));
  return select({{.T}}(1.0), e, v < {{.T}}()) / (1.0 + e);
}

// erfc_ is erfc(z) for z >= 0 with relative error below 1.2e-7
// (Numerical Recipes' erfcc Chebyshev fit), so the tail stays accurate.
fn erfc_(z: {{.T}}) -> {{.T}} {
  let t = 1.0 / (1.0 + 0.5 * z);
  let p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
      + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * exp(-z * z + p);
}
{{- end}}

fn apply(v: {{.T}}) -> {{.T}} {
{{- if eq .Op "copy"}}
  return v;
{{- else if eq .Op "abs"}}
  return abs(v);
{{- else if eq .Op "neg"}}
  return -v;
{{- else if eq .Op "exp"}}
  return exp(v);
{{- else if eq .Op "sqrt"}}
  return sqrt(v);
{{- else if eq .Op "rsqrt"}}
  // 1/sqrt rather than inverseSqrt, which WGSL leaves undefined at 0:
  // rsqrt(+0) = +Inf and rsqrt(-0) = -Inf as in torch.
  return 1.0 / sqrt(v);
{{- else if eq .Op "sin"}}
  return sin(v);
{{- else if eq .Op "cos"}}
  return cos(v);
{{- else if eq .Op "tan"}}
  return tan(v);
{{- else if eq .Op "tanh"}}
  return tanh_(v);
{{- else if eq .Op "sigmoid"}}
  return sigmoid_(v);
{{- else if eq .Op "log10"}}
  return log2(v) * 0.30102999566398120;
{{- else if eq .Op "relu"}}
  // select, not max: NaN stays NaN as in torch.
  return select(v, {{.T}}(), v < {{.T}}());
{{- else if eq .Op "relu6"}}
  return clamp_keep_nan(v, {{.T}}(0), {{.T}}(6));
{{- else if or (eq .Op "hardtanh") (eq .Op "clamp")}}
{{- if eq .S "f32"}}
  return clamp_keep_nan(v, {{.T}}(params.af), {{.T}}(params.bf));
{{- else}}
  return clamp_keep_nan(v, {{.T}}(params.ai), {{.T}}(params.bi));
{{- end}}
{{- else if eq .Op "round"}}
{{- if eq .S "f32"}}
  // WGSL round is round-half-to-even, like torch.round.
  return round(v);
{{- else}}
  return v;
{{- end}}
{{- else if eq .Op "hardswish"}}
  return v * clamp_keep_nan(v + 3.0, {{.T}}(0), {{.T}}(6)) / 6.0;
{{- else if eq .Op "hardsigmoid"}}
  return clamp_keep_nan(v + 3.0, {{.T}}(0), {{.T}}(6)) / 6.0;
{{- else if eq .Op "leaky_relu"}}
  return select(v * params.af, v, v > {{.T}}());
{{- else if eq .Op "hardshrink"}}
  // As torch: 0 inside [-lambd, lambd], else x (NaN stays NaN).
  let l = {{.T}}(params.af);
  return select(v, {{.T}}(), (v >= -l) & (v <= l));
{{- else if eq .Op "gelu"}}
  // x * Phi(x), Phi from erfc so the negative tail keeps its relative
  // accuracy: Phi(x) = erfc(-x/sqrt2)/2. gelu(-Inf) is NaN, as torch's
  // x*0.5*(1+erf(x/sqrt2)).
  let c = 0.5 * erfc_(abs(v) * 0.70710678118654752);
  return v * select(c, 1.0 - c, v > {{.T}}());
{{- else if eq .Op "gelu_tanh"}}
  // 0.5*x*(1+tanh(u)) = x*sigmoid(2u), u = sqrt(2/pi)*(x+0.044715x^3),
  // without the cancellation of 1+tanh(u) for negative x.
  let u = 0.79788456080286536 * (v + 0.044715 * v * v * v);
  return v / (1.0 + exp(-2.0 * u));
{{- else if eq .Op "bitwise_not"}}
{{- if eq .X "bool"}}
  return v ^ {{.T}}(1);
{{- else}}
  return ~v;
{{- end}}
{{- else if eq .Op "logical_not"}}
  return select({{.T}}(0), {{.T}}(1), v == {{.T}}(0));
{{- else if eq .Op "pow"}}
{{- if eq .Pow "int"}}
  // Binary powering; a negative exponent powers 1/x (torch: x^-1 is
  // 1/x, x^2 is x*x, x^3 is x*x*x, all reproduced exactly).
  var b = v;
  var k = params.ai;
{{- if eq .S "f32"}}
  if (k < 0) {
    b = 1.0 / v;
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
  return select(r, v, is_nan(v));
{{- else if eq .Pow "nan"}}
  return select({{.T}}(params.nan), {{.T}}(1.0), v == {{.T}}(1.0));
{{- else}}
  // x^e = 2^(e*log2|x|); a finite negative x with a fractional e is NaN
  // (C's pow(-Inf, e) is Inf or 0).
  // llvmpipe's exp2 turns NaN into 0, so NaN is passed on by hand.
  let r = select(exp2(params.af * log2(abs(v))), v, is_nan(v));
{{- if eq .Pow "frac"}}
  return select(r, {{.T}}(params.nan), (v < {{.T}}()) & (v > {{.T}}(-params.inf)));
{{- else}}
  return r;
{{- end}}
{{- end}}
{{- end}}
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n) { return; }
  store(i, apply(load(i)));
}
