// matmul.wgsl: C = alpha·(A·B) + beta·bias for aten.mm, bmm, addmm, matmul
// and linear, float32.
//
// A is M×K row-major. B is K×N (mm) or, with TransB, N×K (linear's weight,
// out = input·weightᵀ). Two families, chosen by Go (ops/linear_cpu.go):
//
//   Vec4:   K%4 == 0 and N%4 == 0. A, B and C are array<vec4<f32>>; each
//           invocation computes len(Rows) rows × len(Cols) vec4s of
//           columns, stepping K by one vec4 (four k) per loop trip. mm
//           reads four B rows as vec4s along N; linear reads four weight
//           rows per vec4 column as vec4s along K and takes dot products
//           with A's vec4s. No workgroup memory: on lavapipe barriers are
//           coroutine switches and tiling hurts. Big register tiles win
//           there because every storage load is a per-lane gather with a
//           bounds check, so FMAs per load is what counts.
//   Scalar: any sizes. Each invocation computes a len(Rows)×len(Cols)
//           tile, one k per loop trip.
//
// Batches run along the grid's z (batch_base + gid.z): C is contiguous,
// A's and B's batch offsets come from decoding the batch index over bdims
// with per-operand strides (0 where an operand broadcasts). bias (array of
// f32, not batched) is read at row·bias_sm + col·bias_sn, so a [N] vector,
// a column, a scalar or a full M×N matrix all work.
//
// Epilogue (last chunk only): the fused activation act, then, with Res,
// an elementwise add or mul with res, a tensor of C's shape (a residual
// connection; SwiGLU's gate times up).
//
// Tiles are clamped at the edges: rows and columns past M and N read the
// last valid one and are not written back.
//
// llvmpipe silently stops a loop after 65535 back-edges per invocation, so
// Go splits K into chunks of at most 16384 trips (matmulMaxTrips), one dispatch
// each: [k_begin, k_end) is this chunk, and accumulate != 0 makes it add
// alpha times its partial sum to C (written by the previous chunk) instead
// of to beta·bias. The K loop is the only long loop; the batch decode loop
// runs at most 8 trips, and the row and column repetitions are unrolled by
// the template so they cost no back-edges.
{{if .Vec4}}
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
{{else}}
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
{{end}}
{{- $ct := "f32"}}{{if .Vec4}}{{$ct = "vec4<f32>"}}{{end}}
{{- $cb := 2}}{{if .Bias}}{{$cb = 3}}{{end}}{{if .Res}}{{if .Bias}}{{$cb = 4}}{{else}}{{$cb = 3}}{{end}}{{end}}
{{- if .Bias}}@group(0) @binding(2) var<storage, read> bias: array<f32>;
{{end}}
{{- if .Res}}@group(0) @binding({{if .Bias}}3{{else}}2{{end}}) var<storage, read> res: array<{{$ct}}>;
{{end}}
{{- if eq $cb 2}}@group(0) @binding(2) var<storage, read_write> c: array<{{$ct}}>;
@group(0) @binding(3) var<uniform> params: Params;
{{else if eq $cb 3}}@group(0) @binding(3) var<storage, read_write> c: array<{{$ct}}>;
@group(0) @binding(4) var<uniform> params: Params;
{{else}}@group(0) @binding(4) var<storage, read_write> c: array<{{$ct}}>;
@group(0) @binding(5) var<uniform> params: Params;
{{end}}
{{- template "matmul_params" (args "Q" false)}}

{{- template "linear_epilogue" (args "Act" .Act "Gate" .Gate "Res" .Res "T" $ct)}}
{{- if and .Bias .Vec4}}

// bias4 is the bias term of vec4 column c (output columns 4c .. 4c+3) of
// row r.
fn bias4(r: u32, c: u32) -> vec4<f32> {
  let bi = r * params.bias_sm + 4u * c * params.bias_sn;
  return params.beta * vec4<f32>(bias[bi], bias[bi + params.bias_sn], bias[bi + 2u * params.bias_sn], bias[bi + 3u * params.bias_sn]);
}
{{- end}}

