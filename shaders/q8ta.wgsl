// q8ta.wgsl: the elementwise int8 ops of statically quantized graphs
// (ops/q8ta.go). int8 tensors are flat row-major bytes, four per u32,
// little-endian; every buffer is padded to 16 bytes. Each invocation owns
// one output WORD (four int8 elements, or four float32 for dequantize), so
// no two invocations write the same word.
//
//   quantize:   q = clamp(round(x·inv_out) + zp_out, qmin, qmax)
//   dequantize: x = f32(q − zp_a)·s_a
//   relu:       q = requant(max(f32(q − zp_a)·s_a, 0))
//   add:        q = requant(f32(a − zp_a)·s_a + alpha·(f32(b − zp_b)·s_b)), a and b
//               broadcast to the output (.Broadcast) or of its shape
//   shuffle:    out[o, c, y, x] = requant(f32(in[o, c·r² + (y%r)·r + x%r, y/r, x/r] − zp_a)·s_a),
//               inv_out being the op's output_inv_scale itself
//
// requant(v) = clamp(round(v·inv_out) + zp_out, −128, 127); WGSL round()
// is half to even, as torch.round. Every step rounds to float32 as the
// reference (quantized-format.md §12.4) does: the products that feed an
// add go through keep_rounded, so no compiler fuses them into an fma
// (which skipped a rounding and moved some q8ta_add codes by one step on
// an H100), and inv_out = f32(1/s_out) comes from the host.
{{- if eq .Kind "quantize"}}
@group(0) @binding(0) var<storage, read> x: array<f32>;
{{- else}}
@group(0) @binding(0) var<storage, read> x: array<u32>;
{{- end}}
{{- if eq .Kind "add"}}
@group(0) @binding(1) var<storage, read> y: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
{{- else if eq .Kind "dequantize"}}
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> params: Params;
{{- else}}
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;
{{- end}}

// Go twin: q8taParams (ops/q8ta.go).
struct Params {
  numel: u32,
  zp_a: i32,
  zp_b: i32,
  zp_out: i32,
  s_a: f32,
  s_b: f32,
  alpha: f32,
  inv_out: f32,
  qmin: i32,
  qmax: i32,
  h: u32,
  w: u32,
  r: u32,
  rank: u32,     // add with broadcasting: dims innermost first, strides
  zero: u32,     // always 0: keep_rounded's opaque zero
  _p2: u32,
  dims: array<vec4<u32>, 2>,
  sa: array<vec4<u32>, 2>,
  sb: array<vec4<u32>, 2>,
}

{{template "num" (args "T" "f32")}}

{{template "num_round"}}

// sext returns element e (mod 4) of a packed int8 word, sign-extended.
fn sext(word: u32, e: u32) -> i32 {
  return bitcast<i32>(word << (24u - 8u * (e & 3u))) >> 24u;
}

// requant maps a float to an int8 code in [qmin, qmax], as its low byte.
fn requant(v: f32) -> u32 {
  let q = fclamp(round(v * params.inv_out) + f32(params.zp_out), f32(params.qmin), f32(params.qmax));
  return u32(i32(q)) & 0xffu;
}
{{- if .Broadcast}}

// operands returns the element indices of a and b that output element o
// reads (dims and strides innermost first; stride 0 where broadcast).
fn operands(o: u32) -> vec2<u32> {
  var rest = o;
  var at = vec2<u32>(0u);
  for (var k = 0u; k < params.rank; k++) {
    let d = params.dims[k / 4u][k % 4u];
    let c = rest % d;
    rest = rest / d;
    at += c * vec2<u32>(params.sa[k / 4u][k % 4u], params.sb[k / 4u][k % 4u]);
  }
  return at;
}
{{- end}}
{{- if eq .Kind "shuffle"}}

// source returns the input index of output element o ([outer·C, H·r, W·r]).
fn source(o: u32) -> u32 {
  let r = params.r;
  let ow = params.w * r;
  let oh = params.h * r;
  let ox = o % ow;
  let t = o / ow;
  let oy = t % oh;
  let oc = t / oh;
  let ic = oc * r * r + (oy % r) * r + (ox % r);
  return (ic * params.h + oy / r) * params.w + ox / r;
}
{{- end}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i * 4u >= params.numel) { return; }
{{- if eq .Kind "dequantize"}}
  let word = x[i];
  var v = vec4<f32>(0.0);
  for (var k = 0u; k < 4u; k++) {
    v[k] = f32(sext(word, k) - params.zp_a) * params.s_a;
  }
  out[i] = v;
{{- else}}
  var word = 0u;
  for (var k = 0u; k < 4u; k++) {
    let e = i * 4u + k;
    if (e >= params.numel) { break; }
{{- if eq .Kind "quantize"}}
    let q = requant(x[e]);
{{- else if eq .Kind "relu"}}
    let q = requant(frelu(f32(sext(x[i], k) - params.zp_a) * params.s_a));
{{- else if and (eq .Kind "add") .Broadcast}}
    let ab = operands(e);
    let fa = keep_rounded(f32(sext(x[ab.x >> 2u], ab.x) - params.zp_a) * params.s_a, params.zero);
    let fb = f32(sext(y[ab.y >> 2u], ab.y) - params.zp_b) * params.s_b;
    let q = requant(fa + keep_rounded(params.alpha * fb, params.zero));
{{- else if eq .Kind "add"}}
    let fa = keep_rounded(f32(sext(x[i], k) - params.zp_a) * params.s_a, params.zero);
    let fb = f32(sext(y[i], k) - params.zp_b) * params.s_b;
    let q = requant(fa + keep_rounded(params.alpha * fb, params.zero));
{{- else if eq .Kind "shuffle"}}
    let s = source(e);
    let q = requant(f32(sext(x[s >> 2u], s) - params.zp_a) * params.s_a);
{{- end}}
    word |= q << (8u * k);
  }
  out[i] = word;
{{- end}}
}
