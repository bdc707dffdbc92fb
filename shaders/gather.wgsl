// gather.wgsl: out[e] = src[f(e)], the strided / indexed gather behind the
// shape and indexing ops (slice, select, split, cat, expand, repeat,
// repeat_interleave, flip, index_select, gather, index.Tensor, embedding).
//
// Go describes f as a plan over the output's (coalesced, row-major) dims:
// output element e has coordinates c[k] (dims[k], innermost last) and
//   f(e) = base + sum_k c[k]*strides[k] + sum_j wrap(idx_j[p_j]) * isz[j].y
// where p_j = sum_k c[k]*istr_j[k] is the position read in index tensor j
// (int32), wrap adds isz[j].x (the indexed dim's size) to a negative index,
// and an index still outside [0, isz[j].x) makes the element zero.
// When the plan has a region dim (cat: one dispatch per input), only
// elements whose coordinate along it lies in [lo, hi) are written; the
// others keep what the output word already holds (another dispatch of the
// same op writes them; dispatches run in order).
//
// Each invocation writes one whole u32 output word: one element for ES 4,
// and for ES 2 / ES 1 the 2 / 4 elements packed in it, each read from its
// own source word, so no two invocations ever share a word. At ES 4 the
// unit T may be a vec4<u32> (Go widened the plan: the innermost dim moves
// whole, aligned vec4s). Invocation i handles unit w0 + i. The per-axis
// steps are unrolled by the template.
{{- if eq .ES 4}}
@group(0) @binding(0) var<storage, read> src: array<{{.T}}>;
{{- else}}
@group(0) @binding(0) var<storage, read> src: array<u32>;
{{- end}}
{{- range .Idx}}
@group(0) @binding({{.B}}) var<storage, read> idx{{.J}}: array<i32>;
{{- end}}
{{- if eq .ES 4}}
@group(0) @binding({{.OutB}}) var<storage, read_write> dst: array<{{.T}}>;
{{- else}}
@group(0) @binding({{.OutB}}) var<storage, read_write> dst: array<u32>;
{{- end}}

struct Params {
  words: u32,   // invocations with work
  numel: u32,   // output elements (in ES units)
  w0: u32,      // first output word
  base: i32,
  lo: u32,
  hi: u32,
  _p0: u32,
  _p1: u32,
  dims: array<vec4<u32>, 4>,
  strides: array<vec4<i32>, 4>,
{{- if .Idx}}
  istr: array<vec4<u32>, {{.IStrVecs}}>, // index j, dim k at [4j + k/4][k%4]
  isz: array<vec4<i32>, {{len .Idx}}>,   // x: indexed dim's size, y: its stride in src
{{- end}}
}
@group(0) @binding({{.ParB}}) var<uniform> params: Params;

// src_of returns the source element of output element e, -1 when an index
// is out of range (write zero) and -2 outside the region (keep).
fn src_of(e: u32) -> i32 {
  var rest = e;
  var s = params.base;
{{- range .Idx}}
  var p{{.J}} = 0u;
{{- end}}
{{- range .Axes}}
  {
{{- if .First}}
    let c = rest;
{{- else}}
    let d = params.dims[{{.V}}][{{.C}}];
    let c = rest % d;
    rest = rest / d;
{{- end}}
    s += i32(c) * params.strides[{{.V}}][{{.C}}];
{{- $ax := .}}
{{- range $.Idx}}
    p{{.J}} += c * params.istr[{{.J}} * 4 + {{$ax.V}}][{{$ax.C}}];
{{- end}}
{{- if .Region}}
    if (c < params.lo || c >= params.hi) { return -2; }
{{- end}}
  }
{{- end}}
{{- range .Idx}}
  {
    var v = idx{{.J}}[p{{.J}}];
    let n = params.isz[{{.J}}].x;
    if (v < 0) { v += n; }
    if (v < 0 || v >= n) { return -1; }
    s += v * params.isz[{{.J}}].y;
  }
{{- end}}
  return s;
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.words) { return; }
  let w = params.w0 + i;
{{- if eq .ES 4}}
  let s = src_of(w);
{{- if .HasRegion}}
  if (s == -2) { return; }
{{- end}}
  var v = {{.T}}();
  if (s >= 0) { v = src[u32(s)]; }
  dst[w] = v;
{{- else}}
{{- if .HasRegion}}
  var word = dst[w];
{{- else}}
  var word = 0u;
{{- end}}
{{- range .Subs}}
  {
    let e = w * {{$.Per}}u + {{.}}u;
    if (e < params.numel) {
      let s = src_of(e);
      if (s != -2) {
        var v = 0u;
        if (s >= 0) {
          let u = u32(s);
          v = (src[u >> {{$.Shift}}u] >> ((u & {{$.SubMask}}u) * {{$.Bits}}u)) & {{$.Mask}}u;
        }
        word = (word & ~({{$.Mask}}u << ({{.}}u * {{$.Bits}}u))) | (v << ({{.}}u * {{$.Bits}}u));
      }
    }
  }
{{- end}}
  dst[w] = word;
{{- end}}
}
