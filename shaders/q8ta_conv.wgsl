// q8ta_conv.wgsl: the int8 convolutions of statically quantized graphs
// (ops/q8ta_conv.go): et_vk.q8ta_conv2d, _pw, _dw and _transposed.
//
// x is [N, IC, H, W] and out [N, OC, OH, OW], int8 codes four per u32,
// flat row-major. Weights are int8, four per u32:
//   conv/pw/transposed: row oc (stride w_ld bytes), column (kh·KW + kw)·IC_pg + ic;
//   dw ([KH, KW, Cp]):   (kh·KW + kw)·Cp + c, Cp = w_ld ≥ C.
// Output channel oc reads input channels g·IC_pg … of its group
// g = oc / OC_pg. The accumulator is integer, over in-range taps only
// (padding is the zero point, i.e. real 0):
//   conv:       ih = oh·stride − pad + kh·dil
//   transposed: ih = (oh + pad − kh·dil) / stride, when it divides exactly
//   acc = Σ (xq − zp_in)·w
// then v = f32(acc)·s_in·s_w[oc] (+ bias[oc]) (relu: max(v, 0)) and
// q = clamp(round(v·inv_out) + zp_out, −128, 127), round half to even.
//
// Each invocation owns one output word (Tiled: one per output channel of
// its tile, below). Aligned (OW % 4 == 0): the word is four ow of one
// (n, oc, oh), accumulated together; otherwise its four flat elements are
// done one after the other. ops bounds the loop trips per invocation below
// llvmpipe's 65535 back-edges.
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> scales: array<f32>;
{{- if .Bias}}
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
@group(0) @binding(5) var<uniform> params: Params;
{{- else}}
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<uniform> params: Params;
{{- end}}

