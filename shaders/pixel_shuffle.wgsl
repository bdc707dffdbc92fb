// pixel_shuffle.wgsl: aten.pixel_shuffle. Output [outer, C, H·r, W·r]:
// out[o, c, h·r+i, w·r+j] = in[o, c·r² + i·r + j, h, w].
//
// Words (4-byte elements, moved as u32 bits): one invocation per element.
// Bytes (bool/uint8/int8, packed 4 per u32 little-endian): one invocation
// per output WORD, assembling its 4 elements, so no two invocations write
// the same word.
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

// Go twin: the Params packing in pixelShuffleOp.
struct Params { n_out: u32, h: u32, w: u32, r: u32, numel: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(2) var<uniform> params: Params;

// source returns the input index of output element o.
fn source(o: u32) -> u32 {
  let r = params.r;
  let ow = params.w * r;
  let oh = params.h * r;
  let ox = o % ow;
  let t = o / ow;
  let oy = t % oh;
  let oc = t / oh; // outer·C + c: the input channel block is oc·r²
  let ic = oc * r * r + (oy % r) * r + (ox % r);
  return (ic * params.h + oy / r) * params.w + ox / r;
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n_out) { return; }
{{- if .Bytes}}
  var word = 0u;
  for (var k = 0u; k < 4u; k++) {
    let o = i * 4u + k;
    if (o < params.numel) {
      let s = source(o);
      word |= ((x[s >> 2u] >> ((s & 3u) * 8u)) & 0xffu) << (k * 8u);
    }
  }
  y[i] = word;
{{- else}}
  y[i] = x[source(i)];
{{- end}}
}
