// copy.wgsl: word-wise copy of a whole tensor (view_copy, clone). Buffers are
// padded to 4 bytes, so copying whole words is always in bounds.
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

struct Params { words: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.words) { return; }
  dst[i] = src[i];
}
