// conv.wgsl: direct 2-D convolution (aten.convolution, conv_with_clamp),
// float32, NCHW. conv1d arrives as conv2d with a height of 1.
//
// Each output element's reduction runs over its group's input channels ×
// KH × KW as ONE flat loop over r = (icl·KH + ky)·KW + kx, so the trip
// count is exactly r_end - r_begin: Go (ops/conv.go) splits it into chunks
// under llvmpipe's 65535-trip cap, one dispatch each. accumulate != 0
// continues from y (the previous chunk); otherwise the sum starts from
// bias (or 0). last != 0 applies the clamp. The (icl, ky, kx) counters are
// stepped, not divided out of r: llvmpipe scalarizes integer division, and
// a div/mod per trip made the first version ten times slower.
//
// Tiled (forward convolutions): each invocation computes len(OCB) output
// channels × len(OXB) consecutive output columns of one row, so every
// loaded weight and input value feeds several FMAs. Columns past OW are
// computed on a clamped column and not written.
//
// Packed (Tiled with a block-packed weight, ops.ConvBlockSpec): the weight
// is [OC/T, R, T] with T = len(OCB) and R = ICg·KH·KW, so reduction step r
// of channel block ocb is T/4 consecutive vec4s, and the accumulators are
// vec4s of four channels each (lane J is component C of vector K).
//
// Transposed (the other variant): one invocation per output pixel and
// len(OCB) output channels; the weight is [IC, OC/groups, KH, KW] and output row oy gathers input row iy
// where oy = iy·stride - pad + ky·dil, i.e. iy = (oy + pad - ky·dil) /
// stride when that divides exactly (tracked as quotient and remainder).
@group(0) @binding(0) var<storage, read> x: array<f32>;
{{if .Packed}}@group(0) @binding(1) var<storage, read> w: array<vec4<f32>>;
{{else}}@group(0) @binding(1) var<storage, read> w: array<f32>;
{{end}}
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
  dil_h: i32, dil_w: i32, owb: u32, ocb: u32, // OW / len(OXB) (rounded up), OC / len(OCB)
  dq_h: i32, dr_h: i32, dq_w: i32, dr_w: i32,  // transposed: dil = dq·stride + dr
}

// The clamp epilogue through common.tmpl's fclamp (NaN stays NaN, on the
// bits); min_v and max_v are -Inf and +Inf where a bound is absent.
{{template "num" (args "T" "f32")}}

{{template "num" (args "T" "vec4<f32>")}}

