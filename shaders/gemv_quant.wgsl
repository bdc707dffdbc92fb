// gemv_quant.wgsl: the GPU family's few-row quantized linear, one 32-bit
// weight word a lane a step (ops/linear_gpu_quant.go; linear_family.go
// entries "gpu/q4gemv" and "gpu/qcgemv"), in two forms:
{{- if .Fused}}
// this is the FUSED form (ops/fuse_linear.go's linear groups): the
// rms_norm of x computed in a prologue and up to {{len .Segs}} one-row linears of
// it, each its own weight and output (q, k and v; the classifier), or,
// with Pair, SwiGLU's gate and up weights and one output
// out0 = silu(x·w0ᵀ)·(x·w1ᵀ).
{{- else}}
// this is the PLAIN form: out = (x·Wᵀ)·scale (+ bias), then the fused
// epilogue, for up to {{len .Rows}} input rows.
{{- end}}
//
// Weight format {{.Format}}:
//   q4:   linear_q4gsw / linear_dq8ca_q4gsw codes [N, K/2] bytes, even k in
//         the low nibble, value code − 8; one u32 word = 8 k;
//   q4h:  linear_qcs4w codes, even k in the HIGH nibble; one word = 8 k;
//   int8: _weight_int8pack_mm, int8 [N, K]; one word = 4 k.
// Scales: {{if .Grouped}}per group of params.gw words, PACKED PER OUTPUT ROW at load
// (ops.TransposeSpec of the exported [G, ldS] into [ldS, G]), so the 32
// lanes of a row read neighbouring floats: one sector, not 8 lines{{else}}per output channel, s[n], applied at the store{{end}}.
//
// Shape (../shared/spec/gpu-predictions.md §3 and §4.1): a workgroup of
// {{.WG}} invocations is {{.Warps}} warps of 32 lanes; each warp computes {{len .RowsW}}
// output column(s) (weight rows) and walks K with its 32 lanes, lane l
// taking words l, l + 32, ... of each of its rows, so that a warp reads
// 128 contiguous bytes of a row a step, and the {{len .RowsW}} rows share the lane's
// activations, held in registers. A lane's activations for a word are
// {{if eq .Format "int8"}}one vec4 (4 k; 16 bytes a lane apart){{else}}two vec4s (8 k; 32 bytes a lane apart{{if .Fused}}, or, staged in
// workgroup memory, split into the words' low and high halves so that
// neighbouring lanes read neighbouring 16 bytes: no bank conflicts{{end}}){{end}}.
//
// Decoding, without int→float conversion: a code's bits are ORed into
// the mantissa of 2^23 where they lie in the word (nibbles 0..3 of the
// low and high half-words, bytes 0 and 1 of the halves for int8), which
// makes the float 2^23 + c·16^i (c·256^i), and subtracting
// 2^23 + 8·16^i (2^23 + 128·256^i, int8 with its sign bit flipped first)
// leaves (c − 8)·16^i exactly. The activations are pre-scaled by the
// inverse powers (exact: powers of two), so each product is x·(c − 8)
// rounded once, as the reference's (but where x·16^-i falls below the
// smallest normal float, |x| < 2^-114, which an adapter that flushes
// subnormals drops: a term below 2^-110). Per word: the 8 (4) products summed
// in dot order, {{if .Grouped}}times the group's scale into the lane's sum (fma){{else}}added to the lane's sum{{end}}; the
// 32 lanes' sums then meet in workgroup memory (8 partial sums of 4
// lanes each, then their sum; no subgroup operations in this WebGPU).
{{- if .DQ8}}
//
// Dynamic int8 activations (et_vk.linear_dq8ca_q4gsw): row r's scale
// xs[r] and int8 zero point (byte r % 4 of xz[r / 4]); each activation is
// quantized as it is loaded (dq8_qx, from the adapter's quotient) and the
// row's sum scaled by xs[r] at the store. Codes and pre-scaled
// activations make products that are integers, and a word's sum too
// (below 2^24): exact. Where a quotient may not round as the correctly
// rounded one would (rare), the lane sums its words again with the exact
// quantizer (dq8_qx_exact) before the reduction.
{{- end}}
//
{{- if .Fused}}
// One dispatch, no K chunks (the caller fuses only K that fits one): every
// workgroup recomputes the row's 1/rms (norm.wgsl's formula), stages the
// normalized row in workgroup memory pre-scaled, then computes its
// column block. A projection sums exactly as the plain form does, so it
// equals the unfused one bit for bit given the same normalized input.
{{- else}}
// K is split into chunks of at most ops.gpuQuantMaxTrips trips a lane
// ([k_begin, k_end), in words), one dispatch each, only so that lavapipe
// (which cuts loops at 65535 back-edges) runs it correctly; later chunks
// add to out (accumulate) and the epilogue runs on the last. Columns and
// rows past N and M read the last valid one and are not written (no early
// return: every invocation reaches the barriers). The grid's x (folded
// into y past the per-dimension limit) runs over column blocks.
{{- end}}
{{- if .Fused}}
{{- template "fused_linears" (args "K" . "W" "u32" "Scales" true)}}

