// compare.wgsl: bool out = a <op> b for the comparisons and logical ops
// (ops/compare.go), with NumPy broadcasting. The variant (compareVariant):
//
//   - Op: eq, ne, lt, le, gt, ge, or the logical and, or, xor.
//   - AT, BT: the inputs' element types, f32, i32 or u8 (bool, packed four
//     to a u32 word; ABuf/BBuf are then u32). CS: the type compared in.
//   - BScalar: b is the uniform params.s_f / s_i (the .Scalar ops).
//   - Rank: merged dims, baked in so the index walk unrolls.
//
// out is bool, packed four to a word, so each invocation writes one whole
// word (outputs 4w..4w+3, fewer in the last word) and no two invocations
// share one.
@group(0) @binding(0) var<storage, read> a: array<{{.ABuf}}>;
{{- if not .BScalar}}
@group(0) @binding(1) var<storage, read> b: array<{{.BBuf}}>;
{{- end}}
@group(0) @binding({{.OBind}}) var<storage, read_write> o: array<u32>;

// Go twin: ewParams in ops/binary.go.
struct Params {
  n: u32,      // invocations with work: output words
  numel: u32,  // output elements
  alpha_f: f32,
  alpha_i: i32,
  s_f: f32,    // the scalar b of a .Scalar op
  s_i: i32,
  rank: u32,
  _pad: u32,
  dims: array<vec4<u32>, 2>,  // merged out dims, innermost first
  s0: array<vec4<u32>, 2>,    // a's element strides, 0 where broadcast
  s1: array<vec4<u32>, 2>,    // b's
  s2: array<vec4<u32>, 2>,    // unused
}
@group(0) @binding({{.PBind}}) var<uniform> params: Params;

fn load_a(e: u32) -> {{.CS}} {
{{- if eq .AT "u8"}}
  return {{.CS}}((a[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu);
{{- else}}
  return {{.CS}}(a[e]);
{{- end}}
}

fn load_b(e: u32) -> {{.CS}} {
{{- if .BScalar}}
  return params.s_{{if eq .CS "f32"}}f{{else}}i{{end}};
{{- else if eq .BT "u8"}}
  return {{.CS}}((b[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu);
{{- else}}
  return {{.CS}}(b[e]);
{{- end}}
}

{{- if eq .CS "f32"}}

// The float tests look at the bits (common.tmpl): on lavapipe x != y is
// false when either is NaN (an ordered compare), x != 0 is false for NaN,
// and an adapter that flushes subnormals would compare them as 0.
{{template "num" (args "T" "f32")}}

fn nonzero(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) != 0u;
}
{{- else}}
fn nonzero(x: i32) -> bool {
  return x != 0;
}
{{- end}}

fn apply(x: {{.CS}}, y: {{.CS}}) -> bool {
{{- if eq .Op "and"}}
  return nonzero(x) && nonzero(y);
{{- else if eq .Op "or"}}
  return nonzero(x) || nonzero(y);
{{- else if eq .Op "xor"}}
  return nonzero(x) != nonzero(y);
{{- else if eq .CS "f32"}}
{{- if eq .Op "eq"}}
  return feq(x, y);
{{- else if eq .Op "ne"}}
  return !feq(x, y);
{{- else if eq .Op "lt"}}
  return flt(x, y);
{{- else if eq .Op "le"}}
  return fle(x, y);
{{- else if eq .Op "gt"}}
  return flt(y, x);
{{- else if eq .Op "ge"}}
  return fle(y, x);
{{- end}}
{{- else if eq .Op "eq"}}
  return x == y;
{{- else if eq .Op "ne"}}
  return x != y;
{{- else if eq .Op "lt"}}
  return x < y;
{{- else if eq .Op "le"}}
  return x <= y;
{{- else if eq .Op "gt"}}
  return x > y;
{{- else if eq .Op "ge"}}
  return x >= y;
{{- end}}
}

// offsets returns the elements of a and b that output i reads.
fn offsets(i: u32) -> vec2<u32> {
{{- if eq .Rank 1}}
  return i * vec2<u32>(params.s0[0].x, params.s1[0].x);
{{- else}}
  var rem = i;
  var e = vec2<u32>();
  for (var k = 0u; k < {{.Rank}}u; k++) {
    let n = params.dims[k / 4u][k % 4u];
    let c = rem % n;
    rem = rem / n;
    e += c * vec2<u32>(params.s0[k / 4u][k % 4u], params.s1[k / 4u][k % 4u]);
  }
  return e;
{{- end}}
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let w = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (w >= params.n) { return; }
  let first = w * 4u;
  let count = min(4u, params.numel - first);
  var word = 0u;
  for (var j = 0u; j < count; j++) {
    let e = offsets(first + j);
    if (apply(load_a(e.x), load_b(e.y))) {
      word |= 1u << (j * 8u);
    }
  }
  o[w] = word;
}
