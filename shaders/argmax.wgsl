// argmax.wgsl: the index of the largest element of one row of x, the
// first of equals, a NaN never picked unless the whole row is NaN (then
// index 0): the token llm's sampler picks at temperature 0 (argmax in
// llm/sample.go), computed where the logits are, so that a greedy decode
// step reads back 4 bytes instead of the vocabulary's logits (graph's
// Head). result[0] receives the index. With Advance (a decoder whose
// position the graph holds on the device, graph/devicepos.go), the
// kernel also adds the step's token count to the position, pos[0], so
// that the next step, fed this pick on the device, finds its position
// there too.
//
// Stage "one": one workgroup of {{.WG}} lanes scans the row: each lane a
// strided part, then a workgroup tree keeps the larger key, the smaller
// index on ties. Stages "part" and "final" are the same in two levels,
// for long rows: "part" runs one workgroup per chunk of params.chunk
// elements, each writing its chunk's best (key, index) to part[w];
// "final", one workgroup, reduces those the same way. Values are
// compared as integer keys of their bits, so the order is exact on an
// adapter that flushes subnormals or assumes no NaN.
{{- if eq .Stage "final"}}
@group(0) @binding(0) var<storage, read> part: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> result: array<u32>;
{{- else}}
@group(0) @binding(0) var<storage, read> x: array<f32>;
{{- if eq .Stage "part"}}
@group(0) @binding(1) var<storage, read_write> part: array<vec2<u32>>;
{{- else}}
@group(0) @binding(1) var<storage, read_write> result: array<u32>;
{{- end}}
{{- end}}
{{- if and .Advance (ne .Stage "part")}}
@group(0) @binding(2) var<storage, read_write> pos: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
{{- else}}
@group(0) @binding(2) var<uniform> params: Params;
{{- end}}

// Go twin: argmaxParams in graph/head.go.
struct Params {
  base: u32,  // the row's first element
  n: u32,     // the row's length
  adv: u32,   // Advance: the tokens the step fed
  chunk: u32, // "part", "final": elements per workgroup of "part"
}

var<workgroup> sk: array<u32, {{.WG}}>;
var<workgroup> si: array<u32, {{.WG}}>;

const none = 0xffffffffu;

// key maps v's bits to an unsigned integer in the order of the values,
// both zeros equal and NaN below every number (-Inf included).
fn key(v: f32) -> u32 {
  let b = bitcast<u32>(v);
  let m = b & 0x7fffffffu;
  if (m > 0x7f800000u) {
    return 0u;
  }
  if (m == 0u) {
    return 0x80000000u;
  }
  return select(b | 0x80000000u, ~b, (b >> 31u) != 0u);
}

// better reports whether (ka, ia) beats (kb, ib): a larger key, or the
// same key at a smaller index (none, a lane with no elements, loses).
fn better(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
  return ka > kb || (ka == kb && ia < ib);
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  var bk = 0u;
  var bi = none;
{{- if eq .Stage "final"}}
  let groups = (params.n + params.chunk - 1u) / params.chunk;
  for (var j = lid; j < groups; j += {{.WG}}u) {
    let p = part[j];
    if (better(p.x, p.y, bk, bi)) {
      bk = p.x;
      bi = p.y;
    }
  }
{{- else}}
{{- if eq .Stage "part"}}
  let lo = wid.x * params.chunk;
  let hi = min(lo + params.chunk, params.n);
{{- else}}
  let lo = 0u;
  let hi = params.n;
{{- end}}
  for (var i = lo + lid; i < hi; i += {{.WG}}u) {
    let k = key(x[params.base + i]);
    if (bi == none || k > bk) {
      bk = k;
      bi = i;
    }
  }
{{- end}}
  sk[lid] = bk;
  si[lid] = bi;
  workgroupBarrier();
{{- range .Strides}}
  if (lid < {{.}}u && better(sk[lid + {{.}}u], si[lid + {{.}}u], sk[lid], si[lid])) {
    sk[lid] = sk[lid + {{.}}u];
    si[lid] = si[lid + {{.}}u];
  }
  workgroupBarrier();
{{- end}}
  if (lid == 0u) {
{{- if eq .Stage "part"}}
    part[wid.x] = vec2<u32>(sk[0], si[0]);
{{- else}}
    result[0] = select(si[0], 0u, si[0] == none);
{{- if .Advance}}
    pos[0] = pos[0] + params.adv;
{{- end}}
{{- end}}
  }
}
