// binary.wgsl: out = a <op> b, elementwise arithmetic with NumPy
// broadcasting (ops/binary.go). ops/binary.go picks the variant
// (binaryVariant):
//
//   - Op: add, sub (both scale b by alpha), rsub (b - alpha*a), mul, div,
//     floordiv, truncdiv, minimum, maximum, pow, bitand, bitor, bitxor.
//   - AT, BT: the inputs' element types, f32, i32 or u8 (bool, packed four
//     to a u32 word). ABuf, BBuf, OBuf: the bindings' array element types
//     (their vec4 when read W-wide; a u8 input is always array<u32>). CS is
//     the scalar type the op computes in (out's), CT its W-wide type.
//   - W: outputs per invocation, 1 or 4. With W = 4 an input is either
//     read W-wide (AVec/BVec: a vec4, or one word of four u8) or read as
//     one element and splatted.
//   - BScalar: b is the uniform params.s_f / s_i (the .Scalar ops), and
//     has no binding.
//   - Per: outputs per invocation of the Rank 1 kernel (1, or 4 for
//     large tensors), see main.
//   - Rank: 1 when the broadcast merges to one dimension (a and b are each
//     the whole tensor or a single element). Otherwise 2..8, and each
//     invocation walks params.dims to find its inputs; the rank is baked in
//     so the walk unrolls.
//
// int32 arithmetic wraps (two's complement), as WGSL i32 does at run time.
@group(0) @binding(0) var<storage, read> a: array<{{.ABuf}}>;
{{- if not .BScalar}}
@group(0) @binding(1) var<storage, read> b: array<{{.BBuf}}>;
{{- end}}
@group(0) @binding({{.OBind}}) var<storage, read_write> o: array<{{.OBuf}}>;

// Go twin: ewParams in ops/binary.go (shared with compare.wgsl and
// where.wgsl).
struct Params {
  n: u32,        // invocations with work: output elements / W
  numel: u32,    // output elements
  alpha_f: f32,  // alpha for f32 add/sub/rsub
  alpha_i: i32,  // alpha for i32 add/sub/rsub
  s_f: f32,      // the scalar b of a .Scalar op
  s_i: i32,
  rank: u32,     // merged rank (informational: the kernel bakes it in)
  _pad: u32,
  // Merged output dims, innermost first, and each input's element stride
  // along them (0 where the input is broadcast); s2 is unused here.
  dims: array<vec4<u32>, 2>,
  s0: array<vec4<u32>, 2>,
  s1: array<vec4<u32>, 2>,
  s2: array<vec4<u32>, 2>,
}
@group(0) @binding({{.PBind}}) var<uniform> params: Params;

{{- if or (eq .AT "u8") (eq .BT "u8")}}

// byte_of returns byte k (0..3) of word w.
fn byte_of(w: u32, k: u32) -> u32 {
  return (w >> (k * 8u)) & 0xffu;
}
{{- end}}

fn load_a(i: u32) -> {{.CT}} {
{{- if and .AVec (eq .AT "u8") (eq .W 4)}}
  let w = a[i];
  return {{.CT}}(vec4<u32>(byte_of(w, 0u), byte_of(w, 1u), byte_of(w, 2u), byte_of(w, 3u)));
{{- else if eq .AT "u8"}}
  return {{.CT}}({{.CS}}(byte_of(a[i >> 2u], i & 3u)));
{{- else if .AVec}}
  return {{.CT}}(a[i]);
{{- else}}
  return {{.CT}}({{.CS}}(a[i]));
{{- end}}
}

fn load_b(i: u32) -> {{.CT}} {
{{- if .BScalar}}
  return {{.CT}}(params.s_{{if eq .CS "f32"}}f{{else}}i{{end}});
{{- else if and .BVec (eq .BT "u8") (eq .W 4)}}
  let w = b[i];
  return {{.CT}}(vec4<u32>(byte_of(w, 0u), byte_of(w, 1u), byte_of(w, 2u), byte_of(w, 3u)));
{{- else if eq .BT "u8"}}
  return {{.CT}}({{.CS}}(byte_of(b[i >> 2u], i & 3u)));
{{- else if .BVec}}
  return {{.CT}}(b[i]);
{{- else}}
  return {{.CT}}({{.CS}}(b[i]));
{{- end}}
}

