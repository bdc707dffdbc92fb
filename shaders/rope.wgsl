// rope.wgsl: rotary position embedding, float32, one output element per
// invocation (1-D grid folded to 2-D past 65535 workgroups). With Pair,
// one dispatch rotates two tensors (llama's q and k) with one table: the
// invocations past x's n elements do xk's n2, whose rows have row_div2
// rows per position.
//
// x is viewed as rows of d elements; row r sits at sequence position
// s = (r / row_div) % seq and reads table row t = s + start. Two pairings:
//
//   pairs (HF false): elements 2j and 2j+1 rotate together by angle j:
//     out[2j]   = x[2j]·cos − x[2j+1]·sin
//     out[2j+1] = x[2j]·sin + x[2j+1]·cos
//     with cos at cos_t·t + cos_j·j and sin at that index + sin_off (the
//     llama tables are [S, d/2] each; the interleaved table holds (cos,
//     sin) pairs, bound as both and read with cos_j = 2, sin_off = 1).
//   rotate_half (HF true), over the first rd elements (h = rd/2):
//     out[j]   = x[j]·cos[j] − x[j+h]·sin[j]      (j < h)
//     out[j]   = x[j]·cos[j] + x[j−h]·sin[j]      (h ≤ j < rd)
//     out[j]   = x[j]                              (j ≥ rd)
//     with the tables [T, rd] and cos/sin at cos_t·t + j.

//
// With Cache (Pair only; ops/fuse_rope.go), the dispatch also does the KV
// cache update of the attention that follows: xk's rotated rows go to
// kcache rows pos.. instead of to outk (cache element
// f / k_block · k_bstride + k_dst0 + f % k_block, as attention.wgsl's
// update), and the invocations past xk's do v's n3 elements into vcache.
//
// A decoder's position on the device (ops.Builder.DevicePos), read from
// posbuf[0]: with DevStart the table row of position 0 is start plus it,
// with DevCache the cache rows written start at it (k_dst0 and v_dst0
// hold the row lengths), with DevCacheOff at k_dst0 (v_dst0) plus it
// times k_row (v_row); the params then stay the same at every step.

@group(0) @binding(0) var<storage, read> x: array<f32>;
{{- $ko := "outk[f]"}}
{{- $b := 1}}
{{- if .Pair}}
@group(0) @binding(1) var<storage, read> xk: array<f32>;
{{- $b = 2}}
{{- end}}
@group(0) @binding({{$b}}) var<storage, read> fcos: array<f32>;
@group(0) @binding({{add $b 1}}) var<storage, read> fsin: array<f32>;
{{- $b = add $b 2}}
{{- if .Cache}}
{{- $ko = "kcache[f / params.k_block * params.k_bstride + k_dst0 + f % params.k_block]"}}
@group(0) @binding({{$b}}) var<storage, read> v: array<f32>;
{{- $b = add $b 1}}
{{- end}}
{{- if or .DevStart .DevCache}}
@group(0) @binding({{$b}}) var<storage, read> posbuf: array<u32>;
{{- $b = add $b 1}}
{{- end}}
@group(0) @binding({{$b}}) var<storage, read_write> out: array<f32>;
{{- $b = add $b 1}}
{{- if .Cache}}
@group(0) @binding({{$b}}) var<storage, read_write> kcache: array<f32>;
@group(0) @binding({{add $b 1}}) var<storage, read_write> vcache: array<f32>;
{{- $b = add $b 2}}
{{- else if .Pair}}
@group(0) @binding({{$b}}) var<storage, read_write> outk: array<f32>;
{{- $b = add $b 1}}
{{- end}}
@group(0) @binding({{$b}}) var<uniform> params: Params;