@compute @workgroup_size({{.WGX}}, {{.WGY}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let col0 = gid.x * {{len .Cols}}u;
  let row0 = gid.y * {{len .Rows}}u;
  let n = params.n;
  let kk = params.k;
  if (col0 >= n || row0 >= params.m) { return; }
  // Batch offsets: decode the batch index, innermost dim first.
  let batch = gid.z + params.batch_base;
  let ab = batch_offsets(batch);
  let aoff = ab.x;
  let boff = ab.y;
  let coff = batch * params.m * n;
  // Rows and columns past the edge read the last valid one and are not
  // written back.
{{- range .Rows}}
  let r{{.}} = min(row0 + {{.}}u, params.m - 1u);
{{- end}}
{{- range .Cols}}
  let c{{.}} = min(col0 + {{.}}u, n - 1u);
{{- end}}
{{- range $i := .Rows}}{{range $j := $.Cols}}
  var acc{{$i}}_{{$j}} = {{if $.Vec4}}vec4<f32>(0.0){{else}}0.0{{end}};
{{- end}}{{end}}
{{- if .Vec4}}
{{- if .TransB}}
  // Vec4 column j is weight rows 4·c_j .. 4·c_j+3, each read along K.
{{- range .Cols}}
  let w{{.}} = boff + 4u * c{{.}} * kk;
{{- end}}
  for (var k = params.k_begin; k < params.k_end; k++) {
{{- range .Cols}}
    let b{{.}}_0 = b[w{{.}} + k];
    let b{{.}}_1 = b[w{{.}} + kk + k];
    let b{{.}}_2 = b[w{{.}} + 2u * kk + k];
    let b{{.}}_3 = b[w{{.}} + 3u * kk + k];
{{- end}}
{{- range $i := .Rows}}
    let a{{$i}} = a[aoff + r{{$i}} * kk + k];
{{- range $j := $.Cols}}
    acc{{$i}}_{{$j}} += vec4<f32>(dot(a{{$i}}, b{{$j}}_0), dot(a{{$i}}, b{{$j}}_1), dot(a{{$i}}, b{{$j}}_2), dot(a{{$i}}, b{{$j}}_3));
{{- end}}
{{- end}}
  }
{{- else}}
  for (var k = params.k_begin; k < params.k_end; k++) {
    // B rows 4k .. 4k+3 at each vec4 column.
    let kb = boff + 4u * k * n;
{{- range .Cols}}
    let b{{.}}_0 = b[kb + c{{.}}];
    let b{{.}}_1 = b[kb + n + c{{.}}];
    let b{{.}}_2 = b[kb + 2u * n + c{{.}}];
    let b{{.}}_3 = b[kb + 3u * n + c{{.}}];
{{- end}}
{{- range $i := .Rows}}
    let a{{$i}} = a[aoff + r{{$i}} * kk + k];
{{- range $j := $.Cols}}
    acc{{$i}}_{{$j}} = fma(vec4<f32>(a{{$i}}.w), b{{$j}}_3, fma(vec4<f32>(a{{$i}}.z), b{{$j}}_2, fma(vec4<f32>(a{{$i}}.y), b{{$j}}_1, fma(vec4<f32>(a{{$i}}.x), b{{$j}}_0, acc{{$i}}_{{$j}}))));
{{- end}}
{{- end}}
  }
{{- end}}
{{- else}}
  for (var k = params.k_begin; k < params.k_end; k++) {
{{- range .Rows}}
    let a{{.}} = a[aoff + r{{.}} * kk + k];
{{- end}}
{{- range .Cols}}
    let b{{.}} = {{if $.TransB}}b[boff + c{{.}} * kk + k]{{else}}b[boff + k * n + c{{.}}]{{end}};
{{- end}}
{{- range $i := .Rows}}{{range $j := $.Cols}}
    acc{{$i}}_{{$j}} = fma(a{{$i}}, b{{$j}}, acc{{$i}}_{{$j}});
{{- end}}{{end}}
  }
{{- end}}
{{- range $i := .Rows}}{{range $j := $.Cols}}
  if (row0 + {{$i}}u < params.m && col0 + {{$j}}u < n) {
    let o = coff + (row0 + {{$i}}u) * n + col0 + {{$j}}u;
{{- $base := ""}}{{if $.Bias}}{{if $.Vec4}}{{$base = printf "bias4(r%d, c%d)" $i $j}}{{else}}{{$base = printf "params.beta * bias[r%d * params.bias_sm + c%d * params.bias_sn]" $i $j}}{{end}}{{end}}
    {{template "linear_store" (args "Out" "c" "O" "o" "V" (printf "params.alpha * acc%d_%d" $i $j) "Base" $base "Chunked" true "Epi" (or $.Act $.Res))}}
  }
{{- end}}{{end}}
}
