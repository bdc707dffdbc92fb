// attention.wgsl: fused scaled-dot-product attention, float32, and the
// KV-cache row update.
//
// Attention: one workgroup of Lanes lanes per len(Rows) query rows that
// read the same kv head (consecutive positions of one head, or the query
// heads of one grouped-query group at decode); the rows share every k and
// v load, which is what bounds this kernel on lavapipe. Lane t walks keys t, t+Lanes,
// ... below the rows' largest key limit with an online softmax per row
// (running max m, running sum l, unnormalized output acc); keys past a
// row's own (causal) limit count as masked. Each lane loops about
// nkeys/Lanes times: far below llvmpipe's 65535 back-edges per invocation
// (Go caps nkeys accordingly). The lanes' partial states are then merged
// through workgroup memory: the row max M, the sum Σ l_t·exp(m_t − M),
// and each output vec4 Σ acc_t·exp(m_t − M) divided by that sum. A row
// whose keys are all masked out ends as 0/0 = NaN, as torch's softmax of
// all −inf does.
//
// Head dims (D for q·k, Dv for v and out) are baked in: the per-key dot
// product and output update are unrolled over vec4 chunks, so they cost no
// loop trips. With Vec4 (both head dims multiples of 4, so every row
// offset is too) q, k, v and out bind as vec4 arrays: one load per chunk.
// q, k, v, mask and out are addressed by element strides (last
// dim contiguous), so [B, H, S, D] and [B, S, H, D] layouts, KV caches
// with more rows than keys, broadcast batches and grouped-query heads
// (kv head = h / g) all use the same kernel.
//
// Half KV caches (HalfK/HalfV, Half1/Half2; ops/attention_f16.go): the
// cache holds packed halves, two a u32 word, the lower element in the low
// 16 bits. The update writes one word per invocation from two consecutive
// src elements with pack2x16float (every head's row starts on a word:
// head_dim is even); the attention unpacks each head-dim chunk of k
// or v with unpack2x16float and computes in float32. With Vec4 a half
// cache binds as vec2<u32>: one load a chunk of four.
//
// Split (decode attention over a long cache, flash-decoding): the keys
// are cut in blocks of params.block, one workgroup per block and group of
// rows, each writing its rows' partial softmax state (max m, sum l, and
// the unnormalized output) to part instead of out: row ρ's block s at
// (ρ·nsplit + s)·(V4 + 1) vec4s, (m, l, 0, 0) then the output's V4
// vec4s; a block past all its rows' keys returns at once, writing
// nothing. Combine, one workgroup per row, merges the row's blocks below
// its key count (ceil(nk / block) of them) as the lanes' states are
// merged above (M = max m_s, Σ l_s·exp(m_s − M), Σ acc_s·exp(m_s − M))
// and writes the row of out. Both read the key count at run time (DevPos
// included), so the grid, the blocks of the whole cache, stays the same
// at every position.
//
// DevPos (a decoder's position on the device, ops.Builder.DevicePos):
// input_pos is read from posbuf[0], after the inputs, and the params
// hold offsets from it (the update's first row, the attention's key
// count and causal offset), so that they stay the same at every step.
{{- if .Update}}
{{- $b := 1}}

@group(0) @binding(0) var<storage, read> src: array<f32>;
{{- if .Pair}}
@group(0) @binding(1) var<storage, read> src2: array<f32>;
{{- $b = 2}}
{{- end}}
{{- if .DevPos}}
@group(0) @binding({{$b}}) var<storage, read> posbuf: array<u32>;
{{- $b = add $b 1}}
{{- end}}
@group(0) @binding({{$b}}) var<storage, read_write> cache: array<{{if .Half1}}u32{{else}}f32{{end}}>;
{{- $b = add $b 1}}
{{- if .Pair}}
@group(0) @binding({{$b}}) var<storage, read_write> cache2: array<{{if .Half2}}u32{{else}}f32{{end}}>;
{{- $b = add $b 1}}
{{- else if .Out}}
@group(0) @binding({{$b}}) var<storage, read_write> out: array<f32>;
{{- $b = add $b 1}}
{{- end}}
@group(0) @binding({{$b}}) var<uniform> params: Params;

struct Params {
  n: u32,       // invocations: elements of src (Half1: element pairs)
  block: u32,   // S·H·D: one batch of src, contiguous in the cache too
  dst0: u32,    // input_pos·H·D: the first cache element written per batch
  bstride: u32, // max_S·H·D: one batch of the cache
  // Pair: the same for src2 into cache2 (both caches of one attention).
  n2: u32,
  block2: u32,
  dst02: u32,
  bstride2: u32,
{{- if .DevOff}}
  // DevOff: dst0 (dst02) is the offset from input_pos's row, and
  // input_pos (posbuf[0]) times row (row2) is added to it.
  row: u32,
  row2: u32,
{{- end}}
}

