// qgemv.wgsl: one-row (decode) 4-bit group-symmetric linear,
// out = x·Wᵀ (+ bias), then an optional epilogue. Recorded by
// ops/quant_linear.go (recordQGEMV) for et_vk.linear_q4gsw and
// linear_dq8ca_q4gsw with M = 1, K % 32 == 0 and a group size that is a
// multiple of 32; other shapes run qlinear.wgsl.
//
// x is [K] (vec4s). w holds N rows of K/2 bytes, read as vec4<u32>: one
// vec4 is 32 consecutive k, word h of it k = 8h..8h+7, code u of k = 8h+j
// in bits 4j..4j+3 (even k in the low nibble), value u − 8. Scales are
// s[gi·ld_s + n] per group gi of g consecutive k; when ld_s is a multiple
// of 4 (the exporter's roundup(N, 4)) an invocation reads its columns'
// scales of a group as vec4s, a quarter of the loads (llvmpipe runs each
// storage load as a loop over the lanes; 1.02-1.10× the kernel's rate at
// the stories110M shapes). The vec4s of a last, partial column block may
// reach past N (into padding, the next row or past the end: values that
// no written column uses).
//
// Each invocation computes {{len .Cols}} output columns. Lanes run along
// columns, {{.WG}} per workgroup. The loop walks groups, and within a group
// vec4 words of 32 k; a column's group sum is scaled once at the group's
// end. Why it is written this way (llvmpipe, measured against
// qlinear.wgsl's 1×8 tile, same run, K = N = 2048, g = 64): the per-step
// branch that reloads scales at group boundaries, the shifts, and the
// "− 8" per weight cost as much as the weight loads themselves. Here:
//   - nibble j of a word is taken in place, u & (15 << 4j), converted to
//     float (its value times 16^j, exact) and multiplied by x pre-scaled
//     by 16^-j (exact: a power of two), one fma per weight; the top
//     nibble is a shift, u >> 28;
//   - Σ (u − 8)·x = Σ u·x − 8·Σ x, and Σ x over the group is computed
//     once per lane for all its columns;
//   - the scale multiplies the group's sum, once per group and column.
//
// Groups are split into chunks (params.g_begin, g_end) so no invocation
// loops more than ops.qgemvMaxTrips times (llvmpipe cuts loops at 65535
// back-edges); later chunks add to out (accumulate != 0) and the epilogue
// (activation, then an add or mul with res, a tensor of out's shape) runs
// on the last chunk only. Columns past N read the last valid one and are
// not written.
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<vec4<u32>>;
{{- if .VecScales}}
@group(0) @binding(2) var<storage, read> s: array<vec4<f32>>;
{{- else}}
@group(0) @binding(2) var<storage, read> s: array<f32>;
{{- end}}
{{- if .DQ8}}
// Dynamic int8 activations (et_vk.linear_dq8ca_q4gsw): the row's scale xs
// and int8 zero point xz (the low byte of word 0) from
// choose_qparams_affine. Each x value is quantized as it is loaded, xq =
// clamp(round(x / xs) + xz, −128, 127) (round half to even), the kernel
// multiplies the weights by xq − xz and the sum by xs. Those products and
// a group's sums are integers below 2^24, so exact in f32, as the int8 ×
// int4 accumulation of the reference.
{{- end}}
{{- template "linear_bindings" (args "K" . "DQ8" .DQ8 "Out" "out")}}

// Go twin: the Params built in recordQGEMV (ops/quant_linear.go).
struct Params {
  n: u32,          // output columns
  words: u32,      // vec4 words per weight row (K / 32)
  gw: u32,         // vec4 words per group (g / 32)
  ld_s: u32,       // scale row stride
  g_begin: u32,    // this chunk, in groups
  g_end: u32,
  accumulate: u32,
  last: u32,
  act_lo: f32,     // clamp bounds of the epilogue
  act_hi: f32,
  _p0: u32,
  _p1: u32,
}
{{- template "linear_epilogue" (args "Act" .Act "Gate" .Gate "Res" .Res "T" "f32")}}

{{- if .DQ8}}
// round(x / xs) as the reference rounds the correctly rounded quotient,
// and the clamp on the bits (common.tmpl).
{{template "num_div"}}

{{template "num" (args "T" "vec4<f32>")}}

// The activation codes clamp(round(x / xs) + xz, -128, 127) - xz, with
// x / xs correctly rounded as the reference's. qx_fast quantizes four
// from the adapter's quotient and clears *ok where that may not be exact
// (rare); then the kernel's sum runs again with qx1, one value exactly.
fn qx1(v: f32, sc: f32, z: f32) -> f32 {
  return fclamp4(vec4<f32>(round(div_rn(v, sc)) + z), vec4<f32>(-128.0), vec4<f32>(127.0)).x - z;
}

fn qx_fast(v: vec4<f32>, sc: f32, z: f32, ok: ptr<function, bool>) -> vec4<f32> {
  return fclamp4(round_div4_fast(v, sc, ok) + vec4<f32>(z), vec4<f32>(-128.0), vec4<f32>(127.0)) - vec4<f32>(z);
}

{{end -}}
// pre returns v's 4 values pre-scaled for nibbles j0..j0+3 (16^-j each;
// the top nibble, read shifted down, gets 1).
fn pre(v: vec4<f32>, hi: bool) -> vec4<f32> {
  if (hi) {
    return v * vec4<f32>(1.52587890625e-05, 9.5367431640625e-07, 5.9604644775390625e-08, 1.0);
  }
  return v * vec4<f32>(1.0, 0.0625, 0.00390625, 0.000244140625);
}

