// conv.wgsl: direct 2-D convolution (aten.convolution, conv_with_clamp),
// float32, NCHW. conv1d arrives as conv2d with a height of 1.
//
// One invocation per output element (n, oc, oh, ow). Its reduction runs
// over the group's input channels × KH × KW as ONE flat loop, r =
// (icl·KH + ky)·KW + kx, so the trip count is exactly r_end - r_begin: Go
// (ops/conv.go) splits it into chunks under llvmpipe's 65535-trip cap, one
// dispatch each. accumulate != 0 continues from y (the previous chunk);
// otherwise the sum starts from bias (or 0). last != 0 applies the clamp.
//
// Transposed: the weight is [IC, OC/groups, KH, KW] and output row oh
// gathers input row iy where oh = iy·stride - pad + ky·dil, i.e. iy =
// (oh + pad - ky·dil) / stride when that divides exactly.
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
{{if .Bias}}@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;
{{else}}@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;
{{end}}
// Go twin: the Params packing in ops/conv.go.
struct Params {
  n_out: u32, oc: u32, oh: u32, ow: u32,
  ic: u32, ih: u32, iw: u32, icg: u32,      // icg: input channels per group
  ocg: u32, kh: u32, kw: u32, r_begin: u32, // ocg: output channels per group
  r_end: u32, accumulate: u32, last: u32, has_min: u32,
  has_max: u32, min_v: f32, max_v: f32, _p0: u32,
  stride_h: i32, stride_w: i32, pad_h: i32, pad_w: i32,
  dil_h: i32, dil_w: i32, _p1: u32, _p2: u32,
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n_out) { return; }
  let ox = i % params.ow;
  var t = i / params.ow;
  let oy = t % params.oh;
  t = t / params.oh;
  let oc = t % params.oc;
  let n = t / params.oc;
  let g = oc / params.ocg;
  let khw = params.kh * params.kw;
  let plane = params.ih * params.iw;
  // Input channel 0 of this sample's group.
  let xbase = (n * params.ic + g * params.icg) * plane;
{{- if .Transposed}}
  let ocl = oc - g * params.ocg;
  let ty0 = i32(oy) + params.pad_h;
  let tx0 = i32(ox) + params.pad_w;
{{- else}}
  let wbase = oc * params.icg * khw;
  let iy0 = i32(oy) * params.stride_h - params.pad_h;
  let ix0 = i32(ox) * params.stride_w - params.pad_w;
{{- end}}

  var acc = 0.0;
{{- if .Bias}}
  acc = bias[oc];
{{- end}}
  if (params.accumulate != 0u) {
    acc = y[i];
  }
  for (var r = params.r_begin; r < params.r_end; r++) {
    let icl = r / khw;
    let rem = r - icl * khw;
    let ky = rem / params.kw;
    let kx = rem - ky * params.kw;
{{- if .Transposed}}
    let ty = ty0 - i32(ky) * params.dil_h;
    let tx = tx0 - i32(kx) * params.dil_w;
    if (ty >= 0 && tx >= 0) {
      let iy = ty / params.stride_h;
      let ix = tx / params.stride_w;
      if (iy * params.stride_h == ty && ix * params.stride_w == tx && u32(iy) < params.ih && u32(ix) < params.iw) {
        let c = g * params.icg + icl;
        acc = fma(x[xbase + icl * plane + u32(iy) * params.iw + u32(ix)],
                  w[((c * params.ocg + ocl) * params.kh + ky) * params.kw + kx], acc);
      }
    }
{{- else}}
    let iy = iy0 + i32(ky) * params.dil_h;
    let ix = ix0 + i32(kx) * params.dil_w;
    if (iy >= 0 && ix >= 0 && u32(iy) < params.ih && u32(ix) < params.iw) {
      acc = fma(x[xbase + icl * plane + u32(iy) * params.iw + u32(ix)], w[wbase + r], acc);
    }
{{- end}}
  }
  if (params.last != 0u) {
    // Comparisons are false for NaN, so NaN passes through as in torch.
    if (params.has_min != 0u && acc < params.min_v) { acc = params.min_v; }
    if (params.has_max != 0u && acc > params.max_v) { acc = params.max_v; }
  }
  y[i] = acc;
}