// Go twin: the Params packing in q8ConvOp (ops/q8ta_conv.go).
struct Params {
  n: u32,
  ic: u32,
  h: u32,
  w: u32,
  oc: u32,
  oh: u32,
  ow: u32,
  kh: u32,
  kw: u32,
  stride_h: u32,
  stride_w: u32,
  pad_h: u32,
  pad_w: u32,
  dil_h: u32,
  dil_w: u32,
  w_ld: u32,     // weight row stride in bytes (dw: Cp)
  ic_pg: u32,
  oc_pg: u32,
  zp_in: i32,
  zp_out: i32,
  s_in: f32,
  inv_out: f32,
  relu: u32,
  total: u32,    // output elements
  zero: u32,     // always 0: keep_rounded's opaque zero
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

{{template "num" (args "T" "f32")}}

{{template "num_round"}}

// sext returns int8 element i (mod 4) of a packed word, sign-extended.
fn sext(word: u32, i: u32) -> i32 {
  return bitcast<i32>(word << (24u - 8u * (i & 3u))) >> 24u;
}

// unpack returns the four int8 values of a packed word, sign-extended.
fn unpack(word: u32) -> vec4<i32> {
  return bitcast<vec4<i32>>(vec4<u32>(word) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u);
}

// load4 returns the 4 consecutive int8 values at byte a, which may start
// before the tensor (a < 0) or run past it: the callers mask those lanes.
// Two word loads and a funnel shift; an index before the buffer wraps to
// an out-of-bounds one, which WGSL makes a safe read.
fn load4(a: i32) -> vec4<i32> {
  let wi = u32(a >> 2u);
  let sh = u32(a & 3) * 8u;
  var word = x[wi];
  if (sh != 0u) {
    word = (word >> sh) | (x[wi + 1u] << (32u - sh));
  }
  return unpack(word);
}

// accum returns the accumulators of the four output columns ow of
// (n, oc, oh); lanes past valid read nothing.
fn accum(n: u32, oc: u32, oh: u32, ow: vec4<i32>, valid: vec4<bool>) -> vec4<i32> {
  var acc = vec4<i32>(0);
  let g = oc / params.oc_pg;
  let xc0 = n * params.ic + g * params.ic_pg; // first input channel
  let hw = params.h * params.w;
  for (var kh = 0u; kh < params.kh; kh++) {
{{- if .Transposed}}
    let ihn = i32(oh + params.pad_h) - i32(kh * params.dil_h);
    if (ihn < 0 || ihn % i32(params.stride_h) != 0) { continue; }
    let ih = ihn / i32(params.stride_h);
{{- else}}
    let ih = i32(oh * params.stride_h + kh * params.dil_h) - i32(params.pad_h);
{{- end}}
    if (ih < 0 || ih >= i32(params.h)) { continue; }
    for (var kw = 0u; kw < params.kw; kw++) {
{{- if .Transposed}}
      let iwn = ow + vec4<i32>(i32(params.pad_w)) - vec4<i32>(i32(kw * params.dil_w));
      let iw = iwn / vec4<i32>(i32(params.stride_w));
      let ok = valid & (iwn >= vec4<i32>(0)) & (iwn % vec4<i32>(i32(params.stride_w)) == vec4<i32>(0)) & (iw < vec4<i32>(i32(params.w)));
{{- else}}
      let iw = ow * vec4<i32>(i32(params.stride_w)) + vec4<i32>(i32(kw * params.dil_w) - i32(params.pad_w));
      let ok = valid & (iw >= vec4<i32>(0)) & (iw < vec4<i32>(i32(params.w)));
{{- end}}
      if (!any(ok)) { continue; }
      // Clamped in-bounds offsets; lanes not ok contribute zero.
      let off = vec4<u32>(clamp(iw, vec4<i32>(0), vec4<i32>(i32(params.w) - 1))) + vec4<u32>(u32(ih) * params.w);
{{- if .DW}}
      let wi = (kh * params.kw + kw) * params.w_ld + oc;
      let wv = sext(w[wi >> 2u], wi);
{{- if .Stride1}}
      let xv = load4(i32(xc0 * hw + u32(ih) * params.w) + iw.x);
{{- else}}
      let xi = vec4<u32>(xc0 * hw) + off;
      let xv = vec4<i32>(sext(x[xi.x >> 2u], xi.x), sext(x[xi.y >> 2u], xi.y), sext(x[xi.z >> 2u], xi.z), sext(x[xi.w >> 2u], xi.w));
{{- end}}
      acc += select(vec4<i32>(0), (xv - vec4<i32>(params.zp_in)) * wv, ok);
{{- else}}
      let wb = oc * params.w_ld + (kh * params.kw + kw) * params.ic_pg;
      for (var ic = 0u; ic < params.ic_pg; ic++) {
        let wi = wb + ic;
        let wv = sext(w[wi >> 2u], wi);
{{- if .Stride1}}
        let xv = load4(i32((xc0 + ic) * hw + u32(ih) * params.w) + iw.x);
{{- else}}
        let xi = vec4<u32>((xc0 + ic) * hw) + off;
        let xv = vec4<i32>(sext(x[xi.x >> 2u], xi.x), sext(x[xi.y >> 2u], xi.y), sext(x[xi.z >> 2u], xi.z), sext(x[xi.w >> 2u], xi.w));
{{- end}}
        acc += select(vec4<i32>(0), (xv - vec4<i32>(params.zp_in)) * wv, ok);
      }
{{- end}}
    }
  }
  return acc;
}

// requant returns the int8 code of output channel oc's accumulator as its
// low byte.
// The product rounds before the bias is added, as the reference's
// (keep_rounded: no fma).
fn requant(acc: i32, oc: u32) -> u32 {
  var v = f32(acc) * params.s_in * scales[oc];
{{- if .Bias}}
  v = keep_rounded(v, params.zero) + bias[oc];
{{- end}}
  if (params.relu != 0u) {
    v = frelu(v);
  }
  let q = fclamp(round(v * params.inv_out) + f32(params.zp_out), -128.0, 127.0);
  return u32(i32(q)) & 0xffu;
}

{{- if .Tiled}}

// Tiled (OW % 4 == 0, OC_pg % {{len .OCs}} == 0, IC_pg % 4 == 0, not depthwise,
// not transposed): an invocation owns {{len .OCs}} output channels × 4 columns
// of one (n, oh), and reads each weight word as 4 input channels of one
// tap, so every x byte it loads serves {{len .OCs}} channels and every weight
// word 4 columns.
@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  let owq = params.ow / 4u;
  if (i >= params.total / {{.TileElems}}u) { return; }
  let owb = i % owq;
  var r = i / owq;
  let oh = r % params.oh;
  r = r / params.oh;
  let ocq = params.oc / {{len .OCs}}u;
  let oc0 = (r % ocq) * {{len .OCs}}u;
  let n = r / ocq;
  let g = oc0 / params.oc_pg;
  let xc0 = n * params.ic + g * params.ic_pg;
  let hw = params.h * params.w;
  let ow = vec4<i32>(i32(owb * 4u)) + vec4<i32>(0, 1, 2, 3);
  let zp = vec4<i32>(params.zp_in);
  var acc: array<vec4<i32>, {{len .OCs}}>;
  let ld4 = params.w_ld / 4u;
  let ic4 = params.ic_pg / 4u;
  for (var kh = 0u; kh < params.kh; kh++) {
    let ih = i32(oh * params.stride_h + kh * params.dil_h) - i32(params.pad_h);
    if (ih < 0 || ih >= i32(params.h)) { continue; }
    for (var kw = 0u; kw < params.kw; kw++) {
      let iw = ow * vec4<i32>(i32(params.stride_w)) + vec4<i32>(i32(kw * params.dil_w) - i32(params.pad_w));
      let ok = (iw >= vec4<i32>(0)) & (iw < vec4<i32>(i32(params.w)));
      if (!any(ok)) { continue; }
      let off = vec4<u32>(clamp(iw, vec4<i32>(0), vec4<i32>(i32(params.w) - 1))) + vec4<u32>(u32(ih) * params.w);
      // Weight word of (oc0 + t, this tap, input channels 4c … 4c+3).
      let wt = oc0 * ld4 + (kh * params.kw + kw) * ic4;
      for (var c = 0u; c < ic4; c++) {
        // xm[j]: the 4 input channels at column j, minus the zero point.
        var xm: array<vec4<i32>, 4>;
        for (var e = 0u; e < 4u; e++) {
{{- if .Stride1}}
          // The 4 columns are 4 consecutive bytes (lanes before or past
          // the row are masked).
          let v = load4(i32((xc0 + c * 4u + e) * hw + u32(ih) * params.w) + iw.x);
{{- else}}
          let xi = vec4<u32>((xc0 + c * 4u + e) * hw) + off;
          let v = vec4<i32>(sext(x[xi.x >> 2u], xi.x), sext(x[xi.y >> 2u], xi.y), sext(x[xi.z >> 2u], xi.z), sext(x[xi.w >> 2u], xi.w));
{{- end}}
          let d = select(vec4<i32>(0), v - zp, ok);
          xm[0][e] = d.x;
          xm[1][e] = d.y;
          xm[2][e] = d.z;
          xm[3][e] = d.w;
        }
{{- range .OCs}}
        {
          let wv = unpack(w[wt + {{.}}u * ld4 + c]);
          acc[{{.}}] += vec4<i32>(dot(xm[0], wv), dot(xm[1], wv), dot(xm[2], wv), dot(xm[3], wv));
        }
{{- end}}
      }
    }
  }
  for (var t = 0u; t < {{len .OCs}}u; t++) {
    var word = 0u;
    for (var e = 0u; e < 4u; e++) {
      word |= requant(acc[t][e], oc0 + t) << (8u * e);
    }
    out[((n * params.oc + oc0 + t) * params.oh + oh) * owq + owb] = word;
  }
}
{{- else}}
@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i * 4u >= params.total) { return; }
  var word = 0u;
{{- if .Aligned}}
  let o = i * 4u;
  let ow0 = o % params.ow;
  let r = o / params.ow;
  let oh = r % params.oh;
  let oc = (r / params.oh) % params.oc;
  let n = r / (params.oh * params.oc);
  let acc = accum(n, oc, oh, vec4<i32>(i32(ow0)) + vec4<i32>(0, 1, 2, 3), vec4<bool>(true));
  for (var e = 0u; e < 4u; e++) {
    word |= requant(acc[e], oc) << (8u * e);
  }
{{- else}}
  for (var e = 0u; e < 4u; e++) {
    let o = i * 4u + e;
    if (o >= params.total) { break; }
    let ow = o % params.ow;
    let r = o / params.ow;
    let oh = r % params.oh;
    let oc = (r / params.oh) % params.oc;
    let n = r / (params.oh * params.oc);
    let acc = accum(n, oc, oh, vec4<i32>(i32(ow)), vec4<bool>(true, false, false, false));
    word |= requant(acc.x, oc) << (8u * e);
  }
{{- end}}
  out[i] = word;
}
{{- end}}
