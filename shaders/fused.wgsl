// fused.wgsl: a chain of float32 elementwise ops in one kernel
// (ops/fuse.go). Each invocation loads its element(s) of the first operand
// into v, applies every step to v and stores v; no intermediate value is
// written. ops/fuse.go picks the variant (fusedVariant):
//
//   - Operands: the tensors read, each broadcast to the chain's shape:
//     full (the whole shape, read at i), one (a single element, splatted)
//     or walk (a general broadcast: the invocation's coordinates are peeled
//     off params.shp, as binary.wgsl does; Vec when its innermost stride is
//     1, so a vec4 is read whole).
//   - Steps: one WGSL statement per op, generated from the same formulas as
//     unary.wgsl and binary.wgsl (keep them in step). A step's scalars are
//     params.sc[step]: x, y the unary scalars (bounds, slope, lambd), z the
//     binary alpha, w a Scalar other.
//   - W: elements per invocation, 4 (T = vec4<f32>) when the element count
//     and every broadcast operand's innermost run are multiples of 4.
{{- range $k, $o := .Operands}}
@group(0) @binding({{$k}}) var<storage, read> in{{$k}}: array<{{$o.Buf}}>;
{{- end}}
@group(0) @binding({{.OBind}}) var<storage, read_write> o: array<{{.T}}>;

// Go twin: fuseDispatch in ops/fuse.go.
struct Params {
  n: u32,      // invocations with work
  numel: u32,  // elements
  _p0: u32,
  _p1: u32,
  sc: array<vec4<f32>, {{.NS}}>,
  // Per walk operand: 8 merged dims (innermost first), then its 8 element
  // strides (0 where broadcast).
  shp: array<vec4<u32>, {{.NShp}}>,
}
@group(0) @binding({{.PBind}}) var<uniform> params: Params;

fn is_nan(v: {{.T}}) -> {{if eq .W 4}}vec4<bool>{{else}}bool{{end}} {
  return (bitcast<{{if eq .W 4}}vec4<u32>{{else}}u32{{end}}>(v) & {{if eq .W 4}}vec4<u32>{{else}}u32{{end}}(0x7fffffffu)) > {{if eq .W 4}}vec4<u32>{{else}}u32{{end}}(0x7f800000u);
}

// clamp_keep_nan clamps v to [lo, hi] with selects, so NaN stays NaN;
// lo > hi gives hi, as torch.
fn clamp_keep_nan(v: {{.T}}, lo: {{.T}}, hi: {{.T}}) -> {{.T}} {
  let a = select(v, lo, v < lo);
  return select(a, hi, a > hi);
}

// tanh_, sigmoid_, erfc_, gelu_ and gelu_tanh_ are unary.wgsl's forms.
fn tanh_(v: {{.T}}) -> {{.T}} {
  let a = abs(v);
  let z = v * v;
  let small = ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z
      + 1.33314422036e-1) * z - 3.33332819422e-1) * z * v + v;
  let e = exp(-2.0 * a);
  let t = (1.0 - e) / (1.0 + e);
  return select(select(t, -t, v < {{.T}}()), small, a < {{.T}}(0.625));
}

fn sigmoid_(v: {{.T}}) -> {{.T}} {
  let e = exp(-abs(v));
  return select({{.T}}(1.0), e, v < {{.T}}()) / (1.0 + e);
}

fn erfc_(z: {{.T}}) -> {{.T}} {
  let t = 1.0 / (1.0 + 0.5 * z);
  let p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
      + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * exp(-z * z + p);
}

fn gelu_(v: {{.T}}) -> {{.T}} {
  let c = 0.5 * erfc_(abs(v) * 0.70710678118654752);
  return v * select(c, 1.0 - c, v > {{.T}}());
}

fn gelu_tanh_(v: {{.T}}) -> {{.T}} {
  let u = 0.79788456080286536 * (v + 0.044715 * v * v * v);
  return v / (1.0 + exp(-2.0 * u));
}

// minimum_ and maximum_ propagate NaN, as binary.wgsl's.
fn minimum_(x: {{.T}}, y: {{.T}}) -> {{.T}} {
  return select(min(x, y), {{.T}}(bitcast<f32>(0x7fc00000u)), is_nan(x) | is_nan(y));
}

fn maximum_(x: {{.T}}, y: {{.T}}) -> {{.T}} {
  return select(max(x, y), {{.T}}(bitcast<f32>(0x7fc00000u)), is_nan(x) | is_nan(y));
}
{{- range $k, $o := .Operands}}
{{- if eq $o.Kind "walk"}}

// off{{$k}} is operand {{$k}}'s element offset for output element e.
fn off{{$k}}(e: u32) -> u32 {
  var rem = e;
  var off = 0u;
  for (var d = 0u; d < {{$o.Rank}}u; d++) {
    let n = params.shp[{{$o.Base}}u + d / 4u][d % 4u];
    off += (rem % n) * params.shp[{{$o.Base}}u + 2u + d / 4u][d % 4u];
    rem = rem / n;
  }
  return off;
}
{{- end}}

fn load{{$k}}(i: u32) -> {{$.T}} {
{{- if eq $o.Kind "full"}}
  return in{{$k}}[i];
{{- else if eq $o.Kind "one"}}
  return {{$.T}}(in{{$k}}[0]);
{{- else if $o.Vec}}
  return in{{$k}}[off{{$k}}(4u * i) / 4u];
{{- else}}
  return {{$.T}}(in{{$k}}[off{{$k}}({{if eq $.W 4}}4u * {{end}}i)]);
{{- end}}
}
{{- end}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n) { return; }
  var v = load0(i);
{{- range .Steps}}
  {{.}}
{{- end}}
  o[i] = v;
}
