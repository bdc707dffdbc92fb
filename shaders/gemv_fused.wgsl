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
// row's 1/rms and stages the normalized row in workgroup memory (K loads,
// cheap at one row, where x is read whole anyway).
//
// Weight format {{.Format}}: f32v, float32 [N, K] read as vec4s (K % 4 == 0,
// one vec4 a unit); half, packed halves (ops.HalfWeightSpec, K % 8 == 0,
// one vec4<u32> of 8 halves a unit); q4, linear_q4gsw's 4-bit codes, one
// vec4<u32> of 32 k a unit, weight w{i}'s scales s{i}[(unit / gw[i])·lds[i]
// + n], summed as gemv_gpu.wgsl (gpu) or qgemv.wgsl (cpu: group sums, the
// nibbles taken in place against pre-scaled x, Σ u·x − 8·Σ x).
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
{{- $wt := "vec4<f32>"}}{{if ne .Format "f32v"}}{{$wt = "vec4<u32>"}}{{end}}
{{- template "fused_linears" (args "K" . "W" $wt "Scales" (eq .Format "q4"))}}

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
  gw: vec4<u32>,   // q4: units per scale group of each weight
  lds: vec4<u32>,  // q4: scale row stride of each weight
}
{{- if .Norm}}

// xn is the normalized input, (x · rstd) · g (norm.wgsl's formula),
// written once by each workgroup's prologue: the loops read it from
// workgroup memory instead of x and g from storage (llvmpipe pays for
// every storage load; a GPU reads the staged activation).
var<workgroup> xn: array<vec4<f32>, {{.XN}}>;
{{- if eq .Shape "cpu"}}

// sq holds the invocations' partial sums of squares.
var<workgroup> sq: array<f32, {{.WG}}>;
{{- end}}
{{- end}}

// xin returns input vec4 i: x's, or with Norm the normalized one.
fn xin(i: u32) -> vec4<f32> {
{{- if .Norm}}
  return xn[i];
{{- else}}
  return x[i];
{{- end}}
}
{{- if and (eq .Format "q4") (eq .Shape "cpu")}}

// pre returns v's 4 values pre-scaled for nibbles j0..j0+3 (16^-j each;
// the top nibble, read shifted down, gets 1): qgemv.wgsl's.
fn pre(v: vec4<f32>, hi: bool) -> vec4<f32> {
  if (hi) {
    return v * vec4<f32>(1.52587890625e-05, 9.5367431640625e-07, 5.9604644775390625e-08, 1.0);
  }
  return v * vec4<f32>(1.0, 0.0625, 0.00390625, 0.000244140625);
}
{{- else if eq .Format "q4"}}

// dec4 returns the 4-bit weights (code − 8) of nibbles half·4 .. half·4+3
// of word u (gemv_gpu.wgsl's).
fn dec4(u: u32, half: u32) -> vec4<f32> {
  let sh = vec4<u32>(0u, 4u, 8u, 12u) + vec4<u32>(half * 16u);
  return vec4<f32>((vec4<u32>(u) >> sh) & vec4<u32>(15u)) - vec4<f32>(8.0);
}
{{- end}}
{{- if eq .Shape "gpu"}}

// part holds the lanes' partial sums (with Pair, the up projection's at
// part[{{.WG}} + li]).
var<workgroup> part: array<f32, {{if .Pair}}{{mul .WG 2}}{{else}}{{.WG}}{{end}}>;
{{- end}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
{{- if .Norm}}
  // 1/rms: the invocations stride over x, then {{if eq .Shape "gpu"}}the tree{{else}}one sum of their partial sums, in the same order in each{{end}}.
{{- template "fused_rstd" (args "K" . "Tree" (eq .Shape "gpu"))}}
  for (var i = li; i < params.len / 4u; i += {{.WG}}u) {
    var v = x[i] * rstd;
{{- if .NormW}}
    v *= g[i];
{{- end}}
    xn[i] = v;
  }
  workgroupBarrier();
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
  {{template "fg_seg" (args "S" $ "I" 0 "W" "w0" "W2" "w1" "Sc" "s0" "Sc2" "s1" "I2" 1 "O" "out0")}}
{{- else}}
{{- range $i, $s := .Segs}}
  {{if gt $i 0}}else {{end}}if (blk < params.blk[{{add $i 1}}]) {{template "fg_seg" (args "S" $ "I" $i "W" (printf "w%d" $s) "W2" "" "Sc" (printf "s%d" $s) "Sc2" "" "I2" 0 "O" (printf "out%d" $s))}}
{{- end}}
{{- end}}
}

