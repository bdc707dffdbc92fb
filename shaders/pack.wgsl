// pack.wgsl: weight layout transforms run once at load (ops.PackSpec).
// transpose: out[b][c][r] = in[b][r][c] for 4-byte elements, i.e. an
// R×C matrix per batch becomes C×R. Go twin: packParams in ops/pack.go.
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

struct Params { rows: u32, cols: u32, batches: u32, _p: u32 }
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  let r = gid.y;
  let b = gid.z;
  if (c >= params.cols || r >= params.rows || b >= params.batches) { return; }
  let plane = params.rows * params.cols;
  dst[b * plane + c * params.rows + r] = src[b * plane + r * params.cols + c];
}