struct Params {
  n: u32,        // elements of x
  d: u32,        // row length
  row_div: u32,  // rows per sequence position (heads)
  seq: u32,      // sequence length
  start: u32,    // first table row
  cos_t: u32,    // table stride per position
  cos_j: u32,    // table stride per pair (pairs mode)
  sin_off: u32,  // sin index minus cos index (pairs mode)
  rd: u32,       // rotated elements per row (rotate_half mode)
  n2: u32,       // elements of xk (Pair)
  row_div2: u32, // xk's rows per sequence position (Pair)
  _p2: u32,
{{- if .Cache}}
  n3: u32,       // elements of v
  k_block: u32,  // cache update of k: S·H·D, the cache's first row's element, batch stride
  k_dst0: u32,
  k_bstride: u32,
  v_block: u32,  // and of v
  v_dst0: u32,
  v_bstride: u32,
  _p3: u32,
{{- if .DevCacheOff}}
  k_row: u32,    // DevCacheOff: k_dst0 and v_dst0 are offsets from input_pos's row,
  v_row: u32,    // input_pos (posbuf[0]) times k_row and v_row is added to them
  _p4: u32,
  _p5: u32,
{{- end}}
{{- end}}
}

// partner is the index of the element element e (at j in its row) rotates
// with.
fn partner(e: u32, j: u32) -> u32 {
{{- if .HF}}
  let h = params.rd / 2u;
  if (j < h) {
    return e + h;
  }
  return e - h;
{{- else}}
  if ((j & 1u) == 0u) {
    return e + 1u;
  }
  return e - 1u;
{{- end}}
}

// rotated is element j of a row at table row t, xe its value and xp its
// partner's.
fn rotated(j: u32, t: u32, xe: f32, xp: f32) -> f32 {
{{- if .HF}}
  let c = fcos[t * params.cos_t + j];
  let s = fsin[t * params.cos_t + j];
  if (j < params.rd / 2u) {
    return xe * c - xp * s;
  }
  return xe * c + xp * s;
{{- else}}
  let ci = t * params.cos_t + (j / 2u) * params.cos_j;
  let c = fcos[ci];
  let s = fsin[ci + params.sin_off];
  if ((j & 1u) == 0u) {
    return xe * c - xp * s;
  }
  return xp * s + xe * c;
{{- end}}
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let e = gid.x + gid.y * (nwg.x * {{.WG}}u);
{{- if .DevStart}}
  let start = params.start + posbuf[0];
{{- else}}
  let start = params.start;
{{- end}}
{{- if .Cache}}
{{- if .DevCacheOff}}
  let k_dst0 = params.k_dst0 + posbuf[0] * params.k_row;
  let v_dst0 = params.v_dst0 + posbuf[0] * params.v_row;
{{- else if .DevCache}}
  // k_dst0 (v_dst0) holds the row length: the rows written start at
  // input_pos (posbuf[0]).
  let k_dst0 = posbuf[0] * params.k_dst0;
  let v_dst0 = posbuf[0] * params.v_dst0;
{{- else}}
  let k_dst0 = params.k_dst0;
  let v_dst0 = params.v_dst0;
{{- end}}
{{- end}}
{{- if .Pair}}
  if (e >= params.n) {
    let f = e - params.n;
{{- if .Cache}}
    if (f >= params.n2) {
      let g = f - params.n2;
      if (g >= params.n3) { return; }
      vcache[g / params.v_block * params.v_bstride + v_dst0 + g % params.v_block] = v[g];
      return;
    }
{{- else}}
    if (f >= params.n2) { return; }
{{- end}}
    let jk = f % params.d;
    let tk = (f / params.d / params.row_div2) % params.seq + start;
{{- if .HF}}
    if (jk >= params.rd) {
      {{$ko}} = xk[f];
      return;
    }
{{- end}}
    {{$ko}} = rotated(jk, tk, xk[f], xk[partner(f, jk)]);
    return;
  }
{{- else}}
  if (e >= params.n) { return; }
{{- end}}
  let j = e % params.d;
  let t = (e / params.d / params.row_div) % params.seq + start;
{{- if .HF}}
  if (j >= params.rd) {
    out[e] = x[e];
    return;
  }
{{- end}}
  out[e] = rotated(j, t, x[e], x[partner(e, j)]);
}
