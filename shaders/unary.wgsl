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

{{template "unary_helpers" (args "S" .S "T" .T)}}
{{- if or (eq .Op "sin") (eq .Op "cos") (eq .Op "tan")}}

// The binary digits of 2/pi after the point, behind one zero word so a
// window may start a little before the point.
var<private> two_over_pi: array<u32, 8> = array<u32, 8>(0u, 0xa2f9836eu, 0x4e441529u,
    0xfc2757d1u, 0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu);

// mul32 returns the 64-bit product a*b as (hi, lo), from 16-bit limbs.
fn mul32(a: u32, b: u32) -> vec2<u32> {
  let al = a & 0xffffu;
  let ah = a >> 16u;
  let bl = b & 0xffffu;
  let bh = b >> 16u;
  let ll = al * bl;
  let lh = al * bh;
  let hl = ah * bl;
  let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
  return vec2<u32>(ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u), (ll & 0xffffu) | (mid << 16u));
}

// reduce_big returns (r, q) with a = r + q*pi/2 (mod 2*pi), |r| <= pi/4,
// for a finite a >= 2^20, where llvmpipe's own reduction loses digits
// (sin(1e8) is off by 1e-3). Payne-Hanek: a = m*2^(e-23) with m < 2^24, so
// only a 96-bit window of 2/pi's digits matters for a*2/pi mod 4.
fn reduce_big(a: f32) -> vec2<f32> {
  let bits = bitcast<u32>(a);
  let e = i32(bits >> 23u) - 127;
  let m = (bits & 0x7fffffu) | 0x800000u;
  // The window starts at digit e-24 (1-based after the point); digits
  // before it make a multiple of 4.
  let pos = u32(e + 7);
  let j = pos >> 5u;
  let sh = pos & 31u;
  var w: array<u32, 3>;
  for (var k = 0u; k < 3u; k++) {
    let hi = two_over_pi[j + k];
    let lo = two_over_pi[j + k + 1u];
    // WGSL shifts count mod 32, so sh = 0 must not shift lo by 32.
    w[k] = select((hi << sh) | (lo >> (32u - sh)), hi, sh == 0u);
  }
  // m*W mod 2^96 = (r0, r1, r2); its value over 2^94 is a*2/pi mod 4.
  let p2 = mul32(m, w[2]);
  let p1 = mul32(m, w[1]);
  let r2 = p2.y;
  let r1 = p1.y + p2.x;
  let r0 = m * w[0] + p1.x + select(0u, 1u, r1 < p1.y);
  var q = r0 >> 30u;
  var f0 = r0 & 0x3fffffffu;
  var f1 = r1;
  var f2 = r2;
  var sign = 1.0;
  if ((f0 & 0x20000000u) != 0u) {
    // A fraction of 1/2 or more: take fraction - 1, the next quadrant.
    q = q + 1u;
    sign = -1.0;
    f2 = ~f2 + 1u;
    let c2 = select(0u, 1u, f2 == 0u);
    f1 = ~f1 + c2;
    let c1 = select(0u, 1u, c2 == 1u && f1 == 0u);
    f0 = (~f0 + c1) & 0x3fffffffu;
  }
  // 2^-94, 2^-62, 2^-30.
  let fr = f32(f2) * 5.048709793414476e-29 + f32(f1) * 2.168404344971009e-19 + f32(f0) * 9.313225746154785e-10;
  return vec2<f32>(sign * fr * 1.5707963267948966, f32(q & 3u));
}

// trig is {{.Op}}(x): llvmpipe's below 2^20, else on the reduced argument.
fn trig(x: f32) -> f32 {
  let a = abs(x);
  if (!(a >= 1048576.0 && a <= 3.4028235e38)) {
    return {{.Op}}(x);
  }
  let rq = reduce_big(a);
  let s = sin(rq.x);
  let c = cos(rq.x);
  let q = u32(rq.y);
  let neg = x < 0.0;
{{- if eq .Op "sin"}}
  // sin(r + q*pi/2) = s, c, -s, -c; sin is odd.
  var r = select(s, c, (q & 1u) != 0u);
  r = select(r, -r, (q & 2u) != 0u);
  return select(r, -r, neg);
{{- else if eq .Op "cos"}}
  // cos(r + q*pi/2) = c, -s, -c, s; cos is even.
  var r = select(c, s, (q & 1u) != 0u);
  return select(r, -r, q == 1u || q == 2u);
{{- else}}
  // tan(r + q*pi/2) = s/c, or -c/s for odd q; tan is odd.
  let r = select(s / c, -c / s, (q & 1u) != 0u);
  return select(r, -r, neg);
{{- end}}
}
{{- end}}

fn apply(v: {{.T}}) -> {{.T}} {
{{- if eq .Op "copy"}}
  return v;
{{- else if or (eq .Op "sin") (eq .Op "cos") (eq .Op "tan")}}
{{- if eq .W 4}}
  return vec4<f32>(trig(v.x), trig(v.y), trig(v.z), trig(v.w));
{{- else}}
  return trig(v);
{{- end}}
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