{{- define "fg_dot"}}
{{- /* Acc += weight unit V (unit index U; q4: of the weight whose scales are Sc, segment I) dotted with the input. */ -}}
{{- if eq .S.Format "q4"}}
      {
        let sc = {{.Sc}}[({{.U}} / params.gw[{{.I}}]) * params.lds[{{.I}}] + nn];
        let q = dot(xq0, dec4({{.V}}.x, 0u)) + dot(xq1, dec4({{.V}}.x, 1u)) + dot(xq2, dec4({{.V}}.y, 0u)) + dot(xq3, dec4({{.V}}.y, 1u))
          + dot(xq4, dec4({{.V}}.z, 0u)) + dot(xq5, dec4({{.V}}.z, 1u)) + dot(xq6, dec4({{.V}}.w, 0u)) + dot(xq7, dec4({{.V}}.w, 1u));
        {{.Acc}} = fma(sc, q, {{.Acc}});
      }
{{- else if eq .S.Format "half"}}
      {{.Acc}} += dot(xl, vec4<f32>(unpack2x16float({{.V}}.x), unpack2x16float({{.V}}.y))) + dot(xh, vec4<f32>(unpack2x16float({{.V}}.z), unpack2x16float({{.V}}.w)));
{{- else}}
      {{.Acc}} += dot(xv, {{.V}});
{{- end}}
{{- end}}

