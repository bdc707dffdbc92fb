// pixel_shuffle.wgsl: aten.pixel_shuffle, any 4-byte element (moved as
// u32 bits). One invocation per output element of [outer, C, H·r, W·r]:
// out[o, c, h·r+i, w·r+j] = in[o, c·r² + i·r + j, h, w].
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

// Go twin: the Params packing in pixelShuffleOp.
struct Params { n_out: u32, h: u32, w: u32, r: u32 }
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n_out) { return; }
  let r = params.r;
  let ow = params.w * r;
  let oh = params.h * r;
  let ox = i % ow;
  var t = i / ow;
  let oy = t % oh;
  let oc = t / oh; // outer·C + c: the input channel block is oc·r²
  let ic = oc * r * r + (oy % r) * r + (ox % r);
  y[i] = x[(ic * params.h + oy / r) * params.w + ox / r];
}
