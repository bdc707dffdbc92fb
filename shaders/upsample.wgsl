// upsample.wgsl: aten.upsample_nearest2d.vec / upsample_bilinear2d.vec,
// float32 NCHW, one invocation per output element of [planes, OH, OW].
//
// Per dim, Go (ops/spatial.go) passes the source-index rule: kind 0 is the
// identity (same size), kind 1 halves the index (nearest, exact doubling),
// kind 2 scales by the float32 ratio. Nearest takes min(floor(dst·s),
// in-1); bilinear takes src = s·dst (align_corners) or max(s·(dst+0.5) -
// 0.5, 0), i0 = min(floor(src), in-1), weight = clamp(src - i0, 0, 1),
// i1 = i0 + 1 unless i0 is the last index — torch's CPU rules.
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

// Go twin: the Params packing in upsampleOp.
struct Params {
  n_out: u32, oh: u32, ow: u32, ih: u32,
  iw: u32, kind_h: u32, kind_w: u32, align: u32,
  scale_h: f32, scale_w: f32, _p0: u32, _p1: u32,
}
@group(0) @binding(2) var<uniform> params: Params;
{{if .Bilinear}}
{{template "num" (args "T" "f32")}}

// Source indices and the weight of i1 along one dim.
struct Src { i0: u32, i1: u32, l1: f32 }

fn source(dst: u32, kind: u32, scale: f32, n: u32) -> Src {
  if (kind == 0u) { return Src(dst, dst, 0.0); }
  var s: f32;
  if (params.align != 0u) {
    s = scale * f32(dst);
  } else {
    s = fmax(scale * (f32(dst) + 0.5) - 0.5, 0.0);
  }
  let i0 = min(u32(floor(s)), n - 1u);
  let l1 = fclamp(s - f32(i0), 0.0, 1.0);
  return Src(i0, select(i0, i0 + 1u, i0 < n - 1u), l1);
}
{{else}}
fn source(dst: u32, kind: u32, scale: f32, n: u32) -> u32 {
  if (kind == 0u) { return dst; }
  if (kind == 1u) { return dst >> 1u; }
  return min(u32(floor(f32(dst) * scale)), n - 1u);
}
{{end}}
@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n_out) { return; }
  let ox = i % params.ow;
  let t = i / params.ow;
  let oy = t % params.oh;
  let base = (t / params.oh) * params.ih * params.iw;
  let sy = source(oy, params.kind_h, params.scale_h, params.ih);
  let sx = source(ox, params.kind_w, params.scale_w, params.iw);
{{- if .Bilinear}}
  let r0 = base + sy.i0 * params.iw;
  let r1 = base + sy.i1 * params.iw;
  let top = (1.0 - sx.l1) * x[r0 + sx.i0] + sx.l1 * x[r0 + sx.i1];
  let bottom = (1.0 - sx.l1) * x[r1 + sx.i0] + sx.l1 * x[r1 + sx.i1];
  y[i] = (1.0 - sy.l1) * top + sy.l1 * bottom;
{{- else}}
  y[i] = x[base + sy * params.iw + sx];
{{- end}}
}
