// copy.wgsl: copy of a whole tensor (view_copy, clone) in vec4<u32> units.
// Every buffer is padded to 16 bytes, so whole vec4s are always in bounds.
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;

struct Params { n: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n) { return; }
  dst[i] = src[i];
}
