// gemv_gpu.wgsl: the GPU family's few-row linear (decode and short prefill
// chunks, M ≤ 16 rows per workgroup): out = alpha·(x·Wᵀ)·scale + beta·bias,
// then the fused epilogue. Chosen by ops/linear_family.go (entries
// "gpu/gemv*") on GPU adapters, or with Config.Family = FamilyGPU.
//
// Weight format {{.Format}}:
//   f32v: float32 [N, K], K % 4 == 0, one vec4 (4 k) a unit;
//   f32:  float32 [N, K], any K, one float a unit;
//   half: packed halves (ops.HalfWeightSpec) [N, K/8] vec4<u32>, 8 k a unit;
//   q4:   4-bit codes [N, K/2] bytes (linear_q4gsw: even k in the low
//         nibble, value code − 8) as vec4<u32>, 32 k a unit, scales
//         s[(unit / gw)·ld_s + n] per group of gw units (g % 32 == 0);
//   int8: int8 [N, K] per-channel (_weight_int8pack_mm), one u32 (4 k) a
//         unit, or, int8v, one vec4<u32> (16 k); out scaled by s[n].
// x is [M, K] float32 read as vec4s (scalars for f32).
//
// Shape (the opposite of the lavapipe kernels): a workgroup of {{.WG}}
// invocations computes {{.Cols}} output columns (weight rows) for {{len .Rows}}
// input rows; each column gets {{.Lanes}} lanes that walk its weight row
// together, lane l taking units l, l + {{.Lanes}}, ..., so that neighbouring
// lanes load neighbouring 16-byte words (one warp of 32 lanes reads 512
// contiguous bytes a step: coalesced), {{len .Unroll}} units in flight a trip.
// Each weight unit is loaded once and applied to every input row. The
// lanes' partial sums meet in workgroup memory (a tree of barriers; this
// WebGPU has no subgroup operations). A group's scale is read once per
// unit, shared by the rows, and the {{.Cols}} columns of a workgroup read
// neighbouring scales.
//
// K is split into chunks of at most ops.gpuGEMVMaxTrips trips a lane
// ([k_begin, k_end), in units), one dispatch each, only so that lavapipe
// (which cuts loops at 65535 back-edges) runs it correctly; later chunks
// add to out (accumulate) and the epilogue runs on the last. Columns and
// rows past N and M read the last valid one and are not written (no early
// return: every invocation reaches the barriers).
{{- $x := "vec4<f32>"}}{{if eq .Format "f32"}}{{$x = "f32"}}{{end}}
{{- $w := "vec4<u32>"}}{{if eq .Format "f32v"}}{{$w = "vec4<f32>"}}{{else if eq .Format "f32"}}{{$w = "f32"}}{{else if eq .Format "int8"}}{{$w = "u32"}}{{end}}
@group(0) @binding(0) var<storage, read> x: array<{{$x}}>;
@group(0) @binding(1) var<storage, read> w: array<{{$w}}>;
{{- if .Scales}}
@group(0) @binding(2) var<storage, read> s: array<f32>;
{{- end}}
{{- if .DQ8}}
// Dynamic int8 activations (et_vk.linear_dq8ca_q4gsw): row r's scale
// xs[r] and int8 zero point (byte r % 4 of xz[r / 4]); each x is quantized
// as it is loaded (dq8_qx, from the adapter's quotient) and the row's sum
// scaled by xs[r]. The products and a unit's sums are integers below
// 2^24, exact in f32. Where a quotient may not round as the correctly
// rounded one would (rare), the lane sums its units again with the exact
// quantizer (dq8_qx_exact) before the reduction.
{{- end}}
{{- template "linear_bindings" (args "K" . "DQ8" .DQ8 "Out" "out")}}

// Go twin: gpuGEMVParams in ops/linear_gpu.go.
{{- template "gemv_params" (args "KUnit" "in the format's units")}}
{{- template "linear_epilogue" (args "Act" .Act "Gate" .Gate "Res" .Res "T" "f32")}}
{{- if .DQ8}}

{{template "dq8_qx"}}
{{- end}}
{{- if eq .Format "q4"}}

