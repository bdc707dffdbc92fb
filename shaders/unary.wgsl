// unary.wgsl: elementwise aten.relu / aten.sigmoid. ops/unary.go picks the
// variant (unaryVariant): Op, the element type T, and W, the elements per
// invocation (4 when the element count is a multiple of 4, read as vec4).
@group(0) @binding(0) var<storage, read> x: array<{{.V}}>;
@group(0) @binding(1) var<storage, read_write> y: array<{{.V}}>;

// Go twin: unaryParams in ops/unary.go.
struct Params { n: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(2) var<uniform> params: Params;

fn apply(v: {{.V}}) -> {{.V}} {
{{- if eq .Op "relu"}}
  // select, not max: NaN stays NaN as in torch (max(NaN, 0) is
  // unspecified in WGSL).
  return select(v, {{.V}}(), v < {{.V}}());
{{- else if eq .Op "sigmoid"}}
  // e = exp(-|v|) is in (0, 1], so neither branch overflows:
  // sigmoid(v) = 1/(1+e) for v >= 0 and e/(1+e) for v < 0.
  let e = exp(-abs(v));
  return select({{.V}}(1.0), e, v < {{.V}}()) / ({{.V}}(1.0) + e);
{{- end}}
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n) { return; }
  y[i] = apply(x[i]);
}