{{- /* "groups": the loop over the weight groups of this chunk, summing
into acc*. Data: (args "D" the variant "Exact" bool): a DQ8 kernel
renders it twice, with the fast quantizer first (qx_fast, which clears
exact_ok when a quotient is too close to a half for the adapter's
division to decide it) and, only if it did, again with the exact one. */ -}}
{{- define "groups"}}{{$d := .D}}
  for (var gi = params.g_begin; gi < params.g_end; gi++) {
    let t0 = gi * params.gw;
    let t1 = min(t0 + params.gw, words);
    var nsx = 0.0;
{{- range $d.Cols}}
    var q{{.}} = 0.0;
{{- end}}
    for (var t = t0; t < t1; t++) {
{{- if .Exact}}
      // The exact pass (rare) quantizes the step's x values in a loop
      // with one call of the exact quantizer, so that it is compiled
      // once, not once per value.
      var xqa: array<vec4<f32>, {{len $d.Words}}>;
      var xqb: array<vec4<f32>, {{len $d.Words}}>;
      for (var j = 0u; j < {{len $d.Words}}u * 8u; j++) {
        let q = qx1(x[t * 8u + j / 4u][j % 4u], xsc, xzp);
        if (((j / 4u) & 1u) == 0u) {
          xqa[j / 8u][j % 4u] = q;
        } else {
          xqb[j / 8u][j % 4u] = q;
        }
      }
{{- end}}
{{- range $h := $d.Words}}
{{- if and $d.DQ8 $.Exact}}
      let xa{{$h}} = xqa[{{$h}}];
      let xb{{$h}} = xqb[{{$h}}];
{{- else if $d.DQ8}}
      let xa{{$h}} = qx_fast(x[t * 8u + {{$h}}u * 2u], xsc, xzp, &exact_ok);
      let xb{{$h}} = qx_fast(x[t * 8u + {{$h}}u * 2u + 1u], xsc, xzp, &exact_ok);
{{- else}}
      let xa{{$h}} = x[t * 8u + {{$h}}u * 2u];
      let xb{{$h}} = x[t * 8u + {{$h}}u * 2u + 1u];
{{- end}}
{{- end}}
      nsx -= 8.0 * ({{range $i, $h := $d.Words}}{{if $i}} + {{end}}dot(xa{{$h}} + xb{{$h}}, vec4<f32>(1.0)){{end}});
{{- range $h := $d.Words}}
      let ya{{$h}} = pre(xa{{$h}}, false);
      let yb{{$h}} = pre(xb{{$h}}, true);
{{- end}}
{{- range $c := $d.Cols}}
      {
        let u = bitcast<vec4<i32>>(w[wr{{$c}} + t]);
        var q = q{{$c}};
{{- range $h := $d.Words}}
{{- $u := index $d.Comp $h}}
        q = fma(ya{{$h}}.x, f32(u.{{$u}} & 15), q);
        q = fma(ya{{$h}}.y, f32(u.{{$u}} & 240), q);
        q = fma(ya{{$h}}.z, f32(u.{{$u}} & 3840), q);
        q = fma(ya{{$h}}.w, f32(u.{{$u}} & 61440), q);
        q = fma(yb{{$h}}.x, f32(u.{{$u}} & 983040), q);
        q = fma(yb{{$h}}.y, f32(u.{{$u}} & 15728640), q);
        q = fma(yb{{$h}}.z, f32(u.{{$u}} & 251658240), q);
        q = fma(yb{{$h}}.w, f32(bitcast<u32>(u.{{$u}}) >> 28u), q);
{{- end}}
        q{{$c}} = q;
      }
{{- end}}
    }
{{- if $d.VecScales}}
    let sb = (gi * params.ld_s + col0) / 4u;
{{- range $d.ScaleCols}}
{{- if .First}}
    let sv{{.V}} = s[sb + {{.V}}u];
{{- end}}
    acc{{.C}} = fma(sv{{.V}}.{{.Comp}}, q{{.C}} + nsx, acc{{.C}});
{{- end}}
{{- else}}
{{- range $d.Cols}}
    acc{{.}} = fma(s[gi * params.ld_s + n{{.}}], q{{.}} + nsx, acc{{.}});
{{- end}}
{{- end}}
  }
{{- end}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let col0 = ((wid.x + wid.y * nwg.x) * {{.WG}}u + li) * {{len .Cols}}u;
  let n = params.n;
  if (col0 >= n) {
    return;
  }
  let words = params.words;
{{- if .DQ8}}
  let xsc = xs[0];
  let xzp = f32((bitcast<i32>(xz[0]) << 24u) >> 24u);
{{- end}}
{{- range .Cols}}
  let n{{.}} = min(col0 + {{.}}u, n - 1u);
  let wr{{.}} = n{{.}} * words;
  var acc{{.}} = 0.0;
{{- end}}
{{- if .DQ8}}
  // The fast quantizer decides every code from the adapter's quotient
  // unless one is too close to a half (rare): then the whole sum runs
  // again with the exact one. The branch stays out of the loop, where it
  // cost lavapipe half the kernel's time.
  var exact_ok = true;
{{- template "groups" (args "D" . "Exact" false)}}
  if (!exact_ok) {
{{- range .Cols}}
    acc{{.}} = 0.0;
{{- end}}
{{- template "groups" (args "D" . "Exact" true)}}
  }
{{- else}}
{{- template "groups" (args "D" . "Exact" false)}}
{{- end}}
{{- range $c := .Cols}}
  if (col0 + {{$c}}u < n) {
{{- $v := printf "acc%d" $c}}{{if $.DQ8}}{{$v = printf "acc%d * xsc" $c}}{{end}}
    {{template "linear_store" (args "Out" "out" "O" (printf "col0 + %du" $c) "V" $v "Base" (and $.Bias (printf "bias[col0 + %du]" $c)) "Chunked" true "Epi" (or $.Act $.Res))}}
  }
{{- end}}
}