// Cache row update: cache[b, pos + s, h, d] = src[b, s, h, d]. Per batch the
// S rows of H·D elements are contiguous in both tensors. With Pair, the
// invocations past the first n do src2 into cache2. A half cache's
// invocation writes elements 2e and 2e+1 (one batch: block is even) as
// one word.
@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let e = gid.x + gid.y * (nwg.x * {{.WG}}u);
{{- if .DevOff}}
  let dst0 = params.dst0 + posbuf[0] * params.row;
  let dst02 = params.dst02 + posbuf[0] * params.row2;
{{- else if .DevPos}}
  // dst0 (dst02) holds the row length: the rows written start at
  // input_pos (posbuf[0]).
  let dst0 = posbuf[0] * params.dst0;
  let dst02 = posbuf[0] * params.dst02;
{{- else}}
  let dst0 = params.dst0;
  let dst02 = params.dst02;
{{- end}}
{{- if .Out}}
  if (e == 0u) { out[0] = 0.0; }
{{- end}}
{{- if .Pair}}
  if (e >= params.n) {
    let f = e - params.n;
    if (f >= params.n2) { return; }
{{- if .Half2}}
    let t = 2u * f;
    cache2[(t / params.block2 * params.bstride2 + dst02 + t % params.block2) >> 1u] = pack2x16float(vec2<f32>(src2[t], src2[t + 1u]));
{{- else}}
    cache2[f / params.block2 * params.bstride2 + dst02 + f % params.block2] = src2[f];
{{- end}}
    return;
  }
{{- else}}
  if (e >= params.n) { return; }
{{- end}}
{{- if .Half1}}
  let t = 2u * e;
  cache[(t / params.block * params.bstride + dst0 + t % params.block) >> 1u] = pack2x16float(vec2<f32>(src[t], src[t + 1u]));
{{- else}}
  let b = e / params.block;
  cache[b * params.bstride + dst0 + e % params.block] = src[e];
{{- end}}
}
{{- else}}

{{- $t := "f32"}}{{if .Vec4}}{{$t = "vec4<f32>"}}{{end}}
{{- if .Combine}}
@group(0) @binding(0) var<storage, read> part: array<vec4<f32>>;
{{- $b := 1}}
{{- if .DevPos}}
@group(0) @binding(1) var<storage, read> posbuf: array<u32>;
{{- $b = 2}}
{{- end}}
@group(0) @binding({{$b}}) var<storage, read_write> out: array<{{$t}}>;
@group(0) @binding({{add $b 1}}) var<uniform> params: Params;
{{- else}}
@group(0) @binding(0) var<storage, read> q: array<{{$t}}>;
{{- $h := "u32"}}{{if .Vec4}}{{$h = "vec2<u32>"}}{{end}}
@group(0) @binding(1) var<storage, read> k: array<{{if .HalfK}}{{$h}}{{else}}{{$t}}{{end}}>;
@group(0) @binding(2) var<storage, read> v: array<{{if .HalfV}}{{$h}}{{else}}{{$t}}{{end}}>;
{{- $b := 3}}
{{- if .Mask}}
@group(0) @binding(3) var<storage, read> mask: array<{{if .BoolMask}}u32{{else}}f32{{end}}>;
{{- $b = 4}}
{{- end}}
{{- if .DevPos}}
@group(0) @binding({{$b}}) var<storage, read> posbuf: array<u32>;
{{- $b = add $b 1}}
{{- end}}
{{- if .Split}}
@group(0) @binding({{$b}}) var<storage, read_write> part: array<vec4<f32>>;
{{- else}}
@group(0) @binding({{$b}}) var<storage, read_write> out: array<{{$t}}>;
{{- end}}
@group(0) @binding({{add $b 1}}) var<uniform> params: Params;
{{- end}}

