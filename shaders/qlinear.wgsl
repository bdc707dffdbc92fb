// qlinear.wgsl: weight-quantized linear, out = x·Wᵀ (+ bias), float32
// activations and output, the weight dequantized in registers from its
// exported bytes (never a float weight buffer). Recorded by
// ops/quant_linear.go (et_vk.linear_q4gsw, et_vk.linear_qcs4w,
// aten._weight_int8pack_mm, et_vk.linear_weight_int4) and ops/quant_dq8.go
// (et_vk.linear_dq8ca_q4gsw).
//
// x is [M, K] (vec4s along K, K % 4 == 0). w holds N rows of
// params.row_bytes bytes each, bound as u32 words:
{{- if .Int8}}
// int8 weights, one signed byte per k (k0 in byte 0 of a word).
{{- else if .HighEven}}
// int4 codes u (value u − 8), two per byte, the even k in the HIGH nibble.
{{- else}}
// int4 codes u (value u − 8), two per byte, the even k in the LOW nibble.
{{- end}}
{{- if .Zeros}}
// Scales and zeros are per group of params.g consecutive k, interleaved:
// W = q·s[((k / g)·ld_s + n)·2] + s[((k / g)·ld_s + n)·2 + 1].
{{- else if .Grouped}}
// Scales are per group of params.g consecutive k: s[(k / g)·ld_s + n].
{{- else}}
// Scales are per output channel: s[n], applied once to the dot product.
{{- end}}
//
// The K loop walks steps of 8 k (one int4 word or two int8 words, two x
// vec4s); a trailing half step (K % 8 == 4) reads only the first vec4.
// Each invocation computes a tile of {{len .Rows}} rows × {{len .Cols}}
// output columns: the weight words it loads are decoded and scaled once and
// applied to all its rows, so with one row block (M ≤ rows) every packed
// byte is read once per dispatch. Lanes run along columns; a tile's rows
// and columns past M and N read the last valid one (see the stores).
//
// Steps are split into chunks (s_begin, s_end) so no invocation loops more
// than ops.qlinearMaxSteps times (llvmpipe cuts loops at 65535
// back-edges); later chunks add to out (accumulate != 0).
//
// A fused epilogue (ops/fuse_epilogue.go: an activation, SiLU, then an add or
// mul with res, a tensor of out's shape) applies to the final sums: the
// last chunk's (params.last), or every store without chunks.
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> s: array<f32>;
{{- if .DQ8}}
// Dynamic int8 activations (et_vk.linear_dq8ca_q4gsw): per-row scale xs
// and int8 zero point xz (four per word) from choose_qparams_affine. Each
// x value is quantized as it is loaded, xq = clamp(round(x / xs) + xz,
// −128, 127) (round half to even), the kernel multiplies the weights by
// xq − xz and the row's sum by xs.
{{- end}}
{{- template "linear_bindings" (args "K" . "DQ8" .DQ8 "Out" "out")}}
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
{{- end}}

// Go twin: the Params built in recordQLinear (ops/quant_linear.go).
struct Params {
  m: u32,          // rows of x
  n: u32,          // output columns
  k4: u32,         // x row length in vec4s (K / 4)
  steps: u32,      // full steps of 8 k (K / 8)
  tail: u32,       // 1 when K % 8 == 4
  row_bytes: u32,  // weight row stride in bytes
  g: u32,          // group size (grouped scales)
  ld_s: u32,       // scale row stride (grouped scales)
  s_begin: u32,    // this chunk, in steps
  s_end: u32,
  accumulate: u32,
  last: u32,       // this chunk runs the tail
  col_blocks: u32,
  act_lo: f32,     // clamp bounds of the epilogue
  act_hi: f32,
  _p0: u32,
}

// word returns the 4 weight bytes at byte offset a (a multiple of 2).
fn word(a: u32) -> u32 {
{{- if .Unaligned}}
  let i = a >> 2u;
  let sh = (a & 3u) * 8u;
  if (sh == 0u) {
    return w[i];
  }
  return (w[i] >> sh) | (w[i + 1u] << (32u - sh));
{{- else}}
  return w[a >> 2u];
{{- end}}
}