// Go twin: fusedQuantParams in ops/linear_gpu_quant.go.
struct Params {
  kw: u32,         // weight row length in words
  len: u32,        // K in elements (the norm's n)
  eps: f32,
  nblk: u32,       // column blocks in all
  n: vec4<u32>,    // columns of each segment
  blk: vec4<u32>,  // first column block of each segment (blk[s+1]: the next one's)
  gw: vec4<u32>,   // words per scale group of each weight
  ls: vec4<u32>,   // packed scale row stride (groups) of each weight
}

// xq is the normalized input pre-scaled for the decoder, each word's low
// half at xq[t] and high half at xq[{{.XW}} + t].
var<workgroup> xq: array<vec4<f32>, {{mul 2 .XW}}>;
{{- else}}
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> s: array<f32>;
{{- template "linear_bindings" (args "K" . "DQ8" .DQ8 "Out" "out")}}

// Go twin: gpuQuantParams in ops/linear_gpu_quant.go.
struct Params {
  m: u32,          // input rows
  n: u32,          // output columns (weight rows)
  kw: u32,         // weight row length in words
  k_begin: u32,    // this chunk, in words
  k_end: u32,
  accumulate: u32,
  last: u32,
  gw: u32,         // grouped: words per scale group
  ls: u32,         // grouped: packed scale row stride (groups)
  xr: u32,         // x row stride in vec4s (K / 4)
  act_lo: f32,     // clamp bounds of the epilogue
  act_hi: f32,
}
{{- template "linear_epilogue" (args "Act" .Act "Gate" .Gate "Res" .Res "T" "f32")}}
{{- if .DQ8}}

{{template "dq8_qx"}}
{{- end}}
{{- end}}

{{- if eq .Format "int8"}}

// dec_i8 returns the 4 int8 weights of word u, bytes 1 and 3 times 256.
fn dec_i8(u: u32) -> vec4<f32> {
  let v = u ^ 0x80808080u;
  let b = (vec4<u32>(v, v, v >> 16u, v >> 16u) & vec4<u32>(0xffu, 0xff00u, 0xffu, 0xff00u)) | vec4<u32>(0x4b000000u);
  return bitcast<vec4<f32>>(b) - vec4<f32>(8388736.0, 8421376.0, 8388736.0, 8421376.0);
}

// pre scales 4 activations for dec_i8.
fn pre(v: vec4<f32>) -> vec4<f32> {
  return v * vec4<f32>(1.0, 0.00390625, 1.0, 0.00390625);
}
{{- else}}

// dec_q4 returns nibbles 0..3 of u as (code − 8)·16^i.
fn dec_q4(u: u32) -> vec4<f32> {
  let b = (vec4<u32>(u) & vec4<u32>(0xfu, 0xf0u, 0xf00u, 0xf000u)) | vec4<u32>(0x4b000000u);
  return bitcast<vec4<f32>>(b) - vec4<f32>(8388616.0, 8388736.0, 8390656.0, 8421376.0);
}

// pre scales the 4 activations of nibbles 0..3 (k, k+1, k+2, k+3{{if eq .Format "q4h"}}, here
// in the order of the high-first nibbles: k+1, k, k+3, k+2{{end}}) for dec_q4.
fn pre(v: vec4<f32>) -> vec4<f32> {
  return v{{if eq .Format "q4h"}}.yxwz{{end}} * vec4<f32>(1.0, 0.0625, 0.00390625, 0.000244140625);
}
{{- end}}