{{- if eq .CS "f32"}}
{{- if or (eq .Op "div") (eq .Op "floordiv") (eq .Op "truncdiv")}}

{{template "num_div"}}
{{- end}}
{{- if or (eq .Op "floordiv") (eq .Op "minimum") (eq .Op "maximum") (eq .Op "pow")}}

{{template "num" (args "T" "f32")}}

// Infinity, zero and sign tests on the bits: a compiler may assume no
// infinities, and an adapter that flushes subnormals compares them as 0.
fn is_inf(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}

fn is_zero(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) == 0u;
}

fn sign_bit(x: f32) -> bool {
  return (bitcast<u32>(x) >> 31u) != 0u;
}
{{- end}}
{{- end}}

{{- if eq .Op "floordiv"}}
{{- if eq .CS "f32"}}

// limbs returns (hi*2^24 + lo) * 2^n as three 24-bit limbs, low first;
// hi and lo are below 2^24, and the result must be below 2^72.
fn limbs(hi: u32, lo: u32, n: u32) -> vec3<u32> {
  let b = n % 24u;
  var l = vec3<u32>((lo << b) & 0xffffffu, ((lo >> (24u - b)) | (hi << b)) & 0xffffffu, hi >> (24u - b));
  if (n >= 48u) {
    l = vec3<u32>(0u, 0u, l.x);
  } else if (n >= 24u) {
    l = vec3<u32>(0u, l.x, l.y);
  }
  return l;
}

// cmp_prod returns the sign of ax - aq*ay, exactly, for finite positive
// ax and ay and an integer 1 <= aq < 2^24. It works on the integer
// significands: float arithmetic would round aq*ay (lavapipe's fma is not
// fused), and compilers may rewrite float error-free transforms.
fn cmp_prod(ax: f32, aq: f32, ay: f32) -> i32 {
  let bx = bitcast<u32>(ax);
  let by = bitcast<u32>(ay);
  // value = m * 2^(e - 150); a denormal has e = 1 and no implicit bit.
  let ex = i32(max(bx >> 23u, 1u));
  let ey = i32(max(by >> 23u, 1u));
  let mx = (bx & 0x7fffffu) | select(0u, 0x800000u, (bx >> 23u) != 0u);
  let my = (by & 0x7fffffu) | select(0u, 0x800000u, (by >> 23u) != 0u);
  // p = aq * my < 2^48, as hi*2^24 + lo from 12-bit partial products.
  let q = u32(aq);
  let ql = q & 0xfffu;
  let qh = q >> 12u;
  let yl = my & 0xfffu;
  let yh = my >> 12u;
  let mid = qh * yl + ql * yh;
  var lo = ql * yl + ((mid & 0xfffu) << 12u);
  let hi = qh * yh + (mid >> 12u) + (lo >> 24u);
  lo &= 0xffffffu;
  // Compare mx * 2^ex with p * 2^ey, scaling the smaller exponent to 0.
  let d = ex - ey;
  if (d > 48) {
    return 1;   // mx * 2^d >= 2^49 > p
  }
  if (d < -24) {
    return -1;  // p * 2^-d >= 2^25 > mx
  }
  let lx = limbs(0u, mx, u32(max(d, 0)));
  let lp = limbs(hi, lo, u32(max(-d, 0)));
  for (var k = 2; k >= 0; k--) {
    if (lx[k] != lp[k]) {
      return select(-1, 1, lx[k] > lp[k]);
    }
  }
  return 0;
}

