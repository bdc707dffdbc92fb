// gemv.wgsl: one-row linear (decode), c = alpha·(a·wᵀ) + beta·bias, float32,
// for aten.linear (and mm/addmm/matmul with a transposed operand) when M = 1
// and K % 4 == 0. Chosen by ops/matmul.go (recordGEMV).
//
// a is the input row (K floats as vec4s), w the weight [N, K] as exported
// (row n holds output n's K weights, vec4s along K), c has N floats.
//
// A workgroup is {{.WG}} invocations: {{.LK}} lanes along K times
// {{.Groups}} groups of {{len .Cols}} output columns. Each invocation walks its
// columns' weight rows with stride {{.LK}} vec4s, so neighbouring lanes (one
// AVX vector on llvmpipe) read neighbouring vec4s of the same row: each row is
// one sequential stream, which the CPU prefetches well, instead of one stream
// per lane. The {{.LK}} partial sums of a column meet in workgroup memory
// after the only barrier.
//
// K is split into chunks (k_begin, k_end in vec4s) of at most
// matmulMaxTrips·LK vec4s per dispatch, so no invocation loops more than
// matmulMaxTrips times (llvmpipe cuts loops at 65535 back-edges); later
// chunks add to c (accumulate != 0). The epilogue activation runs on the last
// chunk only. Columns past N read the last column and are not written.
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<vec4<f32>>;
{{- if .Bias}}
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;
{{- else}}
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;
{{- end}}

struct Params {
  n: u32,          // output columns (weight rows)
  k: u32,          // row length in vec4s
  k_begin: u32,    // this chunk, in vec4s
  k_end: u32,
  accumulate: u32,
  last: u32,
  alpha: f32,
  beta: f32,
  bias_sn: u32,    // bias stride along N (0: a scalar bias)
  act_lo: f32,
  act_hi: f32,
  _p: u32,
}

var<workgroup> partial: array<vec4<f32>, {{.WG}}>;
{{- if .Act}}

{{template "unary_helpers" (args "S" "f32" "T" "f32")}}

// act is the fused activation epilogue (see shaders/matmul.wgsl).
fn act(v: f32) -> f32 {
  return {{template "unary_formula" (args "Op" .Act "S" "f32" "T" "f32" "A" "params.act_lo" "B" "params.act_hi")}};
}
{{- end}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let lane = li % {{.LK}}u;
  let grp = li / {{.LK}}u;
  let col0 = ((wid.x + wid.y * nwg.x) * {{.Groups}}u + grp) * {{len .Cols}}u;
  let n = params.n;
  let kk = params.k;
{{- range .Cols}}
  let w{{.}} = min(col0 + {{.}}u, n - 1u) * kk;
  var acc{{.}} = vec4<f32>(0.0);
{{- end}}
  for (var k = params.k_begin + lane; k < params.k_end; k += {{.LK}}u) {
    let x = a[k];
{{- range .Cols}}
    acc{{.}} = fma(x, w[w{{.}} + k], acc{{.}});
{{- end}}
  }
  let one = vec4<f32>(1.0);
  partial[li] = vec4<f32>({{range $i, $c := .Cols}}{{if $i}}, {{end}}dot(acc{{$c}}, one){{end}});
  workgroupBarrier();
  if (lane != 0u || col0 >= n) {
    return;
  }
  var s = vec4<f32>(0.0);
  for (var l = 0u; l < {{.LK}}u; l++) {
    s += partial[li + l];
  }
{{- range .Cols}}
  if (col0 + {{.}}u < n) {
    let o = col0 + {{.}}u;
    var base = 0.0;
    if (params.accumulate != 0u) {
      base = c[o];
    }{{if $.Bias}} else {
      base = params.beta * bias[o * params.bias_sn];
    }{{end}}
    var v = base + params.alpha * s[{{.}}];
{{- if $.Act}}
    if (params.last != 0u) {
      v = act(v);
    }
{{- end}}
    c[o] = v;
  }
{{- end}}
}
