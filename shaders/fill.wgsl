// fill.wgsl: tensors made from scalars. ops/fill.go picks the variant
// (fillVariant):
//
//   - Op "fill": every vec4<u32> of y is params.word, the value's element
//     bits repeated to 32 bits (1-byte types four times). Buffers are
//     padded to 16 bytes, so whole vec4s are in bounds.
//   - Op "arange": y[i] = start + i*step in the compute type S (f32, or
//     i32 wrapping); with S f32 and Y i32 the value truncates toward zero.
//     W = 4 writes a vec4 per invocation.
@group(0) @binding(0) var<storage, read_write> y: array<{{.YB}}>;

// Go twin: fillParams in ops/fill.go.
struct Params {
  n: u32,      // invocations with work
  word: u32,   // fill: the repeated element bits
  ai: i32,     // arange start and step for S = i32
  bi: i32,
  af: f32,     // arange start and step for S = f32
  bf: f32,
  _p0: u32,
  _p1: u32,
}
@group(0) @binding(1) var<uniform> params: Params;

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n) { return; }
{{- if eq .Op "fill"}}
  y[i] = vec4<u32>(params.word);
{{- else}}
{{- if eq .W 4}}
  let idx = vec4<u32>(4u * i) + vec4<u32>(0u, 1u, 2u, 3u);
{{- else}}
  let idx = i;
{{- end}}
{{- if eq .S "f32"}}
  let r = params.af + {{.T}}(idx) * params.bf;
{{- else}}
  let r = params.ai + {{.T}}(idx) * params.bi;
{{- end}}
  y[i] = {{.YB}}(r);
{{- end}}
}