// op1 is Python's floor division, as torch's div_floor_floating. floor(x/y)
// (x/y correctly rounded by div_rn) is one too big when x/y rounds up
// onto an integer (1 // 0.1 is 9, but 1/0.1 rounds to 10); then the
// remainder x - q*y, whose sign cmp_prod finds exactly, has the sign
// opposite to y's. The rounded quotient is never below an integer the true
// one reaches, so it is never one too small.
fn op1(x: f32, y: f32) -> f32 {
  if (is_zero(y)) {
    return div_rn(x, y);
  }
  if (is_nan(x) || is_nan(y) || is_inf(x)) {
    return bitcast<f32>(0x7fc00000u);
  }
  if (is_inf(y) || is_zero(x)) {
    // x/y is ±0; it floors to -1 when x and y have opposite signs.
    if (is_zero(x) || sign_bit(x) == sign_bit(y)) {
      return div_rn(x, y);
    }
    return -1.0;
  }
  var q = floor(div_rn(x, y));
  if (is_zero(q)) {
    // x/y may have underflowed to -0: the true quotient is negative.
    return select(q, -1.0, sign_bit(x) != sign_bit(y));
  }
  if (fabs(q) < 16777216.0) {
    // q*y has x's sign, so the remainder's sign is x's times c.
    let c = cmp_prod(fabs(x), fabs(q), fabs(y));
    if (c != 0 && ((sign_bit(x) != (c < 0)) != sign_bit(y))) {
      q -= 1.0;
    }
  }
  return q;
}
{{- else}}

// op1 is floor division; by zero it gives 0, and INT_MIN // -1 wraps.
fn op1(x: i32, y: i32) -> i32 {
  if (y == 0) {
    return 0;
  }
  // WGSL defines INT_MIN / -1 as INT_MIN and INT_MIN % -1 as 0.
  let q = x / y;
  let r = x % y;
  return select(q, q - 1, r != 0 && ((r < 0) != (y < 0)));
}
{{- end}}
{{- else if eq .Op "truncdiv"}}
{{- if eq .CS "f32"}}

fn op1(x: f32, y: f32) -> f32 {
  return trunc(div_rn(x, y));
}
{{- else}}

// op1 is C division; by zero it gives 0.
fn op1(x: i32, y: i32) -> i32 {
  return select(x / y, 0, y == 0);
}
{{- end}}
{{- else if or (eq .Op "minimum") (eq .Op "maximum")}}
{{- if eq .CS "f32"}}

// op1 propagates NaN and compares on the bits (common.tmpl).
fn op1(x: f32, y: f32) -> f32 {
  return {{if eq .Op "minimum"}}fmin{{else}}fmax{{end}}(x, y);
}
{{- else}}

fn op1(x: i32, y: i32) -> i32 {
  return {{if eq .Op "minimum"}}min{{else}}max{{end}}(x, y);
}
{{- end}}
{{- else if eq .Op "pow"}}
{{- if eq .CS "f32"}}

// op1 is C's pow. WGSL's pow is undefined for x < 0, so the magnitude is
// exp2(y*log2|x|) and the special cases and sign are handled here.
fn op1(x: f32, y: f32) -> f32 {
  if (y == 0.0 || x == 1.0) {
    return 1.0;
  }
  if (is_nan(x) || is_nan(y)) {
    return bitcast<f32>(0x7fc00000u);
  }
  let ax = abs(x);
  if (is_inf(y)) {
    if (ax == 1.0) {
      return 1.0;
    }
    return select(0.0, bitcast<f32>(0x7f800000u), (ax > 1.0) == (y > 0.0));
  }
  let yint = trunc(y) == y;
  if (x < 0.0 && !yint) {
    return bitcast<f32>(0x7fc00000u);
  }
  // Every float32 of magnitude 2^24 or more is even.
  let odd = yint && abs(y) < 16777216.0 && (i32(y) & 1) == 1;
  var m: f32;
  if (ax == 0.0) {
    m = select(0.0, bitcast<f32>(0x7f800000u), y < 0.0);
  } else if (is_inf(ax)) {
    m = select(bitcast<f32>(0x7f800000u), 0.0, y < 0.0);
  } else {
    m = exp2(y * log2(ax));
  }
  return select(m, -m, odd && sign_bit(x));
}
{{- else}}

