// gemv_fused.wgsl: one-row linears that read the same input fused into one
// dispatch (ops/fuse_linear.go): up to {{len .Segs}} weights w0.. with one output
// each (q, k and v projections: the output columns of all segments are
// one column space, each column block belongs to one segment), or, with
// Pair, SwiGLU's two weights and one output out0 = silu(x·w0ᵀ)·(x·w1ᵀ)
// (the gate's SiLU as the linear epilogue computes it, then the product
// as the up projection's fused mul). With Norm the input is the rms_norm
// that every one of these linears reads, computed here from its input x
// (x · 1/sqrt(mean(x²) + eps) · g, the formulas of norm.wgsl) instead of
// being written by a dispatch of its own: every workgroup recomputes the
// row's 1/rms (K loads, cheap at one row, where x is read whole anyway).
//
// Weight format {{.Format}}: f32v, float32 [N, K] read as vec4s (K % 4 == 0,
// one vec4 a unit); half, packed halves (ops.HalfWeightSpec, K % 8 == 0,
// one vec4<u32> of 8 halves a unit).
//
// Shape {{.Shape}}: "cpu" is gemv.wgsl's (each invocation {{len .Cols}} columns, one
// serial loop over K, no workgroup memory: lavapipe); "gpu" is
// gemv_gpu.wgsl's ({{.Lanes}} lanes along K per column, {{.GCols}} columns a workgroup,
// partial sums reduced by a workgroup-memory tree). Each sums its units in
// the order of the unfused kernel of its family, so a fused projection
// equals the unfused one bit for bit; only the norm's 1/rms may round
// differently (its sum of squares is taken in another order).
//
// One dispatch, no K chunks: the caller fuses only when K fits one
// (ops.fusedGEMVMaxUnits).
{{- $b := 0}}
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
{{- if .NormW}}
@group(0) @binding(1) var<storage, read> g: array<vec4<f32>>;
{{- end}}
{{- $wt := "vec4<f32>"}}{{if eq .Format "half"}}{{$wt = "vec4<u32>"}}{{end}}
{{- range $i, $s := .Segs}}
@group(0) @binding({{add $.WBase $i}}) var<storage, read> w{{$s}}: array<{{$wt}}>;
{{- end}}
{{- range $i, $o := .Outs}}
@group(0) @binding({{add $.OBase $i}}) var<storage, read_write> out{{$o}}: array<f32>;
{{- end}}
@group(0) @binding({{.PBind}}) var<uniform> params: Params;

// Go twin: fusedGEMVParams in ops/fuse_linear.go.
struct Params {
  k: u32,          // weight row length in units
  len: u32,        // K in elements (the norm's n)
  eps: f32,
  _p0: u32,
  n: vec4<u32>,    // columns of each segment
  blk: vec4<u32>,  // first column block of each segment (blk[s+1]: the next one's)
  nblk: u32,       // column blocks in all
  _p1: u32,
  _p2: u32,
  _p3: u32,
}
{{- if .Pair}}
{{- template "epilogue_act" (args "Act" "sigmoid" "T" "f32")}}

// swiglu is the gate's SiLU (the linear epilogue's v · act(v)) times up
// (the fused mul's v · res).
fn swiglu(gate: f32, up: f32) -> f32 {
  let s = gate * act(gate);
  return up * s;
}
{{- end}}
{{- if .Norm}}

// rstd is 1/rms of x, set by norm_prologue.
var<private> rstd: f32;
{{- end}}

// xin returns input vec4 i: x's, or with Norm the normalized one.
fn xin(i: u32) -> vec4<f32> {
{{- if .Norm}}
  var v = x[i] * rstd;
{{- if .NormW}}
  v *= g[i];
{{- end}}
  return v;
{{- else}}
  return x[i];
{{- end}}
}
{{- if eq .Shape "gpu"}}

// part holds the lanes' partial sums (with Pair, the up projection's at
// part[{{.WG}} + li]).
var<workgroup> part: array<f32, {{if .Pair}}{{mul .WG 2}}{{else}}{{.WG}}{{end}}>;
{{- end}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
{{- if .Norm}}
{{- if eq .Shape "gpu"}}
  // 1/rms: the lanes stride over x, then the tree.
  var ss = 0.0;
  for (var i = li; i < params.len / 4u; i += {{.WG}}u) {
    let v = x[i];
    ss += v.x * v.x;
    ss += v.y * v.y;
    ss += v.z * v.z;
    ss += v.w * v.w;
  }
  part[li] = ss;
  workgroupBarrier();
{{- range $st := .WGStrides}}
  if (li < {{$st}}u) {
    part[li] += part[li + {{$st}}u];
  }
  workgroupBarrier();
{{- end}}
  let n = f32(params.len);
  let ssum = part[0];
  rstd = 1.0 / sqrt(ssum / n + params.eps);
  workgroupBarrier();
{{- else}}
  // 1/rms, one serial sum (norm.wgsl's serial form).
  var ss = 0.0;
  for (var i = 0u; i < params.len / 4u; i++) {
    let v = x[i];
    ss += v.x * v.x;
    ss += v.y * v.y;
    ss += v.z * v.z;
    ss += v.w * v.w;
  }
  let n = f32(params.len);
  let ssum = ss;
  rstd = 1.0 / sqrt(ssum / n + params.eps);
{{- end}}
{{- end}}
{{- if eq .Shape "gpu"}}
  let blk = wid.x + wid.y * nwg.x;
  let kl = li % {{.Lanes}}u;
  let cl = li / {{.Lanes}}u;
{{- else}}
  let blk = (wid.x + wid.y * nwg.x) * {{.WG}}u + li;
  if (blk >= params.nblk) { return; }
{{- end}}
{{- if .Pair}}
  {{template "fg_seg" (args "S" $ "I" 0 "W" "w0" "W2" "w1" "O" "out0")}}
{{- else}}
{{- range $i, $s := .Segs}}
  {{if gt $i 0}}else {{end}}if (blk < params.blk[{{add $i 1}}]) {{template "fg_seg" (args "S" $ "I" $i "W" (printf "w%d" $s) "W2" "" "O" (printf "out%d" $s))}}
{{- end}}
{{- end}}
}