// part holds the lanes' sums, sum j of lane li at part[j·{{.WG}} + li].
var<workgroup> part: array<f32, {{mul .WG .NAcc}}>;

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let kl = li % 32u;
  let wi = li / 32u;
  let blk = wid.x + wid.y * nwg.x;
{{- if .Fused}}
  // 1/rms: the invocations stride over x, then a tree.
{{- template "fused_rstd" (args "K" . "Tree" true)}}
  for (var i = li; i < params.kw; i += {{.WG}}u) {
    xq[i] = pre(x[2u * i] * rstd{{if .NormW}} * g[2u * i]{{end}});
    xq[{{.XW}}u + i] = pre(x[2u * i + 1u] * rstd{{if .NormW}} * g[2u * i + 1u]{{end}});
  }
  // Every lane has read part[0] above; the segments' first write to part
  // comes after this barrier.
  workgroupBarrier();
{{- if .Pair}}
  {{template "gq_seg" (args "S" $ "I" 0 "W" "w0" "Sc" "s0" "W2" "w1" "Sc2" "s1" "O" "out0")}}
{{- else}}
{{- range $i, $s := .Segs}}
  {{if gt $i 0}}else {{end}}if (blk < params.blk[{{add $i 1}}]) {{template "gq_seg" (args "S" $ "I" $i "W" (printf "w%d" $s) "Sc" (printf "s%d" $s) "W2" "" "Sc2" "" "O" (printf "out%d" $s))}}
{{- end}}
{{- end}}
{{- else}}
  let n0 = (blk * {{.Warps}}u + wi) * {{len .RowsW}}u;
  let m0 = wid.z * {{len .Rows}}u;
{{- range $r := .RowsW}}
  let c{{$r}} = n0 + {{$r}}u;
  let nn{{$r}} = min(c{{$r}}, params.n - 1u);
  let wr{{$r}} = nn{{$r}} * params.kw;
{{- if $.Grouped}}
  let sr{{$r}} = nn{{$r}} * params.ls;
{{- end}}
{{- end}}
{{- range $m := .Rows}}
  let r{{$m}} = min(m0 + {{$m}}u, params.m - 1u);
  let x{{$m}} = r{{$m}} * params.xr;
{{- if $.DQ8}}
  let xs{{$m}} = xs[r{{$m}}];
  let xz{{$m}} = f32((bitcast<i32>(xz[r{{$m}} / 4u]) << (24u - 8u * (r{{$m}} % 4u))) >> 24u);
{{- end}}
{{- range $r := $.RowsW}}
  var acc{{$r}}_{{$m}} = 0.0;
{{- end}}
{{- end}}
{{- if .DQ8}}
  var exact_ok = true;
{{- end}}
  var t = params.k_begin + kl;
  // {{len .Unroll}} words a trip, then the rest one at a time.
  for (; t + {{mul (sub (len .Unroll) 1) 32}}u < params.k_end; t += {{mul (len .Unroll) 32}}u) {
{{- range $u := .Unroll}}
{{- range $r := $.RowsW}}
    let w{{$u}}_{{$r}} = w[wr{{$r}} + t + {{mul $u 32}}u];
{{- end}}
{{- end}}
{{- range $u := .Unroll}}
    {{template "gq_step" (args "S" $ "T" (printf "t + %du" (mul $u 32)) "U" $u "Exact" false)}}
{{- end}}
  }
{{- if gt (len .Unroll) 1}}
  for (; t < params.k_end; t += 32u) {
{{- range $r := .RowsW}}
    let w0_{{$r}} = w[wr{{$r}} + t];
{{- end}}
    {{template "gq_step" (args "S" $ "T" "t" "U" 0 "Exact" false)}}
  }
{{- end}}
{{- if .DQ8}}
  if (!exact_ok) {
{{- range $m := .Rows}}{{range $r := $.RowsW}}
    acc{{$r}}_{{$m}} = 0.0;
{{- end}}{{end}}
    for (var te = params.k_begin + kl; te < params.k_end; te += 32u) {
{{- range $r := .RowsW}}
      let w0_{{$r}} = w[wr{{$r}} + te];
{{- end}}
      {{template "gq_step" (args "S" $ "T" "te" "U" 0 "Exact" true)}}
    }
  }
{{- end}}
{{- range $r := .RowsW}}{{range $m := $.Rows}}
  part[{{add (mul $r (len $.Rows)) $m}}u * {{$.WG}}u + li] = acc{{$r}}_{{$m}};
{{- end}}{{end}}
  {{template "gq_reduce" .}}
  if (kl == 0u) {
{{- range $r := .RowsW}}{{range $m := $.Rows}}
    if (c{{$r}} < params.n && m0 + {{$m}}u < params.m) {
      let o = (m0 + {{$m}}u) * params.n + c{{$r}};
{{- $v := printf "part[%du * %du + li]" (add (mul $r (len $.Rows)) $m) $.WG}}{{if $.DQ8}}{{$v = printf "%s * xs%d" $v $m}}{{end}}{{if not $.Grouped}}{{$v = printf "%s * s[nn%d]" $v $r}}{{end}}
      {{template "linear_store" (args "Out" "out" "O" "o" "V" $v "Base" (and $.Bias (printf "bias[c%d]" $r)) "Chunked" true "Epi" (or $.Act $.Res))}}
    }
{{- end}}{{end}}
  }
{{- end}}
}

