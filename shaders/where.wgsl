// where.wgsl: out = c ? a : b for aten.where.self (ops/where.go), with c, a
// and b broadcast together. The variant (whereVariant):
//
//   - AT, BT, OT: element types of a, b and out: f32, i32 or u8 (bool,
//     packed four to a u32 word, so the binding is array<u32>). a and b
//     are converted to OT. c is always bool.
//   - Rank: merged dims, baked in so the index walk unrolls.
//
// A f32 or i32 out gets one output per invocation. A bool out gets one
// whole word per invocation (outputs 4w..4w+3, fewer in the last word), so
// no two invocations write the same word.
@group(0) @binding(0) var<storage, read> c: array<u32>;
@group(0) @binding(1) var<storage, read> a: array<{{.ABuf}}>;
@group(0) @binding(2) var<storage, read> b: array<{{.BBuf}}>;
@group(0) @binding(3) var<storage, read_write> o: array<{{.OBuf}}>;

// Go twin: ewParams in ops/binary.go.
struct Params {
  n: u32,      // invocations with work
  numel: u32,  // output elements
  alpha_f: f32,
  alpha_i: i32,
  s_f: f32,
  s_i: i32,
  rank: u32,
  _pad: u32,
  dims: array<vec4<u32>, 2>,  // merged out dims, innermost first
  s0: array<vec4<u32>, 2>,    // c's element strides, 0 where broadcast
  s1: array<vec4<u32>, 2>,    // a's
  s2: array<vec4<u32>, 2>,    // b's
}
@group(0) @binding(4) var<uniform> params: Params;

fn byte_of(w: u32, e: u32) -> u32 {
  return (w >> ((e & 3u) * 8u)) & 0xffu;
}

// The value type: a bool out holds its byte (0 or 1) in a u32.
fn load_a(e: u32) -> {{.OBuf}} {
{{- if eq .AT "u8"}}
  return {{.OBuf}}(byte_of(a[e >> 2u], e));
{{- else}}
  return {{.OBuf}}(a[e]);
{{- end}}
}

fn load_b(e: u32) -> {{.OBuf}} {
{{- if eq .BT "u8"}}
  return {{.OBuf}}(byte_of(b[e >> 2u], e));
{{- else}}
  return {{.OBuf}}(b[e]);
{{- end}}
}

// offsets returns the elements of c, a and b that output i reads.
fn offsets(i: u32) -> vec3<u32> {
{{- if eq .Rank 1}}
  return i * vec3<u32>(params.s0[0].x, params.s1[0].x, params.s2[0].x);
{{- else}}
  var rem = i;
  var e = vec3<u32>();
  for (var k = 0u; k < {{.Rank}}u; k++) {
    let n = params.dims[k / 4u][k % 4u];
    let q = rem % n;
    rem = rem / n;
    e += q * vec3<u32>(params.s0[k / 4u][k % 4u], params.s1[k / 4u][k % 4u], params.s2[k / 4u][k % 4u]);
  }
  return e;
{{- end}}
}

fn pick(i: u32) -> {{.OBuf}} {
  let e = offsets(i);
  return select(load_b(e.z), load_a(e.y), byte_of(c[e.x >> 2u], e.x) != 0u);
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let w = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (w >= params.n) { return; }
{{- if eq .OT "u8"}}
  let first = w * 4u;
  let count = min(4u, params.numel - first);
  var word = 0u;
  for (var j = 0u; j < count; j++) {
    word |= min(pick(first + j), 1u) << (j * 8u);
  }
  o[w] = word;
{{- else}}
  o[w] = pick(w);
{{- end}}
}
