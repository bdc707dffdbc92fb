// q8ta_linear.wgsl: int8 activation × int8 per-channel weight linears
// (ops/q8ta_linear.go): et_vk.q8ta_linear[_gemv] (int8 out) and
// et_vk.linear_q8ta_q8csw (float32 out).
//
// x is [M, K] int8 codes, four per u32 (or float32, quantized here with
// clamp(round(x·inv_in) + zp_in, −128, 127) when .FloatIn); w is [N, K]
// int8, four per u32 (K % 4 == 0, so rows start on words). The
// accumulator is integer:
//
//   acc[m, n] = Σ_k xq[m, k]·w[n, k] − zp_in·w_sums[n] = Σ_k (xq[m, k] − zp_in)·w[n, k]
//
// then v = f32(acc)·s_in·s_w[n] (+ bias[n]) (relu: max(v, 0)), and for int8
// out q = clamp(round(v·inv_out) + zp_out, −128, 127), round half to even.
//
// Tile mode: an invocation owns {{len .Rows}} rows × 4 columns, the
// columns one output word when N % 4 == 0. Word mode (int8 out, N % 4 != 0):
// an invocation owns one output word, four flat elements with their own
// (m, n). Either way the K loop takes K/4 trips (ops caps it below
// llvmpipe's 65535 back-edges).
{{- if .FloatIn}}
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
{{- else}}
@group(0) @binding(0) var<storage, read> x: array<u32>;
{{- end}}
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> sums: array<i32>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
{{- if .Bias}}
@group(0) @binding(4) var<storage, read> bias: array<f32>;
{{- end}}
{{- if .FloatOut}}
@group(0) @binding({{.OutBinding}}) var<storage, read_write> out: array<f32>;
{{- else}}
@group(0) @binding({{.OutBinding}}) var<storage, read_write> out: array<u32>;
{{- end}}
@group(0) @binding({{.ParamsBinding}}) var<uniform> params: Params;

// Go twin: the Params packing in recordQ8Linear (ops/q8ta_linear.go).
struct Params {
  m: u32,
  n: u32,
  k4: u32,        // K / 4: words per row of x and w
  col_blocks: u32,
  zp_in: i32,
  s_in: f32,
  inv_in: f32,
  inv_out: f32,
  zp_out: i32,
  relu: u32,
  zero: u32,      // always 0: keep_rounded's opaque zero
  _p1: u32,
}

{{template "num" (args "T" "f32")}}

{{template "num" (args "T" "vec4<f32>")}}

{{template "num_round"}}

// unpack returns the four int8 values of a packed word, sign-extended.
fn unpack(word: u32) -> vec4<i32> {
  return bitcast<vec4<i32>>(vec4<u32>(word) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u);
}

// xword returns the quantized codes of x's word at index i.
fn xword(i: u32) -> vec4<i32> {
{{- if .FloatIn}}
  let q = fclamp4(round(x[i] * params.inv_in) + f32(params.zp_in), vec4<f32>(-128.0), vec4<f32>(127.0));
  return vec4<i32>(q);
{{- else}}
  return unpack(x[i]);
{{- end}}
}

// epilogue turns the raw dot Σ xq·w of column n into the output value;
// the product rounds before the bias is added, as the reference's
// (keep_rounded: no fma).
fn epilogue(dot: i32, n: u32) -> f32 {
  let acc = dot - params.zp_in * sums[n];
  var v = f32(acc) * params.s_in * scales[n];
{{- if .Bias}}
  v = keep_rounded(v, params.zero) + bias[n];
{{- end}}
  if (params.relu != 0u) {
    v = frelu(v);
  }
  return v;
}

// requant returns the int8 code of v as its low byte.
fn requant(v: f32) -> u32 {
  let q = fclamp(round(v * params.inv_out) + f32(params.zp_out), -128.0, 127.0);
  return u32(i32(q)) & 0xffu;
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = gid.x + gid.y * (nwg.x * {{.WG}}u);
{{- if .Word}}
  let total = params.m * params.n;
  if (idx * 4u >= total) { return; }
  // Four flat elements; past the end they repeat the last one.
  var xr: vec4<u32>;
  var wr: vec4<u32>;
  var nn: vec4<u32>;
  for (var e = 0u; e < 4u; e++) {
    let o = min(idx * 4u + e, total - 1u);
    xr[e] = (o / params.n) * params.k4;
    nn[e] = o % params.n;
    wr[e] = nn[e] * params.k4;
  }
  var acc = vec4<i32>(0);
  for (var k = 0u; k < params.k4; k++) {
    acc.x += dot(xword(xr.x + k), unpack(w[wr.x + k]));
    acc.y += dot(xword(xr.y + k), unpack(w[wr.y + k]));
    acc.z += dot(xword(xr.z + k), unpack(w[wr.z + k]));
    acc.w += dot(xword(xr.w + k), unpack(w[wr.w + k]));
  }
  var word = 0u;
  for (var e = 0u; e < 4u; e++) {
    if (idx * 4u + e < total) {
      word |= requant(epilogue(acc[e], nn[e])) << (8u * e);
    }
  }
  out[idx] = word;
{{- else}}
  let cb = idx % params.col_blocks;
  let rb = idx / params.col_blocks;
  let m0 = rb * {{len .Rows}}u;
  if (m0 >= params.m) { return; }
  let n0 = cb * 4u;
  // Rows and columns past the end read the last one and are not written.
  let w0 = min(n0, params.n - 1u) * params.k4;
  let w1 = min(n0 + 1u, params.n - 1u) * params.k4;
  let w2 = min(n0 + 2u, params.n - 1u) * params.k4;
  let w3 = min(n0 + 3u, params.n - 1u) * params.k4;
{{- range .Rows}}
  let x{{.}} = min(m0 + {{.}}u, params.m - 1u) * params.k4;
  var acc{{.}} = vec4<i32>(0);
{{- end}}
  for (var k = 0u; k < params.k4; k++) {
    let b0 = unpack(w[w0 + k]);
    let b1 = unpack(w[w1 + k]);
    let b2 = unpack(w[w2 + k]);
    let b3 = unpack(w[w3 + k]);
{{- range .Rows}}
    {
      let a = xword(x{{.}} + k);
      acc{{.}} += vec4<i32>(dot(a, b0), dot(a, b1), dot(a, b2), dot(a, b3));
    }
{{- end}}
  }
{{- range .Rows}}
  if (m0 + {{.}}u < params.m) {
    let row = (m0 + {{.}}u) * params.n;
{{- if $.FloatOut}}
    for (var c = 0u; c < 4u; c++) {
      if (n0 + c < params.n) {
        out[row + n0 + c] = epilogue(acc{{.}}[c], n0 + c);
      }
    }
{{- else}}
    var word = 0u;
    for (var c = 0u; c < 4u; c++) {
      word |= requant(epilogue(acc{{.}}[c], n0 + c)) << (8u * c);
    }
    out[(row + n0) / 4u] = word;
{{- end}}
  }
{{- end}}
{{- end}}
}