// dec returns the 4 weights of word u (4 consecutive k) starting at
// code c0 (0 or 4 within an int4 word).
{{- if .Int8}}
fn dec(u: u32) -> vec4<f32> {
  return vec4<f32>((vec4<i32>(bitcast<i32>(u)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}
{{- else}}
fn dec(u: u32, half: u32) -> vec4<f32> {
{{- if .HighEven}}
  let sh = vec4<u32>(4u, 0u, 12u, 8u) + vec4<u32>(half * 16u);
{{- else}}
  let sh = vec4<u32>(0u, 4u, 8u, 12u) + vec4<u32>(half * 16u);
{{- end}}
  return vec4<f32>((vec4<u32>(u) >> sh) & vec4<u32>(15u)) - vec4<f32>(8.0);
}
{{- end}}

{{- /* "steps": the loop over this chunk's steps of 8 k (and the tail),
summing into acc*. Data: (args "D" the variant "Exact" bool): a DQ8
kernel renders it twice, with the fast quantizer first (qx_fast, which
clears exact_ok when a quotient is too close to a half for the adapter's
division to decide it) and, only if it did, again with the exact one. */ -}}
{{- define "steps"}}{{$d := .D}}
  for (var st = params.s_begin; st < params.s_end; st++) {
{{- if $d.Grouped}}
    if (st == params.s_begin || st * 8u >= next_a) {
      let ga = st * 8u / params.g;
      next_a = (ga + 1u) * params.g;
{{- range $d.Cols}}
{{- if $d.Zeros}}
      sa{{.}} = s[(ga * params.ld_s + n{{.}}) * 2u];
      za{{.}} = s[(ga * params.ld_s + n{{.}}) * 2u + 1u];
{{- else}}
      sa{{.}} = s[ga * params.ld_s + n{{.}}];
{{- end}}
{{- end}}
    }
{{- if $d.SplitScale}}
    if (st == params.s_begin || st * 8u + 4u >= next_b) {
      let gb = (st * 8u + 4u) / params.g;
      next_b = (gb + 1u) * params.g;
{{- range $d.Cols}}
      sb{{.}} = s[gb * params.ld_s + n{{.}}];
{{- end}}
    }
{{- end}}
{{- end}}
{{- range $d.Cols}}
{{- if $d.Int8}}
    let a{{.}} = dec(word(wr{{.}} + st * 8u));
    let b{{.}} = dec(word(wr{{.}} + st * 8u + 4u));
{{- else}}
    let u{{.}} = word(wr{{.}} + st * 4u);
    var a{{.}} = dec(u{{.}}, 0u);
    var b{{.}} = dec(u{{.}}, 1u);
{{- end}}
{{- if and $d.Grouped (not $d.LateScale)}}
{{- if $d.Zeros}}
    a{{.}} = fma(a{{.}}, vec4<f32>(sa{{.}}), vec4<f32>(za{{.}}));
    b{{.}} = fma(b{{.}}, vec4<f32>(sa{{.}}), vec4<f32>(za{{.}}));
{{- else}}
    a{{.}} *= sa{{.}};
{{- if $d.SplitScale}}
    b{{.}} *= sb{{.}};
{{- else}}
    b{{.}} *= sa{{.}};
{{- end}}
{{- end}}
{{- end}}
{{- end}}
{{- if .Exact}}
    // The exact pass (rare) quantizes the step's x values of every row in a
    // loop with one call of the exact quantizer, so that it is compiled
    // once, not once per value.
    var xqa: array<vec4<f32>, {{len $d.Rows}}>;
    var xqb: array<vec4<f32>, {{len $d.Rows}}>;
    for (var j = 0u; j < {{len $d.Rows}}u * 8u; j++) {
      let rr = j / 8u;
      let q = qx1(x[xrow[rr] + st * 2u + (j / 4u) % 2u][j % 4u], xsrow[rr], xzrow[rr]);
      if (((j / 4u) & 1u) == 0u) {
        xqa[rr][j % 4u] = q;
      } else {
        xqb[rr][j % 4u] = q;
      }
    }
{{- end}}
{{- range $r := $d.Rows}}
    {
{{- if and $d.DQ8 $.Exact}}
      let xa = xqa[{{$r}}];
      let xb = xqb[{{$r}}];
{{- else if $d.DQ8}}
      let xa = qx_fast(x[x{{$r}} + st * 2u], xs{{$r}}, xz{{$r}}, &exact_ok);
      let xb = qx_fast(x[x{{$r}} + st * 2u + 1u], xs{{$r}}, xz{{$r}}, &exact_ok);
{{- else}}
      let xa = x[x{{$r}} + st * 2u];
      let xb = x[x{{$r}} + st * 2u + 1u];
{{- end}}
{{- range $c := $d.Cols}}
{{- if and $d.Grouped $d.LateScale}}
{{- if $d.SplitScale}}
      acc{{$r}}_{{$c}} += sa{{$c}} * dot(xa, a{{$c}}) + sb{{$c}} * dot(xb, b{{$c}});
{{- else}}
      acc{{$r}}_{{$c}} += sa{{$c}} * (dot(xa, a{{$c}}) + dot(xb, b{{$c}}));
{{- end}}
{{- else}}
      acc{{$r}}_{{$c}} += dot(xa, a{{$c}}) + dot(xb, b{{$c}});
{{- end}}
{{- end}}
    }
{{- end}}
  }
  if (params.last != 0u && params.tail != 0u) {
    let st = params.steps;
{{- range $d.Cols}}
{{- if $d.Int8}}
    var a{{.}} = dec(word(wr{{.}} + st * 8u));
{{- else}}
    var a{{.}} = dec(word(wr{{.}} + st * 4u), 0u);
{{- end}}
{{- if $d.Grouped}}
{{- if $d.Zeros}}
    let ts{{.}} = ((st * 8u / params.g) * params.ld_s + n{{.}}) * 2u;
    a{{.}} = fma(a{{.}}, vec4<f32>(s[ts{{.}}]), vec4<f32>(s[ts{{.}} + 1u]));
{{- else}}
    a{{.}} *= s[(st * 8u / params.g) * params.ld_s + n{{.}}];
{{- end}}
{{- end}}
{{- end}}
{{- if .Exact}}
    var xqa: array<vec4<f32>, {{len $d.Rows}}>;
    for (var j = 0u; j < {{len $d.Rows}}u * 4u; j++) {
      xqa[j / 4u][j % 4u] = qx1(x[xrow[j / 4u] + st * 2u][j % 4u], xsrow[j / 4u], xzrow[j / 4u]);
    }
{{- end}}
{{- range $r := $d.Rows}}
    {
{{- if and $d.DQ8 $.Exact}}
      let xa = xqa[{{$r}}];
{{- else if $d.DQ8}}
      let xa = qx_fast(x[x{{$r}} + st * 2u], xs{{$r}}, xz{{$r}}, &exact_ok);
{{- else}}
      let xa = x[x{{$r}} + st * 2u];
{{- end}}
{{- range $c := $d.Cols}}
      acc{{$r}}_{{$c}} += dot(xa, a{{$c}});
{{- end}}
    }
{{- end}}
  }
{{- end}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = (wid.x + wid.y * nwg.x) * {{.WG}}u + li;
  let cb = idx % params.col_blocks;
  let rb = idx / params.col_blocks;
  let col0 = cb * {{len .Cols}}u;
  let row0 = rb * {{len .Rows}}u;
  if (row0 >= params.m) {
    return;
  }
  let k4 = params.k4;
{{- range .Cols}}
  let n{{.}} = min(col0 + {{.}}u, params.n - 1u);
  let wr{{.}} = n{{.}} * params.row_bytes;
{{- end}}
{{- range .Rows}}
  let r{{.}} = min(row0 + {{.}}u, params.m - 1u);
  let x{{.}} = r{{.}} * k4;
{{- if $.DQ8}}
  let xs{{.}} = xs[r{{.}}];
  let xz{{.}} = f32((bitcast<i32>(xz[r{{.}} / 4u]) << (24u - 8u * (r{{.}} % 4u))) >> 24u);
{{- end}}
{{- end}}
{{- range $r := .Rows}}{{range $c := $.Cols}}
  var acc{{$r}}_{{$c}} = 0.0;
{{- end}}{{end}}
{{- if .Grouped}}
  // The scales of the current group(s), reloaded (with the one division)
  // only when a step crosses a group boundary: a u32 division per step
  // costs more than the rest of the step on llvmpipe.
  var next_a = 0u;
{{- range .Cols}}
  var sa{{.}} = 0.0;
{{- if $.Zeros}}
  var za{{.}} = 0.0;
{{- end}}
{{- end}}
{{- if .SplitScale}}
  var next_b = 0u;
{{- range .Cols}}
  var sb{{.}} = 0.0;
{{- end}}
{{- end}}
{{- end}}
{{- if .DQ8}}
  // The fast quantizer decides every code from the adapter's quotient
  // unless one is too close to a half (rare): then the whole sum runs
  // again with the exact one, the branch kept out of the loop.
  var exact_ok = true;
{{- template "steps" (args "D" . "Exact" false)}}
  if (!exact_ok) {
    // Each row's offset, scale and zero point, for the exact pass's loop.
    var xrow: array<u32, {{len .Rows}}>;
    var xsrow: array<f32, {{len .Rows}}>;
    var xzrow: array<f32, {{len .Rows}}>;
{{- range .Rows}}
    xrow[{{.}}] = x{{.}};
    xsrow[{{.}}] = xs{{.}};
    xzrow[{{.}}] = xz{{.}};
{{- end}}
{{- range $r := .Rows}}{{range $c := $.Cols}}
    acc{{$r}}_{{$c}} = 0.0;
{{- end}}{{end}}
{{- template "steps" (args "D" . "Exact" true)}}
  }
{{- else}}
{{- template "steps" (args "D" . "Exact" false)}}
{{- end}}
{{- if .Chunked}}
{{- /* Several K chunks: later ones add to out, so each element is written
      by exactly one invocation, once. */}}
{{- range $r := .Rows}}
  if (row0 + {{$r}}u < params.m) {
{{- range $c := $.Cols}}
    if (col0 + {{$c}}u < params.n) {
      let o = (row0 + {{$r}}u) * params.n + col0 + {{$c}}u;
{{- $v := printf "acc%d_%d" $r $c}}{{if $.DQ8}}{{$v = printf "%s * xs%d" $v $r}}{{end}}{{if not $.Grouped}}{{$v = printf "%s * s[n%d]" $v $c}}{{end}}
      {{template "linear_store" (args "Out" "out" "O" "o" "V" $v "Base" (and $.Bias (printf "bias[n%d]" $c)) "Chunked" true "Epi" (or $.Act $.Res))}}
    }
{{- end}}
  }
{{- end}}
{{- else}}
  // Rows and columns past M and N computed the same values as the last
  // valid ones (their reads were clamped), so every element is stored to
  // the clamped index unconditionally: duplicates store identical values.
  // Branch-free stores halve the LLVM JIT time of a big tile.
{{- range $c := .Cols}}
  let oc{{$c}} = min(col0 + {{$c}}u, params.n - 1u);
{{- if not $.Grouped}}
  let sc{{$c}} = s[n{{$c}}];
{{- end}}
{{- if $.Bias}}
  let bias{{$c}} = bias[n{{$c}}];
{{- end}}
{{- end}}
{{- range $r := .Rows}}
  {
    let o = r{{$r}} * params.n;
{{- range $c := $.Cols}}
{{- $v := printf "acc%d_%d" $r $c}}{{if $.DQ8}}{{$v = printf "%s * xs%d" $v $r}}{{end}}{{if not $.Grouped}}{{$v = printf "%s * sc%d" $v $c}}{{end}}
    {{template "linear_store" (args "Out" "out" "O" (printf "o + oc%d" $c) "V" $v "Base" (and $.Bias (printf "bias%d" $c)) "Chunked" false "Epi" (or $.Act $.Res))}}
{{- end}}
  }
{{- end}}
{{- end}}
}
