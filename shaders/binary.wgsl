// binary.wgsl: out = a <op> b for aten.{add,sub,mul,div}.Tensor, with
// NumPy broadcasting. ops/binary.go picks the variant (binaryVariant):
//
//   - Op: add, sub (both scale b by alpha), mul, div.
//   - ABuf, BBuf, OBuf: the bindings' array element types (f32 or i32,
//     or their vec4 when read W-wide); CS is the scalar type the op
//     computes in, CT its W-wide value type.
//   - W: outputs per invocation, 1 or 4. With W = 4 an input is either
//     read as vec4 (AVec/BVec) or read as one element and splatted.
//   - Rank: 1 when the broadcast coalesces to one dimension (a and b are
//     each the whole tensor or a single element). Otherwise 2..8, and each
//     invocation walks params.dims to find its inputs; the rank is baked in
//     so the walk unrolls.
//
// int32 arithmetic wraps (two's complement), as WGSL i32 does at run time.
@group(0) @binding(0) var<storage, read> a: array<{{.ABuf}}>;
@group(0) @binding(1) var<storage, read> b: array<{{.BBuf}}>;
@group(0) @binding(2) var<storage, read_write> o: array<{{.OBuf}}>;

// Go twin: binaryParams in ops/binary.go.
struct Params {
  n: u32,        // invocations with work: output elements / W
  rank: u32,     // coalesced rank (informational: the kernel bakes it in)
  alpha_f: f32,  // alpha for f32 add/sub
  alpha_i: i32,  // alpha for i32 add/sub
  // Coalesced output dims, innermost first, and each input's element
  // stride along them (0 where the input is broadcast).
  dims: array<vec4<u32>, 2>,
  sa: array<vec4<u32>, 2>,
  sb: array<vec4<u32>, 2>,
}
@group(0) @binding(3) var<uniform> params: Params;

fn load_a(i: u32) -> {{.CT}} {
{{- if .AVec}}
  return {{.CT}}(a[i]);
{{- else}}
  return {{.CT}}({{.CS}}(a[i]));
{{- end}}
}

fn load_b(i: u32) -> {{.CT}} {
{{- if .BVec}}
  return {{.CT}}(b[i]);
{{- else}}
  return {{.CT}}({{.CS}}(b[i]));
{{- end}}
}

fn apply(x: {{.CT}}, y: {{.CT}}) -> {{.CT}} {
{{- if eq .Op "add"}}
  return x + params.alpha_{{if eq .CS "f32"}}f{{else}}i{{end}} * y;
{{- else if eq .Op "sub"}}
  return x - params.alpha_{{if eq .CS "f32"}}f{{else}}i{{end}} * y;
{{- else if eq .Op "mul"}}
  return x * y;
{{- else if eq .Op "div"}}
  return x / y;
{{- end}}
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n) { return; }
{{- if gt .Rank 1}}
  // Peel coordinates off the linear output index, innermost first. Rank is
  // at most 8, far below llvmpipe's 65535 loop-iteration cap.
  var rem = i * {{.W}}u;
  var ea = 0u;
  var eb = 0u;
  for (var k = 0u; k < {{.Rank}}u; k++) {
    let n = params.dims[k / 4u][k % 4u];
    let c = rem % n;
    rem = rem / n;
    ea += c * params.sa[k / 4u][k % 4u];
    eb += c * params.sb[k / 4u][k % 4u];
  }
  // A vec4 input's offset is a multiple of 4: its innermost stride is 1
  // and the innermost dim is a multiple of W.
  o[i] = {{.OBuf}}(apply(load_a(ea{{if and .AVec (eq .W 4)}} / 4u{{end}}), load_b(eb{{if and .BVec (eq .W 4)}} / 4u{{end}})));
{{- else}}
  o[i] = {{.OBuf}}(apply(load_a({{if .AVec}}i{{else}}0u{{end}}), load_b({{if .BVec}}i{{else}}0u{{end}})));
{{- end}}
}
