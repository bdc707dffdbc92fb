// attention.wgsl: fused scaled-dot-product attention, float32, and the
// KV-cache row update.
//
// Attention: one workgroup of {{.Lanes}} lanes per query row (b, h, i).
// Lane t walks keys t, t+{{.Lanes}}, ... below the row's key limit with an
// online softmax (running max m, running sum l, unnormalized output acc),
// so each lane loops about nkeys/{{.Lanes}} times: far below llvmpipe's
// 65535 back-edges per invocation (Go caps nkeys accordingly). The lanes'
// partial states are then merged through workgroup memory: the row max M,
// the sum Σ l_t·exp(m_t − M), and each output vec4 Σ acc_t·exp(m_t − M)
// divided by that sum. A row whose keys are all masked out ends as 0/0 =
// NaN, as torch's softmax of all −inf does.
//
// Head dims (D for q·k, Dv for v and out) are baked in: the per-key dot
// product and output update are unrolled over vec4 chunks, so they cost no
// loop trips. With Vec4 (both head dims multiples of 4, so every row
// offset is too) q, k, v and out bind as vec4 arrays: one load per chunk.
// q, k, v, mask and out are addressed by element strides (last
// dim contiguous), so [B, H, S, D] and [B, S, H, D] layouts, KV caches
// with more rows than keys, broadcast batches and grouped-query heads
// (kv head = h / g) all use the same kernel.
{{- if .Update}}

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> cache: array<f32>;
{{- if .Out}}
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;
{{- else}}
@group(0) @binding(2) var<uniform> params: Params;
{{- end}}

struct Params {
  n: u32,       // elements of src
  block: u32,   // S·H·D: one batch of src, contiguous in the cache too
  dst0: u32,    // input_pos·H·D: the first cache element written per batch
  bstride: u32, // max_S·H·D: one batch of the cache
}

// Cache row update: cache[b, pos + s, h, d] = src[b, s, h, d]. Per batch the
// S rows of H·D elements are contiguous in both tensors.
@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let e = gid.x + gid.y * (nwg.x * {{.WG}}u);
{{- if .Out}}
  if (e == 0u) { out[0] = 0.0; }
{{- end}}
  if (e >= params.n) { return; }
  let b = e / params.block;
  cache[b * params.bstride + params.dst0 + e % params.block] = src[e];
}
{{- else}}

{{- $t := "f32"}}{{if .Vec4}}{{$t = "vec4<f32>"}}{{end}}
@group(0) @binding(0) var<storage, read> q: array<{{$t}}>;
@group(0) @binding(1) var<storage, read> k: array<{{$t}}>;
@group(0) @binding(2) var<storage, read> v: array<{{$t}}>;
{{- if .Mask}}
@group(0) @binding(3) var<storage, read> mask: array<{{if .BoolMask}}u32{{else}}f32{{end}}>;
@group(0) @binding(4) var<storage, read_write> out: array<{{$t}}>;
@group(0) @binding(5) var<uniform> params: Params;
{{- else}}
@group(0) @binding(3) var<storage, read_write> out: array<{{$t}}>;
@group(0) @binding(4) var<uniform> params: Params;
{{- end}}

struct Params {
  rows: u32,       // B·Hq·Sq query rows
  sq: u32,
  hq: u32,
  g: u32,          // query heads per kv head
  nkeys: u32,      // keys 0..nkeys-1 are visible
  causal: u32,     // nonzero: key j visible to row i only if j <= i + causal_off
  causal_off: u32,
  scale: f32,
  q_sb: u32, q_sh: u32, q_ss: u32, k_sb: u32,
  k_sh: u32, k_ss: u32, v_sb: u32, v_sh: u32,
  v_ss: u32, o_sb: u32, o_sh: u32, o_ss: u32,
  m_sb: u32, m_sh: u32, m_sq: u32, m_sk: u32,
}

const L: u32 = {{.Lanes}}u;
const V4: u32 = {{len .VChunks}}u;

var<workgroup> wm: array<f32, {{.Lanes}}>;
var<workgroup> wl: array<f32, {{.Lanes}}>;
var<workgroup> wacc: array<vec4<f32>, {{.WAcc}}>;

