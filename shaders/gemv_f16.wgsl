// gemv_f16.wgsl: the few-row linear of gemv.wgsl with the weight kept as
// packed halves (a FLOAT16 weight of a force_fp16 export): c = alpha·(a·wᵀ)
// + beta·bias, float32 input, output and accumulation. Chosen by
// ops/linear_f16.go (recordGEMVHalf) for K%8 == 0.
//
// a is the input [M, K] read as vec4<f32>; w the weight packed by
// pack_f16.wgsl, [N, K/2] u32 words read as vec4<u32>: one load brings
// eight halves (unpack2x16float, exact), against four floats a load of
// the float32 weight. On llvmpipe, where a storage load whose address
// differs per lane is a per-lane loop (see gemv.wgsl), the loads are the
// cost, so halving the weight's loads and bytes is what this kernel is
// for. k counts vec4<u32> words (eight k); everything else (tiles, K
// chunks under llvmpipe's loop cap, bias, epilogue) is gemv.wgsl's.
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<vec4<u32>>;
{{- $cb := 2}}{{if .Bias}}{{$cb = 3}}{{end}}{{if .Res}}{{if .Bias}}{{$cb = 4}}{{else}}{{$cb = 3}}{{end}}{{end}}
{{- if .Bias}}
@group(0) @binding(2) var<storage, read> bias: array<f32>;
{{- end}}
{{- if .Res}}
@group(0) @binding({{if .Bias}}3{{else}}2{{end}}) var<storage, read> res: array<f32>;
{{- end}}
@group(0) @binding({{$cb}}) var<storage, read_write> c: array<f32>;
@group(0) @binding({{if eq $cb 2}}3{{else if eq $cb 3}}4{{else}}5{{end}}) var<uniform> params: Params;

// Go twin: the Params writes in ops/linear_f16.go recordGEMVHalf (the
// layout of gemv.wgsl's).
{{- template "gemv_params" (args "KUnit" "in vec4<u32> words of the packed weight (K/8)")}}
{{- template "linear_epilogue" (args "Act" .Act "Gate" .Gate "Res" .Res "T" "f32")}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let col0 = gid.x * {{len .Cols}}u;
  let row0 = gid.y * {{len .Rows}}u;
  let n = params.n;
  let m = params.m;
  let kk = params.k;
  if (col0 >= n || row0 >= m) { return; }
{{- range .Cols}}
  let w{{.}} = min(col0 + {{.}}u, n - 1u) * kk;
{{- end}}
{{- range .Rows}}
  let a{{.}} = min(row0 + {{.}}u, m - 1u) * kk * 2u;
{{- end}}
{{- range $i := .Rows}}{{range $j := $.Cols}}
  var acc{{$i}}_{{$j}} = 0.0;
{{- end}}{{end}}
  for (var k = params.k_begin; k < params.k_end; k++) {
{{- range .Cols}}
    let q{{.}} = w[w{{.}} + k];
    let b{{.}}l = vec4<f32>(unpack2x16float(q{{.}}.x), unpack2x16float(q{{.}}.y));
    let b{{.}}h = vec4<f32>(unpack2x16float(q{{.}}.z), unpack2x16float(q{{.}}.w));
{{- end}}
{{- range $i := .Rows}}
    let x{{$i}}l = a[a{{$i}} + 2u * k];
    let x{{$i}}h = a[a{{$i}} + 2u * k + 1u];
{{- range $j := $.Cols}}
    acc{{$i}}_{{$j}} += dot(x{{$i}}l, b{{$j}}l) + dot(x{{$i}}h, b{{$j}}h);
{{- end}}
{{- end}}
  }
{{- range $i := .Rows}}{{range $j := $.Cols}}
  if (row0 + {{$i}}u < m && col0 + {{$j}}u < n) {
    let o = (row0 + {{$i}}u) * n + col0 + {{$j}}u;
    {{template "linear_store" (args "Out" "c" "O" "o" "V" (printf "params.alpha * acc%d_%d" $i $j) "Base" (and $.Bias (printf "params.beta * bias[(row0 + %du) * params.bias_sm + (col0 + %du) * params.bias_sn]" $i $j)) "Chunked" true "Epi" (or $.Act $.Res))}}
  }
{{- end}}{{end}}
}