struct Params {
  groups: u32,     // workgroups: B·Hkv·ceil(g·Sq / rows per workgroup)
  sq: u32,
  hkv: u32,        // kv heads (Hq / g)
  g: u32,          // query heads per kv head
  nkeys: u32,      // keys 0..nkeys-1 are visible
  causal: u32,     // nonzero: key j visible to row i only if j <= i + causal_off
  causal_off: u32, // DevPos: nkeys and causal_off are offsets from input_pos (posbuf[0])
  scale: f32,
  q_sb: u32, q_sh: u32, q_ss: u32, k_sb: u32,
  k_sh: u32, k_ss: u32, v_sb: u32, v_sh: u32,
  v_ss: u32, o_sb: u32, o_sh: u32, o_ss: u32,
  m_sb: u32, m_sh: u32, m_sq: u32, m_sk: u32,
{{- if or .Split .Combine}}
  nsplit: u32,     // key blocks per row
  block: u32,      // keys per block
  _s0: u32,
  _s1: u32,
{{- end}}
}

const L: u32 = {{.Lanes}}u;
const V4: u32 = {{len .VChunks}}u;

// Per row of the workgroup: each lane's running max and sum, then its
// rescaled output vec4s.
{{- if not .Combine}}
var<workgroup> wm: array<f32, {{.WRows}}>;
var<workgroup> wl: array<f32, {{.WRows}}>;
var<workgroup> wacc: array<vec4<f32>, {{.WAcc}}>;
{{- end}}

// Maxima through common.tmpl's fmax (NaN wins, on the bits), and "is not
// -inf" on the bits, so that a NaN score reaches the output as torch's
// softmax gives it, whatever the adapter assumes about NaN.
{{template "num" (args "T" "f32")}}

fn finite_or_nan(v: f32) -> bool {
  return bitcast<u32>(v) != 0xff800000u;
}
{{- if or .Combine (not .Split)}}