@compute @workgroup_size({{.Lanes}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= params.rows) { return; }
  let i = row % params.sq;
  let bh = row / params.sq;
  let h = bh % params.hq;
  let b = bh / params.hq;
  let hk = h / params.g;
  let neg_inf = bitcast<f32>(0xff800000u);

  let qo = b * params.q_sb + h * params.q_sh + i * params.q_ss;
  let s = params.scale;
{{- range .QChunks}}
{{- if $.Vec4}}
  let q{{.I}} = s * q[(qo >> 2u) + {{.I}}u];
{{- else}}
  let q{{.I}} = s * vec4<f32>(q[qo + {{.Off}}u], {{if gt .N 1}}q[qo + {{.Off}}u + 1u]{{else}}0.0{{end}}, {{if gt .N 2}}q[qo + {{.Off}}u + 2u]{{else}}0.0{{end}}, {{if gt .N 3}}q[qo + {{.Off}}u + 3u]{{else}}0.0{{end}});
{{- end}}
{{- end}}
  var nk = params.nkeys;
  if (params.causal != 0u) { nk = min(nk, i + params.causal_off + 1u); }
  let kb = b * params.k_sb + hk * params.k_sh;
  let vb = b * params.v_sb + hk * params.v_sh;
{{- if .Mask}}
  let mo = b * params.m_sb + h * params.m_sh + i * params.m_sq;
{{- end}}

  var m = neg_inf;
  var l = 0.0;
{{- range .VChunks}}
  var acc{{.I}} = vec4<f32>(0.0);
{{- end}}
  for (var j = lane; j < nk; j += L) {
    let ko = kb + j * params.k_ss;
{{- if .Vec4}}
    let k4 = ko >> 2u;
    var sc = 0.0{{range .QChunks}} + dot(q{{.I}}, k[k4 + {{.I}}u]){{end}};
{{- else}}
    var sc = 0.0{{range .QChunks}} + dot(q{{.I}}, vec4<f32>(k[ko + {{.Off}}u], {{if gt .N 1}}k[ko + {{.Off}}u + 1u]{{else}}0.0{{end}}, {{if gt .N 2}}k[ko + {{.Off}}u + 2u]{{else}}0.0{{end}}, {{if gt .N 3}}k[ko + {{.Off}}u + 3u]{{else}}0.0{{end}})){{end}};
{{- end}}
{{- if .Mask}}
    let mi = mo + j * params.m_sk;
{{- if .BoolMask}}
    if (((mask[mi >> 2u] >> ((mi & 3u) * 8u)) & 0xffu) == 0u) { sc = neg_inf; }
{{- else}}
    sc += mask[mi];
{{- end}}
{{- end}}
    if (sc > neg_inf) {
      let mn = max(m, sc);
      let corr = exp(m - mn);
      let p = exp(sc - mn);
      l = l * corr + p;
      let vo = vb + j * params.v_ss;
{{- range .VChunks}}
{{- if $.Vec4}}
      acc{{.I}} = acc{{.I}} * corr + p * v[(vo >> 2u) + {{.I}}u];
{{- else}}
      acc{{.I}} = acc{{.I}} * corr + p * vec4<f32>(v[vo + {{.Off}}u], {{if gt .N 1}}v[vo + {{.Off}}u + 1u]{{else}}0.0{{end}}, {{if gt .N 2}}v[vo + {{.Off}}u + 2u]{{else}}0.0{{end}}, {{if gt .N 3}}v[vo + {{.Off}}u + 3u]{{else}}0.0{{end}});
{{- end}}
{{- end}}
      m = mn;
    }
  }

  // Merge the lanes' partial softmax states.
  wm[lane] = m;
  wl[lane] = l;
  workgroupBarrier();
  var mx = neg_inf;
  for (var t = 0u; t < L; t++) { mx = max(mx, wm[t]); }
  var sum = 0.0;
  for (var t = 0u; t < L; t++) {
    if (wm[t] > neg_inf) { sum += wl[t] * exp(wm[t] - mx); }
  }
  var c = 0.0;
  if (m > neg_inf) { c = exp(m - mx); }
{{- range .VChunks}}
  wacc[lane * V4 + {{.I}}u] = acc{{.I}} * c;
{{- end}}
  workgroupBarrier();
  let oo = b * params.o_sb + h * params.o_sh + i * params.o_ss;
  for (var d = lane; d < V4; d += L) {
    var r = vec4<f32>(0.0);
    for (var t = 0u; t < L; t++) { r += wacc[t * V4 + d]; }
    r = r / sum;
{{- if .Vec4}}
    out[(oo >> 2u) + d] = r;
{{- else}}
    let e = oo + 4u * d;
    out[e] = r.x;
{{- if .VTail}}
    if (4u * d + 1u < {{.Dv}}u) { out[e + 1u] = r.y; }
    if (4u * d + 2u < {{.Dv}}u) { out[e + 2u] = r.z; }
    if (4u * d + 3u < {{.Dv}}u) { out[e + 3u] = r.w; }
{{- else}}
    out[e + 1u] = r.y;
    out[e + 2u] = r.z;
    out[e + 3u] = r.w;
{{- end}}
{{- end}}
  }
}
{{- end}}