{{- define "fg_dot"}}
{{- /* acc += unit U of weight array W (value name V) dotted with the input. */ -}}
{{- if eq .S.Format "half"}}
      {{.Acc}} += dot(xl, vec4<f32>(unpack2x16float({{.V}}.x), unpack2x16float({{.V}}.y))) + dot(xh, vec4<f32>(unpack2x16float({{.V}}.z), unpack2x16float({{.V}}.w)));
{{- else}}
      {{.Acc}} += dot(xv, {{.V}});
{{- end}}
{{- end}}

{{- define "fg_x"}}
{{- if eq .S.Format "half"}}
      let xl = xin(2u * {{.U}});
      let xh = xin(2u * {{.U}} + 1u);
{{- else}}
      let xv = xin({{.U}});
{{- end}}
{{- end}}

{{- define "fg_seg"}}
{{- /* Segment I: weight W (and W2, the up projection, with Pair), output O. */ -}}
{{- $s := .S}}
{
    let n = params.n[{{.I}}];
    let kk = params.k;
{{- if eq $s.Shape "gpu"}}
    let n0 = (blk - params.blk[{{.I}}]) * {{$s.GCols}}u + cl;
    let wr = min(n0, n - 1u) * kk;
    var acc = 0.0;
{{- if .W2}}
    var acc2 = 0.0;
{{- end}}
    var k = kl;
    // Two units a trip, then the rest (gemv_gpu.wgsl's order).
    for (; k + {{$s.Lanes}}u < kk; k += {{mul 2 $s.Lanes}}u) {
      let u0 = k;
      let u1 = k + {{$s.Lanes}}u;
      let a0 = {{.W}}[wr + u0];
      let a1 = {{.W}}[wr + u1];
{{- if .W2}}
      let b0 = {{.W2}}[wr + u0];
      let b1 = {{.W2}}[wr + u1];
{{- end}}
      {
{{- template "fg_x" (args "S" $s "U" "u0")}}
{{- template "fg_dot" (args "S" $s "Acc" "acc" "V" "a0")}}
{{- if .W2}}
{{- template "fg_dot" (args "S" $s "Acc" "acc2" "V" "b0")}}
{{- end}}
      }
      {
{{- template "fg_x" (args "S" $s "U" "u1")}}
{{- template "fg_dot" (args "S" $s "Acc" "acc" "V" "a1")}}
{{- if .W2}}
{{- template "fg_dot" (args "S" $s "Acc" "acc2" "V" "b1")}}
{{- end}}
      }
    }
    for (; k < kk; k += {{$s.Lanes}}u) {
      let a0 = {{.W}}[wr + k];
{{- if .W2}}
      let b0 = {{.W2}}[wr + k];
{{- end}}
{{- template "fg_x" (args "S" $s "U" "k")}}
{{- template "fg_dot" (args "S" $s "Acc" "acc" "V" "a0")}}
{{- if .W2}}
{{- template "fg_dot" (args "S" $s "Acc" "acc2" "V" "b0")}}
{{- end}}
    }
    part[li] = acc;
{{- if .W2}}
    part[{{$s.WG}}u + li] = acc2;
{{- end}}
    workgroupBarrier();
{{- range $st := $s.Strides}}
    if (kl < {{$st}}u) {
      part[li] += part[li + {{$st}}u];
{{- if $.W2}}
      part[{{$s.WG}}u + li] += part[{{$s.WG}}u + li + {{$st}}u];
{{- end}}
    }
    workgroupBarrier();
{{- end}}
    if (kl == 0u && n0 < n) {
{{- if .W2}}
      {{.O}}[n0] = swiglu(1.0 * part[li], 1.0 * part[{{$s.WG}}u + li]);
{{- else}}
      {{.O}}[n0] = 1.0 * part[li];
{{- end}}
    }
  }
{{- else}}
    let col0 = (blk - params.blk[{{.I}}]) * {{len $s.Cols}}u;
{{- range $s.Cols}}
    let r{{.}} = min(col0 + {{.}}u, n - 1u) * kk;
    var acc{{.}} = 0.0;
{{- if $.W2}}
    var up{{.}} = 0.0;
{{- end}}
{{- end}}
    for (var k = 0u; k < kk; k++) {
{{- range $s.Cols}}
      let a{{.}} = {{$.W}}[r{{.}} + k];
{{- if $.W2}}
      let b{{.}} = {{$.W2}}[r{{.}} + k];
{{- end}}
{{- end}}
{{- template "fg_x" (args "S" $s "U" "k")}}
{{- range $s.Cols}}
{{- template "fg_dot" (args "S" $s "Acc" (printf "acc%d" .) "V" (printf "a%d" .))}}
{{- if $.W2}}
{{- template "fg_dot" (args "S" $s "Acc" (printf "up%d" .) "V" (printf "b%d" .))}}
{{- end}}
{{- end}}
    }
{{- range $s.Cols}}
    if (col0 + {{.}}u < n) {
{{- if $.W2}}
      {{$.O}}[col0 + {{.}}u] = swiglu(1.0 * acc{{.}}, 1.0 * up{{.}});
{{- else}}
      {{$.O}}[col0 + {{.}}u] = 1.0 * acc{{.}};
{{- end}}
    }
{{- end}}
  }
{{- end}}
{{- end}}