{{- define "gq_reduce"}}
{{- /* The reduction of the lanes' sums part[j·WG + li], j < NAcc: lanes
0..3 of each warp add the sums of lanes kl, kl+4, ..., kl+28 in that
order, then lane 0 adds those 4. Afterwards lane 0's part[j·WG + li] is
sum j of the warp. */ -}}
workgroupBarrier();
  if (kl < 4u) {
{{- range $j := .AccIdx}}
    {
      let p = {{$j}}u * {{$.WG}}u + li;
      part[p] = part[p] + part[p + 4u] + part[p + 8u] + part[p + 12u] + part[p + 16u] + part[p + 20u] + part[p + 24u] + part[p + 28u];
    }
{{- end}}
  }
  workgroupBarrier();
  if (kl == 0u) {
{{- range $j := .AccIdx}}
    {
      let p = {{$j}}u * {{$.WG}}u + li;
      part[p] = part[p] + part[p + 1u] + part[p + 2u] + part[p + 3u];
    }
{{- end}}
  }
{{- end}}

{{- define "gq_dot"}}
{{- /* The dot of word V (already loaded) with the pre-scaled activations
XA (and XB for 4-bit). */ -}}
{{- if eq .S.Format "int8"}}dot({{.XA}}, dec_i8({{.V}})){{else}}dot({{.XA}}, dec_q4({{.V}})) + dot({{.XB}}, dec_q4({{.V}} >> 16u)){{end}}
{{- end}}

{{- define "gq_step"}}
{{- /* The plain form's step at word index T (words w{U}_{r} loaded): each
input row's activations, then every row's word applied to them. */ -}}
{
{{- $s := .S}}{{$t := .T}}{{$u := .U}}{{$exact := .Exact}}
{{- range $m := $s.Rows}}
{{- if eq $s.Format "int8"}}
      let xa{{$m}} = pre(x[x{{$m}} + {{$t}}]);
{{- else if $s.DQ8}}
{{- if $exact}}
      let xa{{$m}} = pre(dq8_qx_exact(x[x{{$m}} + 2u * ({{$t}})], xs{{$m}}, xz{{$m}}));
      let xb{{$m}} = pre(dq8_qx_exact(x[x{{$m}} + 2u * ({{$t}}) + 1u], xs{{$m}}, xz{{$m}}));
{{- else}}
      let xa{{$m}} = pre(dq8_qx(x[x{{$m}} + 2u * ({{$t}})], xs{{$m}}, xz{{$m}}, &exact_ok));
      let xb{{$m}} = pre(dq8_qx(x[x{{$m}} + 2u * ({{$t}}) + 1u], xs{{$m}}, xz{{$m}}, &exact_ok));
{{- end}}
{{- else}}
      let xa{{$m}} = pre(x[x{{$m}} + 2u * ({{$t}})]);
      let xb{{$m}} = pre(x[x{{$m}} + 2u * ({{$t}}) + 1u]);
{{- end}}
{{- end}}
{{- range $r := $s.RowsW}}
{{- if $s.Grouped}}
      let sc{{$r}} = s[sr{{$r}} + ({{$t}}) / params.gw];
{{- end}}
{{- range $m := $s.Rows}}
{{- if $s.Grouped}}
      acc{{$r}}_{{$m}} = fma(sc{{$r}}, {{template "gq_dot" (args "S" $s "V" (printf "w%d_%d" $u $r) "XA" (printf "xa%d" $m) "XB" (printf "xb%d" $m))}}, acc{{$r}}_{{$m}});
{{- else}}
      acc{{$r}}_{{$m}} += {{template "gq_dot" (args "S" $s "V" (printf "w%d_%d" $u $r) "XA" (printf "xa%d" $m) "XB" (printf "xb%d" $m))}};
{{- end}}
{{- end}}
{{- end}}
    }
{{- end}}