// op1 is torch's integer pow: a negative exponent gives 1 for base 1,
// ±1 for base -1 and 0 otherwise; products wrap.
fn op1(x: i32, y: i32) -> i32 {
  if (y < 0) {
    if (x == 1) {
      return 1;
    }
    if (x == -1) {
      return select(1, -1, (y & 1) != 0);
    }
    return 0;
  }
  var r = 1;
  var base = x;
  var e = y;
  // At most 31 trips.
  while (e != 0) {
    if ((e & 1) != 0) {
      r *= base;
    }
    base *= base;
    e = e >> 1u;
  }
  return r;
}
{{- end}}
{{- end}}

fn apply(x: {{.CT}}, y: {{.CT}}) -> {{.CT}} {
{{- if eq .Op "add"}}
  return x + params.alpha_{{if eq .CS "f32"}}f{{else}}i{{end}} * y;
{{- else if eq .Op "sub"}}
  return x - params.alpha_{{if eq .CS "f32"}}f{{else}}i{{end}} * y;
{{- else if eq .Op "rsub"}}
  return y - params.alpha_{{if eq .CS "f32"}}f{{else}}i{{end}} * x;
{{- else if eq .Op "mul"}}
  return x * y;
{{- else if and (eq .Op "div") (eq .W 4)}}
  return div_rn4(x, y);
{{- else if eq .Op "div"}}
  return div_rn(x, y);
{{- else if eq .Op "bitand"}}
  return x & y;
{{- else if eq .Op "bitor"}}
  return x | y;
{{- else if eq .Op "bitxor"}}
  return x ^ y;
{{- else if eq .W 4}}
  return {{.CT}}(op1(x.x, y.x), op1(x.y, y.y), op1(x.z, y.z), op1(x.w, y.w));
{{- else}}
  return op1(x, y);
{{- end}}
}

{{- if gt .Per 1}}

// Per > 1: each invocation computes Per outputs, one per workgroup-wide
// block (lanes stay on consecutive elements); llvmpipe then pays its
// per-invocation cost once per Per outputs (about 10-15% faster on a
// 16M-element add).
@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let w = wid.x + wid.y * nwg.x;
  for (var k = 0u; k < {{.Per}}u; k++) {
    let i = (w * {{.Per}}u + k) * {{.WG}}u + lid;
    if (i < params.n) {
      o[i] = {{.OBuf}}(apply(load_a({{if .AVec}}i{{else}}0u{{end}}), load_b({{if .BVec}}i{{else}}0u{{end}})));
    }
  }
}
{{- else}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n) { return; }
{{- if gt .Rank 1}}
  // Peel coordinates off the linear output index, innermost first. Rank is
  // at most 8, far below llvmpipe's 65535 loop-iteration cap.
  var rem = i * {{.W}}u;
  var ea = 0u;
  var eb = 0u;
  for (var k = 0u; k < {{.Rank}}u; k++) {
    let n = params.dims[k / 4u][k % 4u];
    let c = rem % n;
    rem = rem / n;
    ea += c * params.s0[k / 4u][k % 4u];
    eb += c * params.s1[k / 4u][k % 4u];
  }
  // A W-wide input's offset is a multiple of 4: its innermost stride is 1
  // and the innermost dim is a multiple of W.
  o[i] = {{.OBuf}}(apply(load_a(ea{{if and .AVec (eq .W 4)}} / 4u{{end}}), load_b(eb{{if and .BVec (eq .W 4)}} / 4u{{end}})));
{{- else}}
  o[i] = {{.OBuf}}(apply(load_a({{if .AVec}}i{{else}}0u{{end}}), load_b({{if .BVec}}i{{else}}0u{{end}})));
{{- end}}
}
{{- end}}