// dec4 returns the 4-bit weights (code − 8) of nibbles half·4 .. half·4+3
// of word u.
fn dec4(u: u32, half: u32) -> vec4<f32> {
  let sh = vec4<u32>(0u, 4u, 8u, 12u) + vec4<u32>(half * 16u);
  return vec4<f32>((vec4<u32>(u) >> sh) & vec4<u32>(15u)) - vec4<f32>(8.0);
}
{{- end}}
{{- if or (eq .Format "int8") (eq .Format "int8v")}}

// dec8 returns the 4 int8 weights of word u, k0 in its low byte.
fn dec8(u: u32) -> vec4<f32> {
  return vec4<f32>((vec4<i32>(bitcast<i32>(u)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}
{{- end}}

// part holds the lanes' partial sums, row i's at part[i·{{.WG}} + lane].
var<workgroup> part: array<f32, {{mul .WG (len .Rows)}}>;

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let kl = li % {{.Lanes}}u;
  let n0 = (wid.x + wid.y * nwg.x) * {{.Cols}}u + li / {{.Lanes}}u;
  let m0 = wid.z * {{len .Rows}}u;
  let nn = min(n0, params.n - 1u);
  let wr = nn * params.k;
{{- $xpu := 1}}{{if eq .Format "half"}}{{$xpu = 2}}{{else if eq .Format "q4"}}{{$xpu = 8}}{{else if eq .Format "int8v"}}{{$xpu = 4}}{{end}}
{{- range .Rows}}
  let r{{.}} = min(m0 + {{.}}u, params.m - 1u);
  let x{{.}} = r{{.}} * params.k{{if ne $xpu 1}} * {{$xpu}}u{{end}};
{{- if $.DQ8}}
  let xs{{.}} = xs[r{{.}}];
  let xz{{.}} = f32((bitcast<i32>(xz[r{{.}} / 4u]) << (24u - 8u * (r{{.}} % 4u))) >> 24u);
{{- end}}
  var acc{{.}} = 0.0;
{{- end}}
{{- if .DQ8}}
  var exact_ok = true;
{{- end}}
  var k = params.k_begin + kl;
  // {{len .Unroll}} units a trip, then the rest one at a time.
  for (; k + {{mul (sub (len .Unroll) 1) .Lanes}}u < params.k_end; k += {{mul (len .Unroll) .Lanes}}u) {
{{- range $u := .Unroll}}
    let u{{$u}} = k + {{mul $u $.Lanes}}u;
    let w{{$u}} = w[wr + u{{$u}}];
{{- end}}
{{- range $u := .Unroll}}
    {{template "gemv_gpu_step" (args "S" $ "U" (printf "u%d" $u) "W" (printf "w%d" $u) "Exact" false)}}
{{- end}}
  }
{{- if gt (len .Unroll) 1}}
  for (; k < params.k_end; k += {{.Lanes}}u) {
    let w0 = w[wr + k];
    {{template "gemv_gpu_step" (args "S" $ "U" "k" "W" "w0" "Exact" false)}}
  }
{{- end}}
{{- if .DQ8}}
  if (!exact_ok) {
{{- range .Rows}}
    acc{{.}} = 0.0;
{{- end}}
    for (var ke = params.k_begin + kl; ke < params.k_end; ke += {{.Lanes}}u) {
      let w0 = w[wr + ke];
      {{template "gemv_gpu_step" (args "S" $ "U" "ke" "W" "w0" "Exact" true)}}
    }
  }
{{- end}}
{{- range .Rows}}
  part[{{.}}u * {{$.WG}}u + li] = acc{{.}};
{{- end}}
  workgroupBarrier();
{{- range $st := .Strides}}
  if (kl < {{$st}}u) {
{{- range $.Rows}}
    part[{{.}}u * {{$.WG}}u + li] += part[{{.}}u * {{$.WG}}u + li + {{$st}}u];
{{- end}}
  }
  workgroupBarrier();
{{- end}}
  if (kl == 0u && n0 < params.n) {
{{- range $i := .Rows}}
    if (m0 + {{$i}}u < params.m) {
      let o = (m0 + {{$i}}u) * params.n + n0;
{{- $v := printf "params.alpha * part[%du * %du + li]" $i $.WG}}{{if $.DQ8}}{{$v = printf "%s * xs%d" $v $i}}{{end}}{{if eq $.Scales "channel"}}{{$v = printf "%s * s[nn]" $v}}{{end}}
      {{template "linear_store" (args "Out" "out" "O" "o" "V" $v "Base" (and $.Bias (printf "params.beta * bias[(m0 + %du) * params.bias_sm + n0 * params.bias_sn]" $i)) "Chunked" true "Epi" (or $.Act $.Res))}}
    }
{{- end}}
  }
}

{{- define "gemv_gpu_step"}}
{{- /* One weight unit W at unit index U, applied to every row. */ -}}
{
{{- $s := .S}}{{$u := .U}}{{$w := .W}}
{{- if eq $s.Format "f32v"}}
{{- range $s.Rows}}
      acc{{.}} += dot(x[x{{.}} + {{$u}}], {{$w}});
{{- end}}
{{- else if eq $s.Format "f32"}}
{{- range $s.Rows}}
      acc{{.}} = fma(x[x{{.}} + {{$u}}], {{$w}}, acc{{.}});
{{- end}}
{{- else if eq $s.Format "half"}}
      let lo = vec4<f32>(unpack2x16float({{$w}}.x), unpack2x16float({{$w}}.y));
      let hi = vec4<f32>(unpack2x16float({{$w}}.z), unpack2x16float({{$w}}.w));
{{- range $s.Rows}}
      acc{{.}} += dot(x[x{{.}} + 2u * {{$u}}], lo) + dot(x[x{{.}} + 2u * {{$u}} + 1u], hi);
{{- end}}
{{- else if eq $s.Format "int8"}}
      let d = dec8({{$w}});
{{- range $s.Rows}}
      acc{{.}} += dot(x[x{{.}} + {{$u}}], d);
{{- end}}
{{- else if eq $s.Format "int8v"}}
      let d0 = dec8({{$w}}.x);
      let d1 = dec8({{$w}}.y);
      let d2 = dec8({{$w}}.z);
      let d3 = dec8({{$w}}.w);
{{- range $s.Rows}}
      acc{{.}} += dot(x[x{{.}} + 4u * {{$u}}], d0) + dot(x[x{{.}} + 4u * {{$u}} + 1u], d1)
        + dot(x[x{{.}} + 4u * {{$u}} + 2u], d2) + dot(x[x{{.}} + 4u * {{$u}} + 3u], d3);
{{- end}}
{{- else if eq $s.Format "q4"}}
      let sc = s[({{$u}} / params.gw) * params.ld_s + nn];
      let a0 = dec4({{$w}}.x, 0u);
      let b0 = dec4({{$w}}.x, 1u);
      let a1 = dec4({{$w}}.y, 0u);
      let b1 = dec4({{$w}}.y, 1u);
      let a2 = dec4({{$w}}.z, 0u);
      let b2 = dec4({{$w}}.z, 1u);
      let a3 = dec4({{$w}}.w, 0u);
      let b3 = dec4({{$w}}.w, 1u);
{{- if $s.DQ8}}
      // The unit's decoded weights in an array and a loop over its 8 x
      // vec4s, so that each row calls the quantizer once in the code (a
      // big kernel costs llvmpipe seconds of compiling).
      var wd = array<vec4<f32>, 8>(a0, b0, a1, b1, a2, b2, a3, b3);
{{- end}}
{{- range $s.Rows}}
      {
        let xb = x{{.}} + 8u * {{$u}};
{{- if and $s.DQ8 $.Exact}}
        var q = 0.0;
        for (var j = 0u; j < 8u; j++) {
          q += dot(dq8_qx_exact(x[xb + j], xs{{.}}, xz{{.}}), wd[j]);
        }
{{- else if $s.DQ8}}
        var q = 0.0;
        for (var j = 0u; j < 8u; j++) {
          q += dot(dq8_qx(x[xb + j], xs{{.}}, xz{{.}}, &exact_ok), wd[j]);
        }
{{- else}}
        let q = dot(x[xb], a0) + dot(x[xb + 1u], b0) + dot(x[xb + 2u], a1) + dot(x[xb + 3u], b1)
          + dot(x[xb + 4u], a2) + dot(x[xb + 5u], b2) + dot(x[xb + 6u], a3) + dot(x[xb + 7u], b3);
{{- end}}
        acc{{.}} = fma(sc, q, acc{{.}});
      }
{{- end}}
{{- end}}
    }
{{- end}}