// store_out writes r, the output row's vec4 d, the row at element offset
// oo{{if and (not .Vec4) .VTail}} (the lanes past Dv dropped){{end}}.
fn store_out(oo: u32, d: u32, r: vec4<f32>) {
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
{{- end}}

{{- if .Combine}}

// One workgroup per output row ρ = (b·hkv + hk)·g·Sq + x, the numbering
// Split writes its blocks in.
@compute @workgroup_size({{.Lanes}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
  let rho = wid.x + wid.y * nwg.x;
  let nx = params.g * params.sq;
  let per = (nx + {{len .Rows}}u - 1u) / {{len .Rows}}u;
  if (rho >= params.groups / per * nx) { return; }
  let x = rho % nx;
  let bk = rho / nx;
  let hk = bk % params.hkv;
  let b = bk / params.hkv;
  let i = x % params.sq;
  let h = hk * params.g + x / params.sq;
  let neg_inf = bitcast<f32>(0xff800000u);
{{- template "key_window" .}}
  var nk = nkeys;
  if (params.causal != 0u) { nk = min(nk, i + causal_off + 1u); }
  let p0 = rho * params.nsplit * (V4 + 1u);
  // The row's blocks that hold keys (Split writes no other).
  let ns = min(params.nsplit, (nk + params.block - 1u) / params.block);
  var mx = neg_inf;
  for (var s = 0u; s < ns; s++) { mx = fmax(mx, part[p0 + s * (V4 + 1u)].x); }
  var sum = 0.0;
  for (var s = 0u; s < ns; s++) {
    let hd = part[p0 + s * (V4 + 1u)];
    if (finite_or_nan(hd.x)) { sum += hd.y * exp(hd.x - mx); }
  }
  let oo = b * params.o_sb + h * params.o_sh + i * params.o_ss;
  for (var d = lane; d < V4; d += L) {
    var r = vec4<f32>(0.0);
    for (var s = 0u; s < ns; s++) {
      let ps = p0 + s * (V4 + 1u);
      let ms = part[ps].x;
      if (finite_or_nan(ms)) { r += part[ps + 1u + d] * exp(ms - mx); }
    }
    // No keys at all (Skv = 0) gives zeros, as torch's empty matmul.
    r = select(r / sum, vec4<f32>(0.0), nk == 0u);
    store_out(oo, d, r);
  }
}
{{- else}}

@compute @workgroup_size({{.Lanes}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
{{- if .Split}}
  // Workgroup (group of rows, block s) of groups·nsplit.
  let gi = wid.x + wid.y * nwg.x;
  if (gi >= params.groups * params.nsplit) { return; }
  let grp = gi % params.groups;
  let blk = gi / params.groups;
{{- else}}
  let grp = wid.x + wid.y * nwg.x;
  if (grp >= params.groups) { return; }
{{- end}}
  // The g·Sq query rows that read kv head hk, numbered x = (h − hk·g)·Sq
  // + i, are served len(Rows) at a time.
  let nx = params.g * params.sq;
  let per = (nx + {{len .Rows}}u - 1u) / {{len .Rows}}u;
  let row0 = (grp % per) * {{len .Rows}}u;
  let bk = grp / per;
  let hk = bk % params.hkv;
  let b = bk / params.hkv;
  let neg_inf = bitcast<f32>(0xff800000u);
  let s = params.scale;
  let kb = b * params.k_sb + hk * params.k_sh;
  let vb = b * params.v_sb + hk * params.v_sh;
{{- template "key_window" .}}
  var nk_max = 0u;
{{- range $r := .Rows}}
  // Row {{$r}}: x = row0+{{$r}}, clamped to the last row (its results are
  // not written when past g·Sq).
  let x{{$r}} = min(row0 + {{$r}}u, nx - 1u);
  let i{{$r}} = x{{$r}} % params.sq;
  let h{{$r}} = hk * params.g + x{{$r}} / params.sq;
  let qo{{$r}} = b * params.q_sb + h{{$r}} * params.q_sh + i{{$r}} * params.q_ss;
{{- range $.QChunks}}
{{- if $.Vec4}}
  let q{{$r}}_{{.I}} = s * q[(qo{{$r}} >> 2u) + {{.I}}u];
{{- else}}
  let q{{$r}}_{{.I}} = s * vec4<f32>(q[qo{{$r}} + {{.Off}}u], {{if gt .N 1}}q[qo{{$r}} + {{.Off}}u + 1u]{{else}}0.0{{end}}, {{if gt .N 2}}q[qo{{$r}} + {{.Off}}u + 2u]{{else}}0.0{{end}}, {{if gt .N 3}}q[qo{{$r}} + {{.Off}}u + 3u]{{else}}0.0{{end}});
{{- end}}
{{- end}}
  var nk{{$r}} = nkeys;
  if (params.causal != 0u) { nk{{$r}} = min(nk{{$r}}, i{{$r}} + causal_off + 1u); }
  nk_max = max(nk_max, nk{{$r}});
{{- if $.Mask}}
  let mo{{$r}} = b * params.m_sb + h{{$r}} * params.m_sh + i{{$r}} * params.m_sq;
{{- end}}
  var m{{$r}} = neg_inf;
  var l{{$r}} = 0.0;
{{- range $.VChunks}}
  var acc{{$r}}_{{.I}} = vec4<f32>(0.0);
{{- end}}
{{- end}}

{{- if .Split}}
  let j0 = blk * params.block;
  // A block past every row's keys writes nothing: Combine reads only a
  // row's blocks below its key count (at a short position most of the
  // grid returns here).
  if (j0 >= nk_max) { return; }
  let j1 = min(j0 + params.block, nk_max);
  for (var j = j0 + lane; j < j1; j += L) {
{{- else}}
  for (var j = lane; j < nk_max; j += L) {
{{- end}}
    let ko = kb + j * params.k_ss;
{{- range .QChunks}}
{{- if and $.HalfK $.Vec4}}
    let kh{{.I}} = k[(ko >> 2u) + {{.I}}u];
    let k{{.I}} = vec4<f32>(unpack2x16float(kh{{.I}}.x), unpack2x16float(kh{{.I}}.y));
{{- else if $.HalfK}}
    let k{{.I}} = vec4<f32>(unpack2x16float(k[(ko + {{.Off}}u) >> 1u]), {{if gt .N 2}}unpack2x16float(k[((ko + {{.Off}}u) >> 1u) + 1u]){{else}}vec2<f32>(0.0){{end}});
{{- else if $.Vec4}}
    let k{{.I}} = k[(ko >> 2u) + {{.I}}u];
{{- else}}
    let k{{.I}} = vec4<f32>(k[ko + {{.Off}}u], {{if gt .N 1}}k[ko + {{.Off}}u + 1u]{{else}}0.0{{end}}, {{if gt .N 2}}k[ko + {{.Off}}u + 2u]{{else}}0.0{{end}}, {{if gt .N 3}}k[ko + {{.Off}}u + 3u]{{else}}0.0{{end}});
{{- end}}
{{- end}}
    let vo = vb + j * params.v_ss;
{{- range .VChunks}}
{{- if and $.HalfV $.Vec4}}
    let vh{{.I}} = v[(vo >> 2u) + {{.I}}u];
    let v{{.I}} = vec4<f32>(unpack2x16float(vh{{.I}}.x), unpack2x16float(vh{{.I}}.y));
{{- else if $.HalfV}}
    let v{{.I}} = vec4<f32>(unpack2x16float(v[(vo + {{.Off}}u) >> 1u]), {{if gt .N 2}}unpack2x16float(v[((vo + {{.Off}}u) >> 1u) + 1u]){{else}}vec2<f32>(0.0){{end}});
{{- else if $.Vec4}}
    let v{{.I}} = v[(vo >> 2u) + {{.I}}u];
{{- else}}
    let v{{.I}} = vec4<f32>(v[vo + {{.Off}}u], {{if gt .N 1}}v[vo + {{.Off}}u + 1u]{{else}}0.0{{end}}, {{if gt .N 2}}v[vo + {{.Off}}u + 2u]{{else}}0.0{{end}}, {{if gt .N 3}}v[vo + {{.Off}}u + 3u]{{else}}0.0{{end}});
{{- end}}
{{- end}}
{{- range $r := .Rows}}
    {
      var sc = 0.0{{range $.QChunks}} + dot(q{{$r}}_{{.I}}, k{{.I}}){{end}};
{{- if $.Mask}}
      let mi = mo{{$r}} + j * params.m_sk;
{{- if $.BoolMask}}
      if (((mask[mi >> 2u] >> ((mi & 3u) * 8u)) & 0xffu) == 0u) { sc = neg_inf; }
{{- else}}
      sc += mask[mi];
{{- end}}
{{- end}}
      if (j >= nk{{$r}}) { sc = neg_inf; }
      if (finite_or_nan(sc)) {
        let mn = fmax(m{{$r}}, sc);
        let corr = exp(m{{$r}} - mn);
        let p = exp(sc - mn);
        l{{$r}} = l{{$r}} * corr + p;
{{- range $.VChunks}}
        acc{{$r}}_{{.I}} = acc{{$r}}_{{.I}} * corr + p * v{{.I}};
{{- end}}
        m{{$r}} = mn;
      }
    }
{{- end}}
  }

  // Merge the lanes' partial softmax states, row by row.
{{- range $r := .Rows}}
  wm[{{$r}}u * L + lane] = m{{$r}};
  wl[{{$r}}u * L + lane] = l{{$r}};
{{- end}}
  workgroupBarrier();
{{- range $r := .Rows}}
  {
    var mx = neg_inf;
    for (var t = 0u; t < L; t++) { mx = fmax(mx, wm[{{$r}}u * L + t]); }
    var c = 0.0;
    if (finite_or_nan(m{{$r}})) { c = exp(m{{$r}} - mx); }
{{- range $.VChunks}}
    wacc[({{$r}}u * L + lane) * V4 + {{.I}}u] = acc{{$r}}_{{.I}} * c;
{{- end}}
  }
{{- end}}
  workgroupBarrier();
{{- range $r := .Rows}}
  if (row0 + {{$r}}u < nx) {
    var mx = neg_inf;
    for (var t = 0u; t < L; t++) { mx = fmax(mx, wm[{{$r}}u * L + t]); }
    var sum = 0.0;
    for (var t = 0u; t < L; t++) {
      let mt = wm[{{$r}}u * L + t];
      if (finite_or_nan(mt)) { sum += wl[{{$r}}u * L + t] * exp(mt - mx); }
    }
{{- if $.Split}}
    // The block's partial state of row ρ (see Combine).
    let pp = ((bk * nx + row0 + {{$r}}u) * params.nsplit + blk) * (V4 + 1u);
    if (lane == 0u) { part[pp] = vec4<f32>(mx, sum, 0.0, 0.0); }
    for (var d = lane; d < V4; d += L) {
      var r = vec4<f32>(0.0);
      for (var t = 0u; t < L; t++) { r += wacc[({{$r}}u * L + t) * V4 + d]; }
      part[pp + 1u + d] = r;
    }
{{- else}}
    let oo = b * params.o_sb + h{{$r}} * params.o_sh + i{{$r}} * params.o_ss;
    for (var d = lane; d < V4; d += L) {
      var r = vec4<f32>(0.0);
      for (var t = 0u; t < L; t++) { r += wacc[({{$r}}u * L + t) * V4 + d]; }
      // No keys at all (Skv = 0) gives zeros, as torch's empty matmul.
      r = select(r / sum, vec4<f32>(0.0), nk{{$r}} == 0u);
      store_out(oo, d, r);
    }
{{- end}}
  }
{{- end}}
}
{{- end}}
{{- end}}
{{- /* "key_window": nkeys and causal_off (Params), from input_pos on the
device (posbuf[0]) with DevPos. */}}
{{- define "key_window"}}
{{- if .DevPos}}
  let nkeys = params.nkeys + posbuf[0];
  let causal_off = params.causal_off + posbuf[0];
{{- else}}
  let nkeys = params.nkeys;
  let causal_off = params.causal_off;
{{- end}}
{{- end}}
