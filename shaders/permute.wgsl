// permute.wgsl: out = self.permute(dims), contiguous row-major in and out.
//
// Each invocation writes one whole output u32 word, so no two invocations
// ever share a word (WGSL has no sub-word stores and we use no atomics):
//   ES 4: the word is one element.
//   ES 8: the word is half of one element (int64/float64 as two words).
//   ES 2: the word packs 2 elements, ES 1: 4 elements, each gathered from
//         its own input word and shifted into place. Bytes past the last
//         element are written as zero (they are the buffer's padding).
//
// Go coalesces the permutation first (drops size-1 axes, merges axes that
// stay adjacent), so RANK is usually small. For output axis i,
// out_stride[i] is its row-major stride in the output and in_stride[i] the
// stride of the input axis it came from, both in elements; the rank is at
// least 1. The per-axis steps are unrolled by the template: no loop
// back-edges.
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

struct Params {
  words: u32,   // output words
  numel: u32,   // output elements
  _p0: u32,
  _p1: u32,
  out_stride: array<vec4<u32>, 2>,
  in_stride: array<vec4<u32>, 2>,
}
@group(0) @binding(2) var<uniform> params: Params;

// src_elem maps output element e to its input element.
fn src_elem(e: u32) -> u32 {
  var rest = e;
  var s = 0u;
{{- range .Axes}}
  {
    let c = rest / params.out_stride[{{.}}u / 4u][{{.}}u % 4u];
    rest -= c * params.out_stride[{{.}}u / 4u][{{.}}u % 4u];
    s += c * params.in_stride[{{.}}u / 4u][{{.}}u % 4u];
  }
{{- end}}
  // The last output axis has stride 1: what is left is its coordinate.
  return s + rest * params.in_stride[{{.Last}}u / 4u][{{.Last}}u % 4u];
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let w = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (w >= params.words) { return; }
{{- if eq .ES 4}}
  dst[w] = src[src_elem(w)];
{{- else if eq .ES 8}}
  dst[w] = src[2u * src_elem(w >> 1u) + (w & 1u)];
{{- else}}
  var word = 0u;
{{- range .Subs}}
  {
    let e = w * {{len $.Subs}}u + {{.}}u;
    if (e < params.numel) {
      let s = src_elem(e);
{{- if eq $.ES 2}}
      word |= ((src[s >> 1u] >> ((s & 1u) * 16u)) & 0xffffu) << ({{.}}u * 16u);
{{- else}}
      word |= ((src[s >> 2u] >> ((s & 3u) * 8u)) & 0xffu) << ({{.}}u * 8u);
{{- end}}
    }
  }
{{- end}}
  dst[w] = word;
{{- end}}
}
