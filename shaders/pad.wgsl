// pad.wgsl: aten.constant_pad_nd, any 4-byte element (moved as u32 bits),
// rank <= 8. One invocation per output element: its coordinate minus the
// left pad of each dim is the input coordinate; outside the input (in the
// padding) the element is value. Negative pads crop.
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

// Go twin: the Params packing in constantPadOp. Dims are innermost first;
// left holds i32 bits.
struct Params {
  n_out: u32, rank: u32, value: u32, _p0: u32,
  out_dims: array<vec4<u32>, 2>,
  in_dims: array<vec4<u32>, 2>,
  left: array<vec4<u32>, 2>,
}
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n_out) { return; }
  var rest = i;
  var src = 0u;
  var stride = 1u;
  var inside = true;
  for (var d = 0u; d < params.rank; d++) {
    let od = params.out_dims[d / 4u][d % 4u];
    let c = i32(rest % od) - bitcast<i32>(params.left[d / 4u][d % 4u]);
    rest = rest / od;
    let n = params.in_dims[d / 4u][d % 4u];
    if (c < 0 || u32(c) >= n) { inside = false; }
    src += u32(max(c, 0)) * stride;
    stride *= n;
  }
  if (inside) {
    y[i] = x[src];
  } else {
    y[i] = params.value;
  }
}