{{- define "fg_x"}}
{{- if eq .S.Format "q4"}}
{{- range $j := .S.Q4X}}
      let xq{{$j}} = xin(8u * {{$.U}} + {{$j}}u);
{{- end}}
{{- else if eq .S.Format "half"}}
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
    let nn = min(n0, n - 1u);
    let wr = nn * kk;
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
{{- template "fg_dot" (args "S" $s "Acc" "acc" "V" "a0" "U" "u0" "Sc" .Sc "I" .I)}}
{{- if .W2}}
{{- template "fg_dot" (args "S" $s "Acc" "acc2" "V" "b0" "U" "u0" "Sc" .Sc2 "I" .I2)}}
{{- end}}
      }
      {
{{- template "fg_x" (args "S" $s "U" "u1")}}
{{- template "fg_dot" (args "S" $s "Acc" "acc" "V" "a1" "U" "u1" "Sc" .Sc "I" .I)}}
{{- if .W2}}
{{- template "fg_dot" (args "S" $s "Acc" "acc2" "V" "b1" "U" "u1" "Sc" .Sc2 "I" .I2)}}
{{- end}}
      }
    }
    for (; k < kk; k += {{$s.Lanes}}u) {
      let a0 = {{.W}}[wr + k];
{{- if .W2}}
      let b0 = {{.W2}}[wr + k];
{{- end}}
{{- template "fg_x" (args "S" $s "U" "k")}}
{{- template "fg_dot" (args "S" $s "Acc" "acc" "V" "a0" "U" "k" "Sc" .Sc "I" .I)}}
{{- if .W2}}
{{- template "fg_dot" (args "S" $s "Acc" "acc2" "V" "b0" "U" "k" "Sc" .Sc2 "I" .I2)}}
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
{{- else if eq $s.Format "q4"}}
{{- template "fg_q4cpu" .}}
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


{{- define "fg_q4cpu"}}
{{- /* The cpu shape's q4 segment (inside fg_seg's block): qgemv.wgsl's
loop over groups, for weight W (scales Sc, params I) and with Pair W2
(scales Sc2, params I2, the same group size). */ -}}
{{- $s := .S}}
    let words = params.k;
    let gw = params.gw[{{.I}}];
    let col0 = (blk - params.blk[{{.I}}]) * {{len $s.Cols}}u;
{{- range $s.Cols}}
    let n{{.}} = min(col0 + {{.}}u, n - 1u);
    let wr{{.}} = n{{.}} * words;
    var acc{{.}} = 0.0;
{{- if $.W2}}
    var up{{.}} = 0.0;
{{- end}}
{{- end}}
    let ngroups = (words + gw - 1u) / gw;
    for (var gi = 0u; gi < ngroups; gi++) {
      let t0 = gi * gw;
      let t1 = min(t0 + gw, words);
      var nsx = 0.0;
{{- range $s.Cols}}
      var q{{.}} = 0.0;
{{- if $.W2}}
      var r{{.}} = 0.0;
{{- end}}
{{- end}}
      for (var t = t0; t < t1; t++) {
{{- range $h := $s.Q4X4}}
        let xa{{$h}} = xin(t * 8u + {{$h}}u * 2u);
        let xb{{$h}} = xin(t * 8u + {{$h}}u * 2u + 1u);
{{- end}}
        nsx -= 8.0 * ({{range $i, $h := $s.Q4X4}}{{if $i}} + {{end}}dot(xa{{$h}} + xb{{$h}}, vec4<f32>(1.0)){{end}});
{{- range $h := $s.Q4X4}}
        let ya{{$h}} = pre(xa{{$h}}, false);
        let yb{{$h}} = pre(xb{{$h}}, true);
{{- end}}
{{- range $c := $s.Cols}}
        {{template "fg_q4nib" (args "S" $s "W" $.W "C" $c "Q" (printf "q%d" $c))}}
{{- if $.W2}}
        {{template "fg_q4nib" (args "S" $s "W" $.W2 "C" $c "Q" (printf "r%d" $c))}}
{{- end}}
{{- end}}
      }
{{- range $s.Cols}}
      acc{{.}} = fma({{$.Sc}}[gi * params.lds[{{$.I}}] + n{{.}}], q{{.}} + nsx, acc{{.}});
{{- if $.W2}}
      up{{.}} = fma({{$.Sc2}}[gi * params.lds[{{$.I2}}] + n{{.}}], r{{.}} + nsx, up{{.}});
{{- end}}
{{- end}}
    }
{{- range $s.Cols}}
    if (col0 + {{.}}u < n) {
{{- if $.W2}}
      {{$.O}}[col0 + {{.}}u] = swiglu(acc{{.}}, up{{.}});
{{- else}}
      {{$.O}}[col0 + {{.}}u] = acc{{.}};
{{- end}}
    }
{{- end}}
  }
{{- end}}

{{- define "fg_q4nib"}}
{
          let u = bitcast<vec4<i32>>({{.W}}[wr{{.C}} + t]);
          var q = {{.Q}};
{{- range $h := .S.Q4X4}}
{{- $u := index $.S.Comp $h}}
          q = fma(ya{{$h}}.x, f32(u.{{$u}} & 15), q);
          q = fma(ya{{$h}}.y, f32(u.{{$u}} & 240), q);
          q = fma(ya{{$h}}.z, f32(u.{{$u}} & 3840), q);
          q = fma(ya{{$h}}.w, f32(u.{{$u}} & 61440), q);
          q = fma(yb{{$h}}.x, f32(u.{{$u}} & 983040), q);
          q = fma(yb{{$h}}.y, f32(u.{{$u}} & 15728640), q);
          q = fma(yb{{$h}}.z, f32(u.{{$u}} & 251658240), q);
          q = fma(yb{{$h}}.w, f32(bitcast<u32>(u.{{$u}}) >> 28u), q);
{{- end}}
          {{.Q}} = q;
        }
{{- end}}
