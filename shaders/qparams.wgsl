// qparams.wgsl: torchao.choose_qparams_affine, ASYMMETRIC per row (block
// size [1, …, 1, K]), the Vulkan/WebGPU rule (ops/quant_dq8.go): for each
// row of x, lo = min(min(row), 0), hi = max(max(row), 0),
// scale = (hi − lo)/(qmax − qmin) (0 or an infinite reciprocal → 0.1;
// below 6.1e-5 → 6.1e-5 with the range stretched), zero point from the end
// whose error test is smaller, clamped or rounded half to even. Each
// invocation does 4 rows, so it writes one u32 of 4 int8 zero points.
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> scale: array<f32>;
@group(0) @binding(2) var<storage, read_write> zp: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;

// Go twin: the Params built in chooseQParamsOp (ops/quant_dq8.go).
struct Params {
  rows: u32,
  k4: u32,     // row length in vec4s
  qmin: i32,
  qmax: i32,
}

const small_scale = 6.1e-5;

// The reference computes these in float32 with correctly rounded
// divisions and Go's min and max (NaN wins, -0 below +0): div_rn, fmin,
// fmax (common.tmpl) give the same bits on every adapter.
{{template "num_div"}}

{{template "num" (args "T" "f32")}}

{{template "num" (args "T" "vec4<f32>")}}
{{- if .HalfScale}}

// A FLOAT16 scale output holds halves: the zero point comes from the
// float32 scale, the stored scale is rounded (the reference's order).
{{template "num_half"}}
{{- end}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let q = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (q * 4u >= params.rows) {
    return;
  }
  let qmin = f32(params.qmin);
  let qmax = f32(params.qmax);
  var packed = 0u;
  for (var i = 0u; i < 4u; i++) {
    let row = q * 4u + i;
    if (row >= params.rows) {
      break;
    }
    var lo4 = vec4<f32>(0.0);
    var hi4 = vec4<f32>(0.0);
    for (var k = 0u; k < params.k4; k++) {
      let v = x[row * params.k4 + k];
      lo4 = fmin4(lo4, v);
      hi4 = fmax4(hi4, v);
    }
    var lo = fmin(fmin(lo4.x, lo4.y), fmin(lo4.z, lo4.w));
    var hi = fmax(fmax(hi4.x, hi4.y), fmax(hi4.z, hi4.w));
    var s = div_rn(hi - lo, qmax - qmin);
    if (s == 0.0 || div_rn(1.0, s) > 3.4028234e38) {
      s = 0.1;
    }
    if (s < small_scale) {
      let org = s;
      s = small_scale;
      if (lo == 0.0) {
        hi = small_scale * (qmax - qmin);
      } else if (hi == 0.0) {
        lo = -small_scale * (qmax - qmin);
      } else {
        lo *= div_rn(small_scale, org);
        hi *= div_rn(small_scale, org);
      }
    }
    let ls = div_rn(lo, s);
    let hs = div_rn(hi, s);
    let from_min = qmin - ls;
    let from_max = qmax - hs;
    let err_min = fabs(qmin) - fabs(ls);
    let err_max = fabs(qmax) - fabs(hs);
    var z0 = from_max;
    if (err_min < err_max) {
      z0 = from_min;
    }
    var z: i32;
    if (z0 < qmin) {
      z = params.qmin;
    } else if (z0 > qmax) {
      z = params.qmax;
    } else {
      z = i32(round(z0));
    }
    scale[row] = {{if .HalfScale}}round_half(s){{else}}s{{end}};
    packed |= (u32(z) & 255u) << (8u * i);
  }
  zp[q] = packed;
}
