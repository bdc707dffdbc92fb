// gemv.wgsl: few-row linear (decode and short prefill chunks),
// c = alpha·(a·wᵀ) + beta·bias, float32, for aten.linear when the input has
// few rows (M). Chosen by ops/linear_cpu.go (recordGEMV).
//
// a is the input [M, K] row-major, w the weight [N, K] as exported (row n
// holds output column n's K weights), c the output [M, N]. With Vec4 (K%4
// == 0) a and w are read as array<vec4<f32>> (k counts vec4s), else one
// float per k.
//
// Each invocation computes {{len .Rows}} input rows × {{len .Cols}} output columns:
// one loop over K that loads each of its {{len .Cols}} weight rows' vec4 once
// and applies it to all {{len .Rows}} input rows, with one scalar accumulator
// per output (dot products of vec4s). Neighbouring invocations take
// neighbouring column blocks along x, input row blocks run along y. No
// workgroup memory and no barrier.
//
// Why this shape on llvmpipe (Mesa 22.3): a storage-buffer load whose
// address differs per lane is a loop over the 8 lanes of a vector, with a
// bounds check and a scalar load per lane and component, so loads, not FMAs,
// are the cost. Every weight must be loaded once; what a kernel can save is
// loads of the input, which cost as much as the weight's even though every
// lane reads the same address: one input vec4 per {{len .Cols}} weight vec4s
// here (measured on a [2048, 2048] weight, same run: 1 column per
// invocation 0.7 GB/s, 4 and 8 columns 1.1–1.2 GB/s, the weight loads
// alone without the input's 1.3–1.5 GB/s; heavily loaded host). Tried and
// not better, same run: lanes along K of the same rows with a workgroup
// reduction (0.97–1.0 GB/s against this kernel's 1.16–1.29 at K = N =
// 4096); vec4 accumulators instead of scalar dot products (register
// spills); a load address uniform across lanes (llvmpipe 22.3 still loads
// it per lane inside a loop); the weight read through 64 KiB uniform-buffer
// windows, which llvmpipe gathers with one vector instruction (2.4× this
// kernel's rate when the window is cache-hot, but streaming a 16 MiB
// weight through 14 windows per dispatch measured the same as this kernel).
//
// K is split into chunks of at most matmulMaxTrips loop trips, one dispatch
// each ([k_begin, k_end)), because llvmpipe silently stops a loop after
// 65535 back-edges per invocation; later chunks add to c (accumulate != 0)
// and the epilogue (activation, then an add or mul with res, a tensor of
// c's shape) runs on the last chunk only. Rows and columns
// past M and N read the last valid one and are not written.
{{- $t := "f32"}}{{if .Vec4}}{{$t = "vec4<f32>"}}{{end}}
@group(0) @binding(0) var<storage, read> a: array<{{$t}}>;
@group(0) @binding(1) var<storage, read> w: array<{{$t}}>;
{{- $cb := 2}}{{if .Bias}}{{$cb = 3}}{{end}}{{if .Res}}{{if .Bias}}{{$cb = 4}}{{else}}{{$cb = 3}}{{end}}{{end}}
{{- if .Bias}}
@group(0) @binding(2) var<storage, read> bias: array<f32>;
{{- end}}
{{- if .Res}}
@group(0) @binding({{if .Bias}}3{{else}}2{{end}}) var<storage, read> res: array<f32>;
{{- end}}
@group(0) @binding({{$cb}}) var<storage, read_write> c: array<f32>;
@group(0) @binding({{if eq $cb 2}}3{{else if eq $cb 3}}4{{else}}5{{end}}) var<uniform> params: Params;

// Go twin: the Params writes in ops/linear_cpu.go recordGEMV.
{{- template "gemv_params" (args "KUnit" "in vec4s with Vec4")}}
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
  let a{{.}} = min(row0 + {{.}}u, m - 1u) * kk;
{{- end}}
{{- range $i := .Rows}}{{range $j := $.Cols}}
  var acc{{$i}}_{{$j}} = 0.0;
{{- end}}{{end}}
  for (var k = params.k_begin; k < params.k_end; k++) {
{{- range .Cols}}
    let b{{.}} = w[w{{.}} + k];
{{- end}}
{{- range $i := .Rows}}
    let x{{$i}} = a[a{{$i}} + k];
{{- range $j := $.Cols}}
{{- if $.Vec4}}
    acc{{$i}}_{{$j}} += dot(x{{$i}}, b{{$j}});
{{- else}}
    acc{{$i}}_{{$j}} = fma(x{{$i}}, b{{$j}}, acc{{$i}}_{{$j}});
{{- end}}
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
