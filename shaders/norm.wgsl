// norm.wgsl: layer_norm, rms_norm, group_norm (row kernels) and inference
// batch_norm (elementwise), ops/norm.go (normVariant).
//
// Row kernels: row `row` is the params.len contiguous elements at
// row * len. mean = sum / len, var = sum((x - mean)²) / len (two passes in
// f32), rstd = 1/sqrt(var + eps); rms uses mean(x²) instead and no mean.
// Serial variant: one invocation per row. Tree variant: one workgroup per
// row (folded into 2-D past 65535 workgroups), invocations striding over
// the row, combined by an unrolled workgroup-memory tree.
@group(0) @binding({{.BX}}) var<storage, read> x: array<f32>;
{{- if eq .Op "batch"}}
@group(0) @binding({{.BRM}}) var<storage, read> rmean: array<f32>;
@group(0) @binding({{.BRV}}) var<storage, read> rvar: array<f32>;
{{- end}}
{{- if .HasW}}
@group(0) @binding({{.BW}}) var<storage, read> w: array<f32>;
{{- end}}
{{- if .HasB}}
@group(0) @binding({{.BB}}) var<storage, read> b: array<f32>;
{{- end}}
@group(0) @binding({{.BY}}) var<storage, read_write> y: array<f32>;
{{- if .Stats}}
@group(0) @binding({{.BM}}) var<storage, read_write> smean: array<f32>;
@group(0) @binding({{.BR}}) var<storage, read_write> srstd: array<f32>;
{{- end}}

// Go twin: normParams in ops/norm.go.
struct Params {
  rows: u32,   // batch: elements
  len: u32,    // batch: channels
  eps: f32,
  groups: u32, // batch: elements per channel
  hw: u32,
  cpg: u32,
  _p0: u32,
  _p1: u32,
}
@group(0) @binding({{.BP}}) var<uniform> params: Params;
{{- if eq .Op "batch"}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
{{- if .Stats}}
  if (i < params.len) {
    smean[i] = rmean[i];
    srstd[i] = 1.0 / sqrt(rvar[i] + params.eps);
  }
{{- end}}
  if (i >= params.rows) { return; }
  let c = (i / params.groups) % params.len;
  var v = (x[i] - rmean[c]) * (1.0 / sqrt(rvar[c] + params.eps));
{{- if .HasW}}
  v *= w[c];
{{- end}}
{{- if .HasB}}
  v += b[c];
{{- end}}
  y[i] = v;
}
{{- else}}

// affine applies weight and bias to element i of row `row`.
fn affine(v: f32, row: u32, i: u32) -> f32 {
{{- if eq .Op "group"}}
  let c = (row % params.groups) * params.cpg + i / params.hw;
{{- else}}
  let c = i;
{{- end}}
  var r = v;
{{- if .HasW}}
  r *= w[c];
{{- end}}
{{- if .HasB}}
  r += b[c];
{{- end}}
  return r;
}
{{- if .Tree}}

var<workgroup> sh: array<f32, {{.WG}}>;

{{template "tree" (args "Name" "tree_sum" "T" "f32" "Comb" "+" "Sh" "sh" "Strides" .Strides)}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  // Folded grids overshoot: surplus workgroups still reach every barrier.
  let valid = row < params.rows;
  let base = min(row, params.rows - 1u) * params.len;
  let n = f32(params.len);
{{- if eq .Op "rms"}}
  var ss = 0.0;
  if (valid) {
    for (var i = lid; i < params.len; i += {{.WG}}u) { let v = x[base + i]; ss += v * v; }
  }
  let rstd = 1.0 / sqrt(tree_sum(ss, lid) / n + params.eps);
  let mean = 0.0;
{{- else}}
  var s = 0.0;
  if (valid) {
    for (var i = lid; i < params.len; i += {{.WG}}u) { s += x[base + i]; }
  }
  let mean = tree_sum(s, lid) / n;
  var ss = 0.0;
  if (valid) {
    for (var i = lid; i < params.len; i += {{.WG}}u) { let d = x[base + i] - mean; ss += d * d; }
  }
  let rstd = 1.0 / sqrt(tree_sum(ss, lid) / n + params.eps);
{{- end}}
  if (!valid) { return; }
  for (var i = lid; i < params.len; i += {{.WG}}u) {
    y[base + i] = affine((x[base + i] - mean) * rstd, row, i);
  }
{{- if .Stats}}
  if (lid == 0u) {
    smean[row] = mean;
    srstd[row] = rstd;
  }
{{- end}}
}
{{- else}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (row >= params.rows) { return; }
  let base = row * params.len;
  let n = f32(params.len);
{{- if eq .Op "rms"}}
  var ss = 0.0;
  for (var i = 0u; i < params.len; i++) { let v = x[base + i]; ss += v * v; }
  let mean = 0.0;
{{- else}}
  var s = 0.0;
  for (var i = 0u; i < params.len; i++) { s += x[base + i]; }
  let mean = s / n;
  var ss = 0.0;
  for (var i = 0u; i < params.len; i++) { let d = x[base + i] - mean; ss += d * d; }
{{- end}}
  let rstd = 1.0 / sqrt(ss / n + params.eps);
  for (var i = 0u; i < params.len; i++) {
    y[base + i] = affine((x[base + i] - mean) * rstd, row, i);
  }
{{- if .Stats}}
  smean[row] = mean;
  srstd[row] = rstd;
{{- end}}
}
{{- end}}
{{- end}}
