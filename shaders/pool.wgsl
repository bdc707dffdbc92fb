// pool.wgsl: aten.max_pool2d (optionally with indices) and aten.avg_pool2d,
// float32, one invocation per output element of [planes, OH, OW].
//
// The window is walked as ONE flat loop r = ky·KW + kx over [r_begin,
// r_end): Go (ops/pool.go) splits KH·KW into chunks under llvmpipe's
// 65535-trip cap, one dispatch each. accumulate != 0 continues from the
// previous chunk's y (and indices); last != 0 finishes (avg divides).
// (ky, kx) are stepped with r, not divided out of it: llvmpipe scalarizes
// integer division.
//
// max: start from -inf at the window's first in-bounds position; a value
// replaces the running maximum when it is greater or NaN (torch's CPU
// rule: first maximum wins, NaN propagates), compared on the bits
// (common.tmpl flt, is_nan) so neither NaN nor subnormals depend on the
// adapter.
// avg: sum in-bounds values; divide by divisor (mode 2), the window clipped
// to the padded input (mode 1, count_include_pad) or to the input (mode 0).
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
{{if .Indices}}@group(0) @binding(2) var<storage, read_write> ind: array<i32>;
@group(0) @binding(3) var<uniform> params: Params;
{{else}}@group(0) @binding(2) var<uniform> params: Params;
{{end}}
// Go twin: the Params packing in ops/pool.go.
struct Params {
  n_out: u32, oh: u32, ow: u32, ih: u32,
  iw: u32, kh: u32, kw: u32, r_begin: u32,
  r_end: u32, accumulate: u32, last: u32, mode: u32,
  stride_h: i32, stride_w: i32, pad_h: i32, pad_w: i32,
  dil_h: i32, dil_w: i32, divisor: f32, _p0: u32,
}

{{- if not .Avg}}
{{template "num" (args "T" "f32")}}
{{- end}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n_out) { return; }
  let ox = i % params.ow;
  let t = i / params.ow;
  let oy = t % params.oh;
  let plane = t / params.oh;
  let ih = i32(params.ih);
  let iw = i32(params.iw);
  let base = plane * params.ih * params.iw;
  let y0 = i32(oy) * params.stride_h - params.pad_h;
  let x0 = i32(ox) * params.stride_w - params.pad_w;
{{- if .Avg}}
  var acc = 0.0;
  if (params.accumulate != 0u) { acc = y[i]; }
  var ky = params.r_begin / params.kw;
  var kx = params.r_begin - ky * params.kw;
  for (var r = params.r_begin; r < params.r_end; r++) {
    let iy = y0 + i32(ky);
    let ix = x0 + i32(kx);
    if (iy >= 0 && iy < ih && ix >= 0 && ix < iw) {
      acc += x[base + u32(iy * iw + ix)];
    }
    kx++;
    if (kx == params.kw) { kx = 0u; ky++; }
  }
  if (params.last != 0u) {
    let ye = min(y0 + i32(params.kh), ih + params.pad_h);
    let xe = min(x0 + i32(params.kw), iw + params.pad_w);
    let ys = max(y0, 0);
    let xs = max(x0, 0);
    let ye2 = min(ye, ih);
    let xe2 = min(xe, iw);
    var div = params.divisor;
    if (params.mode == 1u) {
      div = f32((ye - y0) * (xe - x0));
    } else if (params.mode == 0u) {
      div = f32((ye2 - ys) * (xe2 - xs));
    }
    if (ys >= ye2 || xs >= xe2) {
      acc = 0.0;
    } else {
      acc = acc / div;
    }
  }
  y[i] = acc;
{{- else}}
  // First in-bounds window position: torch's starting index.
  // (Computed, not looped: loop trips are a budget.)
  var sy = y0;
  if (sy < 0) { sy += ((params.dil_h - 1 - sy) / params.dil_h) * params.dil_h; }
  var sx = x0;
  if (sx < 0) { sx += ((params.dil_w - 1 - sx) / params.dil_w) * params.dil_w; }
  var best = bitcast<f32>(0xff800000u); // -inf
  var best_i = sy * iw + sx;
  if (params.accumulate != 0u) {
    best = y[i];
{{- if .Indices}}
    best_i = ind[i];
{{- end}}
  }
  var ky = params.r_begin / params.kw;
  var kx = params.r_begin - ky * params.kw;
  for (var r = params.r_begin; r < params.r_end; r++) {
    let iy = y0 + i32(ky) * params.dil_h;
    let ix = x0 + i32(kx) * params.dil_w;
    if (iy >= 0 && iy < ih && ix >= 0 && ix < iw) {
      let v = x[base + u32(iy * iw + ix)];
      // On the bits (common.tmpl): a NaN best stays, every NaN replaces.
      if (is_nan(v) || flt(best, v)) {
        best = v;
        best_i = iy * iw + ix;
      }
    }
    kx++;
    if (kx == params.kw) { kx = 0u; ky++; }
  }
  y[i] = best;
{{- if .Indices}}
  ind[i] = best_i;
{{- end}}
{{- end}}
}
