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
//   - Steps: one assignment to v per op. A unary step is the op's formula
//     from unary_formulas.tmpl, the one unary.wgsl runs; a binary step's
//     expression comes from ops/fuse.go (fuseBinaryExpr), as binary.wgsl
//     computes it (keep them in step: minimum, maximum and div through
//     the same common.tmpl helpers, fmin, fmax and div_rn, which Div
//     renders). A step's scalars are params.sc[step]: x, y the unary
//     scalars (bounds, slope, lambd), z the binary alpha, w a Scalar
//     other.
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

{{template "unary_helpers" (args "S" "f32" "T" .T)}}
{{- if .Div}}

{{template "num_div"}}
{{- end}}
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
{{- range $k, $s := .Steps}}
{{- if $s.Unary}}
  v = {{template "unary_formula" (args "Op" $s.Op "S" "f32" "T" $.T
      "A" (printf "params.sc[%d].x" $k) "B" (printf "params.sc[%d].y" $k))}}; // {{$s.Op}}
{{- else}}
  v = {{$s.Expr}}; // {{$s.Op}}
{{- end}}
{{- end}}
  o[i] = v;
}
