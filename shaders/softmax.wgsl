// softmax.wgsl: aten._softmax / aten._log_softmax along one dim
// (ops/softmax.go, softmaxVariant).
//
// Rows are split like in reduce.wgsl: output row `row` starts at input
// offset kept_base(row), and element r of the row is at red_off(r) from it.
// Three passes per row: m = max (NaN wins), s = sum(exp(x - m)), then
// out = exp(x - m) / s, or x - m - log(s).
//
// Serial variant: one invocation per row. Tree variant: one workgroup per
// row (rows folded into 2-D past 65535 workgroups), invocations striding
// over the row, combined by an unrolled workgroup-memory tree.
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

{{template "rows" .}}

// The row max through common.tmpl's fmax: NaN wins, on the bits.
{{template "num" (args "T" "f32")}}

fn result(v: f32, m: f32, s: f32) -> f32 {
{{- if .Log}}
  return v - m - log(s);
{{- else}}
  return exp(v - m) / s;
{{- end}}
}
{{- if .Tree}}

var<workgroup> sh: array<f32, {{.WG}}>;

{{template "tree" (args "Name" "tree_max" "T" "f32" "Comb" "fmax" "Sh" "sh" "Strides" .Strides)}}

{{template "tree" (args "Name" "tree_sum" "T" "f32" "Comb" "+" "Sh" "sh" "Strides" .Strides)}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  // Folded grids overshoot: surplus workgroups still reach every barrier.
  let valid = row < params.rows;
  let base = kept_base(min(row, params.rows - 1u));
  var m = bitcast<f32>(0xff800000u);
  if (valid) {
    for (var r = lid; r < params.extent; r += {{.WG}}u) { m = fmax(m, x[base + red_off(r)]); }
  }
  m = tree_max(m, lid);
  var s = 0.0;
  if (valid) {
    for (var r = lid; r < params.extent; r += {{.WG}}u) { s += exp(x[base + red_off(r)] - m); }
  }
  s = tree_sum(s, lid);
  if (valid) {
    for (var r = lid; r < params.extent; r += {{.WG}}u) {
      let i = base + red_off(r);
      y[i] = result(x[i], m, s);
    }
  }
}
{{- else}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (row >= params.rows) { return; }
  let base = kept_base(row);
  var m = bitcast<f32>(0xff800000u);
  for (var r = 0u; r < params.extent; r++) { m = fmax(m, x[base + red_off(r)]); }
  var s = 0.0;
  for (var r = 0u; r < params.extent; r++) { s += exp(x[base + red_off(r)] - m); }
  for (var r = 0u; r < params.extent; r++) {
    let i = base + red_off(r);
    y[i] = result(x[i], m, s);
  }
}
{{- end}}