{{- define "gq_seg"}}
{{- /* The fused form's segment I: weight W with scales Sc (and with Pair
W2, Sc2: the up projection, params index I + 1), output O. Sums as
gq_step does, the activations read from xq. */ -}}
{{- $s := .S}}
{
    let n = params.n[{{.I}}];
    let n0 = ((blk - params.blk[{{.I}}]) * {{$s.Warps}}u + wi) * {{len $s.RowsW}}u;
{{- range $r := $s.RowsW}}
    let c{{$r}} = n0 + {{$r}}u;
    let nn{{$r}} = min(c{{$r}}, n - 1u);
    let wr{{$r}} = nn{{$r}} * params.kw;
    let sr{{$r}} = nn{{$r}} * params.ls[{{$.I}}];
    var acc{{$r}} = 0.0;
{{- if $.W2}}
    let su{{$r}} = nn{{$r}} * params.ls[{{add $.I 1}}];
    var up{{$r}} = 0.0;
{{- end}}
{{- end}}
    var t = kl;
    for (; t + {{mul (sub (len $s.Unroll) 1) 32}}u < params.kw; t += {{mul (len $s.Unroll) 32}}u) {
{{- range $u := $s.Unroll}}
{{- range $r := $s.RowsW}}
      let w{{$u}}_{{$r}} = {{$.W}}[wr{{$r}} + t + {{mul $u 32}}u];
{{- if $.W2}}
      let v{{$u}}_{{$r}} = {{$.W2}}[wr{{$r}} + t + {{mul $u 32}}u];
{{- end}}
{{- end}}
{{- end}}
{{- range $u := $s.Unroll}}
      {{template "gq_fstep" (args "S" $s "T" (printf "t + %du" (mul $u 32)) "U" $u "I" $.I "Sc" $.Sc "W2" $.W2 "Sc2" $.Sc2)}}
{{- end}}
    }
{{- if gt (len $s.Unroll) 1}}
    for (; t < params.kw; t += 32u) {
{{- range $r := $s.RowsW}}
      let w0_{{$r}} = {{$.W}}[wr{{$r}} + t];
{{- if $.W2}}
      let v0_{{$r}} = {{$.W2}}[wr{{$r}} + t];
{{- end}}
{{- end}}
      {{template "gq_fstep" (args "S" $s "T" "t" "U" 0 "I" $.I "Sc" $.Sc "W2" $.W2 "Sc2" $.Sc2)}}
    }
{{- end}}
{{- range $r := $s.RowsW}}
    part[{{$r}}u * {{$s.WG}}u + li] = acc{{$r}};
{{- if $.W2}}
    part[{{add $r (len $s.RowsW)}}u * {{$s.WG}}u + li] = up{{$r}};
{{- end}}
{{- end}}
    {{template "gq_reduce" $s}}
    if (kl == 0u) {
{{- range $r := $s.RowsW}}
      if (c{{$r}} < n) {
{{- if $.W2}}
        {{$.O}}[c{{$r}}] = swiglu(part[{{$r}}u * {{$s.WG}}u + li], part[{{add $r (len $s.RowsW)}}u * {{$s.WG}}u + li]);
{{- else}}
        {{$.O}}[c{{$r}}] = part[{{$r}}u * {{$s.WG}}u + li];
{{- end}}
      }
{{- end}}
    }
  }
{{- end}}

{{- define "gq_fstep"}}
{{- /* The fused form's step at word index T (words w{U}_{r}, and v{U}_{r}
of W2, loaded). */ -}}
{
{{- $s := .S}}{{$t := .T}}{{$u := .U}}
        let xa = xq[{{$t}}];
        let xb = xq[{{$s.XW}}u + {{$t}}];
{{- range $r := $s.RowsW}}
        let sc{{$r}} = {{$.Sc}}[sr{{$r}} + ({{$t}}) / params.gw[{{$.I}}]];
        acc{{$r}} = fma(sc{{$r}}, {{template "gq_dot" (args "S" $s "V" (printf "w%d_%d" $u $r) "XA" "xa" "XB" "xb")}}, acc{{$r}});
{{- if $.W2}}
        let sd{{$r}} = {{$.Sc2}}[su{{$r}} + ({{$t}}) / params.gw[{{add $.I 1}}]];
        up{{$r}} = fma(sd{{$r}}, {{template "gq_dot" (args "S" $s "V" (printf "v%d_%d" $u $r) "XA" "xa" "XB" "xb")}}, up{{$r}});
{{- end}}
{{- end}}
      }
{{- end}}