{{if .Tiled}}
@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n_out) { return; }
  let oxb = i % params.owb;
  var t = i / params.owb;
  let oy = t % params.oh;
  t = t / params.oh;
  let ocb = t % params.ocb;
  let n = t / params.ocb;
  let oc0 = ocb * {{len .OCB}}u;
  let ox0 = oxb * {{len .OXB}}u;
  let g = oc0 / params.ocg;
  let khw = params.kh * params.kw;
  let plane = params.ih * params.iw;
  let iw = i32(params.iw);
  let xbase = (n * params.ic + g * params.icg) * plane;
  let wstride = params.icg * khw; // weights per output channel
  let wbase = oc0 * wstride;
  let iy0 = i32(oy) * params.stride_h - params.pad_h;
{{- range .OXB}}
  let ix0_{{.}} = i32(min(ox0 + {{.}}u, params.ow - 1u)) * params.stride_w - params.pad_w;
{{- end}}
{{- range $j := .OCB}}
  let ob{{$j}} = ((n * params.oc + oc0 + {{$j}}u) * params.oh + oy) * params.ow;
{{- end}}
{{- if .Packed}}
{{- range $k := .Vec}}
  let b{{$k}} = {{if $.Bias}}vec4<f32>(bias[oc0 + {{$k}}u * 4u], bias[oc0 + {{$k}}u * 4u + 1u], bias[oc0 + {{$k}}u * 4u + 2u], bias[oc0 + {{$k}}u * 4u + 3u]){{else}}vec4<f32>(0.0){{end}};
{{- range $q := $.OXB}}
  var acc{{$k}}_{{$q}} = b{{$k}};
{{- end}}{{end}}
  if (params.accumulate != 0u) {
{{- range $l := .Lanes}}{{range $q := $.OXB}}
    acc{{$l.K}}_{{$q}}.{{$l.C}} = y[ob{{$l.J}} + min(ox0 + {{$q}}u, params.ow - 1u)];
{{- end}}{{end}}
  }
  // vec4 index of (block ocb, step r_begin), then one block row per step.
  var wq = (ocb * wstride + params.r_begin) * {{len .Vec}}u;
{{- else}}
{{- range $j := .OCB}}{{range $q := $.OXB}}
  var acc{{$j}}_{{$q}} = {{if $.Bias}}bias[oc0 + {{$j}}u]{{else}}0.0{{end}};
{{- end}}{{end}}
  if (params.accumulate != 0u) {
{{- range $j := .OCB}}{{range $q := $.OXB}}
    acc{{$j}}_{{$q}} = y[ob{{$j}} + min(ox0 + {{$q}}u, params.ow - 1u)];
{{- end}}{{end}}
  }
{{- end}}
  // (icl, ky, kx) of trip r_begin, then stepped with r.
  var icl = params.r_begin / khw;
  let rem = params.r_begin - icl * khw;
  var ky = rem / params.kw;
  var kx = rem - ky * params.kw;
  for (var r = params.r_begin; r < params.r_end; r++) {
    let iy = iy0 + i32(ky) * params.dil_h;
    let row_ok = iy >= 0 && iy < i32(params.ih);
    let row = xbase + icl * plane + u32(clamp(iy, 0, i32(params.ih) - 1)) * params.iw;
    let dx = i32(kx) * params.dil_w;
{{- range .OXB}}
    let ix{{.}} = ix0_{{.}} + dx;
    let v{{.}} = select(0.0, x[row + u32(clamp(ix{{.}}, 0, iw - 1))], row_ok && ix{{.}} >= 0 && ix{{.}} < iw);
{{- end}}
{{- if .Packed}}
{{- range $k := .Vec}}
    let w{{$k}} = w[wq + {{$k}}u];
{{- range $q := $.OXB}}
    acc{{$k}}_{{$q}} = fma(vec4<f32>(v{{$q}}), w{{$k}}, acc{{$k}}_{{$q}});
{{- end}}
{{- end}}
    wq += {{len .Vec}}u;
{{- else}}
{{- range $j := .OCB}}
    let w{{$j}} = w[wbase + {{$j}}u * wstride + r];
{{- range $q := $.OXB}}
    acc{{$j}}_{{$q}} = fma(v{{$q}}, w{{$j}}, acc{{$j}}_{{$q}});
{{- end}}
{{- end}}
{{- end}}
    kx++;
    if (kx == params.kw) {
      kx = 0u;
      ky++;
      if (ky == params.kh) {
        ky = 0u;
        icl++;
      }
    }
  }
{{- if .Packed}}
  // Clamp (a fused activation, last chunk only) four lanes at a time; NaN
  // stays NaN. Then one bounds check per column.
  if (params.last != 0u) {
    let lo = vec4<f32>(params.min_v);
    let hi = vec4<f32>(params.max_v);
{{- range $k := .Vec}}{{range $q := $.OXB}}
    acc{{$k}}_{{$q}} = fclamp4(acc{{$k}}_{{$q}}, lo, hi);
{{- end}}{{end}}
  }
{{- range $q := .OXB}}
  if (ox0 + {{$q}}u < params.ow) {
{{- range $l := $.Lanes}}
    y[ob{{$l.J}} + ox0 + {{$q}}u] = acc{{$l.K}}_{{$q}}.{{$l.C}};
{{- end}}
  }
{{- end}}
{{- end}}
{{- if not .Packed}}
  // Clamp (a fused activation, last chunk only); NaN stays NaN. Then one
  // bounds check per column.
  if (params.last != 0u) {
{{- range $j := .OCB}}{{range $q := $.OXB}}
    acc{{$j}}_{{$q}} = fclamp(acc{{$j}}_{{$q}}, params.min_v, params.max_v);
{{- end}}{{end}}
  }
{{- range $q := .OXB}}
  if (ox0 + {{$q}}u < params.ow) {
{{- range $j := $.OCB}}
    y[ob{{$j}} + ox0 + {{$q}}u] = acc{{$j}}_{{$q}};
{{- end}}
  }
{{- end}}
{{- end}}
}
{{else}}
// floor_div is floor(a / b) for b > 0 (WGSL's i32 division truncates).
fn floor_div(a: i32, b: i32) -> i32 {
  let q = a / b;
  return select(q, q - 1, q * b > a);
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n_out) { return; }
  let ox = i % params.ow;
  var t = i / params.ow;
  let oy = t % params.oh;
  t = t / params.oh;
  let ocb = t % params.ocb;
  let n = t / params.ocb;
  let oc0 = ocb * {{len .OCB}}u;
  let g = oc0 / params.ocg;
  let ocl = oc0 - g * params.ocg;
  let khw = params.kh * params.kw;
  let plane = params.ih * params.iw;
  let ih = i32(params.ih);
  let iw = i32(params.iw);
  let sh = params.stride_h;
  let sw = params.stride_w;
  // Input channel 0 of this sample's group.
  let xbase = (n * params.ic + g * params.icg) * plane;

  let pix = oy * params.ow + ox;
  let plane_out = params.oh * params.ow;
{{- range .OCB}}
  let o{{.}} = (n * params.oc + oc0 + {{.}}u) * plane_out + pix;
  var acc{{.}} = {{if $.Bias}}bias[oc0 + {{.}}u]{{else}}0.0{{end}};
{{- end}}
  if (params.accumulate != 0u) {
{{- range .OCB}}
    acc{{.}} = y[o{{.}}];
{{- end}}
  }
  // (icl, ky, kx) of trip r_begin, then stepped with r.
  var icl = params.r_begin / khw;
  let rem = params.r_begin - icl * khw;
  var ky = rem / params.kw;
  var kx = rem - ky * params.kw;
  // ty = oy + pad - ky·dil = qy·stride + my with 0 <= my < stride, kept
  // up to date as ky steps (ty falls by dil = dq·stride + dr); likewise x.
  // Input row qy contributes iff my == 0 and 0 <= qy < IH.
  let ty0 = i32(oy) + params.pad_h;
  let tx0 = i32(ox) + params.pad_w;
  let qy0 = floor_div(ty0, sh);
  let my0 = ty0 - qy0 * sh;
  let qx0 = floor_div(tx0, sw);
  let mx0 = tx0 - qx0 * sw;
  var qy = floor_div(ty0 - i32(ky) * params.dil_h, sh);
  var my = ty0 - i32(ky) * params.dil_h - qy * sh;
  var qx = floor_div(tx0 - i32(kx) * params.dil_w, sw);
  var mx = tx0 - i32(kx) * params.dil_w - qx * sw;
  // Weight [c, ocl, ky, kx] with c = g·ICg + icl, stepped with r (output
  // channel j of the tile is khw further on per j).
  var wr = ((g * params.icg + icl) * params.ocg + ocl) * khw + rem;
  for (var r = params.r_begin; r < params.r_end; r++) {
    if (my == 0 && mx == 0 && qy >= 0 && qx >= 0 && qy < ih && qx < iw) {
      let v = x[xbase + icl * plane + u32(qy) * params.iw + u32(qx)];
{{- range .OCB}}
      acc{{.}} = fma(v, w[wr + {{.}}u * khw], acc{{.}});
{{- end}}
    }
    wr++;
    kx++;
    qx -= params.dq_w;
    mx -= params.dr_w;
    if (mx < 0) { mx += sw; qx -= 1; }
    if (kx == params.kw) {
      kx = 0u;
      qx = qx0;
      mx = mx0;
      ky++;
      qy -= params.dq_h;
      my -= params.dr_h;
      if (my < 0) { my += sh; qy -= 1; }
      if (ky == params.kh) {
        ky = 0u;
        qy = qy0;
        my = my0;
        icl++;
        wr += (params.ocg - 1u) * khw;
      }
    }
  }
{{- range .OCB}}
  if (params.last != 0u) {
    // NaN passes through as in torch.
    acc{{.}} = fclamp(acc{{.}}, params.min_v, params.max_v);
  }
  y[o{{.}}] = acc{{.}};
{{- end}}
}
{{end}}
