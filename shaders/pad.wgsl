// pad.wgsl: aten.constant_pad_nd, rank <= 8. An output element's
// coordinate minus each dim's left pad is its input coordinate; outside the
// input (in the padding) the element is value. Negative pads crop.
//
// Words (4-byte elements, moved as u32 bits): one invocation per element.
// Bytes (bool/uint8/int8, packed 4 per u32 little-endian): one invocation
// per output WORD, assembling its 4 elements, so no two invocations write
// the same word.
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

// Go twin: the Params packing in constantPadOp. Dims are innermost first;
// left holds i32 bits. value is the element's bits (Bytes: the byte).
struct Params {
  n_out: u32, rank: u32, value: u32, numel: u32, // n_out: invocations; numel: output elements
  out_dims: array<vec4<u32>, 2>,
  in_dims: array<vec4<u32>, 2>,
  left: array<vec4<u32>, 2>,
}
@group(0) @binding(2) var<uniform> params: Params;

// source returns the input index of output element o, or 0xffffffff when
// o lies in the padding.
fn source(o: u32) -> u32 {
  var rest = o;
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
  return select(0xffffffffu, src, inside);
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
      var v = params.value;
      if (s != 0xffffffffu) { v = (x[s >> 2u] >> ((s & 3u) * 8u)) & 0xffu; }
      word |= v << (k * 8u);
    }
  }
  y[i] = word;
{{- else}}
  let s = source(i);
  if (s != 0xffffffffu) {
    y[i] = x[s];
  } else {
    y[i] = params.value;
  }
{{- end}}
}
