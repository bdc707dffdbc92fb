// matmul.wgsl: C = A·B (+ bias) for aten.mm and aten.linear, float32.
//
// A is M×K row-major. B is K×N (mm) or, with TransB, N×K (linear's weight,
// out = input·weightᵀ). Two families, chosen by Go (ops/matmul.go):
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
// Tiles are clamped at the edges: rows and columns past M and N read the
// last valid one and are not written back.
//
// llvmpipe silently stops a loop after 65535 back-edges per invocation, so
// Go splits K into chunks of at most 16384 trips (matmulMaxTrips), one dispatch
// each: [k_begin, k_end) is this chunk, and accumulate != 0 makes it add to
// C (written by the previous chunk) instead of starting from bias or zero.
// Every loop below is the single K loop; the row and column repetitions are
// unrolled by the template so they cost no back-edges.
{{if .Vec4}}
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
{{if .Bias}}@group(0) @binding(2) var<storage, read> bias: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> c: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> params: Params;
{{else}}@group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> params: Params;
{{end}}
struct Params {
  m: u32,          // rows of A and C
  n4: u32,         // N / 4: vec4 columns of C
  k4: u32,         // K / 4: row length of A (and of weight) in vec4s
  k_begin: u32,    // this chunk, in vec4 steps of K
  k_end: u32,
  accumulate: u32,
  _p0: u32,
  _p1: u32,
}

@compute @workgroup_size({{.WGX}}, {{.WGY}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let col0 = gid.x * {{len .Cols}}u;
  let row0 = gid.y * {{len .Rows}}u;
  if (col0 >= params.n4 || row0 >= params.m) { return; }
  let n4 = params.n4;
  let k4 = params.k4;
  // Rows and vec4 columns past the edge read the last valid one and are
  // not written back.
{{- range .Rows}}
  let r{{.}} = min(row0 + {{.}}u, params.m - 1u);
{{- end}}
{{- range .Cols}}
  let c{{.}} = min(col0 + {{.}}u, n4 - 1u);
{{- end}}
{{- range $i := .Rows}}{{range $j := $.Cols}}
  var acc{{$i}}_{{$j}} = {{if $.Bias}}bias[c{{$j}}]{{else}}vec4<f32>(0.0){{end}};
{{- end}}{{end}}
  if (params.accumulate != 0u) {
{{- range $i := .Rows}}{{range $j := $.Cols}}
    acc{{$i}}_{{$j}} = c[r{{$i}} * n4 + c{{$j}}];
{{- end}}{{end}}
  }
{{- if .TransB}}
  // Vec4 column j is weight rows 4·c_j .. 4·c_j+3, each read along K.
{{- range .Cols}}
  let w{{.}} = 4u * c{{.}} * k4;
{{- end}}
  for (var k = params.k_begin; k < params.k_end; k++) {
{{- range .Cols}}
    let b{{.}}_0 = b[w{{.}} + k];
    let b{{.}}_1 = b[w{{.}} + k4 + k];
    let b{{.}}_2 = b[w{{.}} + 2u * k4 + k];
    let b{{.}}_3 = b[w{{.}} + 3u * k4 + k];
{{- end}}
{{- range $i := .Rows}}
    let a{{$i}} = a[r{{$i}} * k4 + k];
{{- range $j := $.Cols}}
    acc{{$i}}_{{$j}} += vec4<f32>(dot(a{{$i}}, b{{$j}}_0), dot(a{{$i}}, b{{$j}}_1), dot(a{{$i}}, b{{$j}}_2), dot(a{{$i}}, b{{$j}}_3));
{{- end}}
{{- end}}
  }
{{- else}}
  for (var k = params.k_begin; k < params.k_end; k++) {
    // B rows 4k .. 4k+3 at each vec4 column.
    let kb = 4u * k * n4;
{{- range .Cols}}
    let b{{.}}_0 = b[kb + c{{.}}];
    let b{{.}}_1 = b[kb + n4 + c{{.}}];
    let b{{.}}_2 = b[kb + 2u * n4 + c{{.}}];
    let b{{.}}_3 = b[kb + 3u * n4 + c{{.}}];
{{- end}}
{{- range $i := .Rows}}
    let a{{$i}} = a[r{{$i}} * k4 + k];
{{- range $j := $.Cols}}
    acc{{$i}}_{{$j}} = fma(vec4<f32>(a{{$i}}.w), b{{$j}}_3, fma(vec4<f32>(a{{$i}}.z), b{{$j}}_2, fma(vec4<f32>(a{{$i}}.y), b{{$j}}_1, fma(vec4<f32>(a{{$i}}.x), b{{$j}}_0, acc{{$i}}_{{$j}}))));
{{- end}}
{{- end}}
  }
{{- end}}
{{- range $i := .Rows}}{{range $j := $.Cols}}
  if (row0 + {{$i}}u < params.m && col0 + {{$j}}u < n4) { c[(row0 + {{$i}}u) * n4 + col0 + {{$j}}u] = acc{{$i}}_{{$j}}; }
{{- end}}{{end}}
}
{{else}}
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
{{if .Bias}}@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;
{{else}}@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;
{{end}}
struct Params {
  m: u32,
  n: u32,
  k: u32,
  k_begin: u32,    // this chunk, in elements of K
  k_end: u32,
  accumulate: u32,
  _p0: u32,
  _p1: u32,
}

@compute @workgroup_size({{.WGX}}, {{.WGY}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let col0 = gid.x * {{len .Cols}}u;
  let row0 = gid.y * {{len .Rows}}u;
  if (col0 >= params.n || row0 >= params.m) { return; }
  let n = params.n;
  let kk = params.k;
  // Out-of-range rows and columns read the last valid one and are not
  // written back.
{{- range .Rows}}
  let r{{.}} = min(row0 + {{.}}u, params.m - 1u);
{{- end}}
{{- range .Cols}}
  let c{{.}} = min(col0 + {{.}}u, n - 1u);
{{- end}}
{{- range $i := .Rows}}{{range $j := $.Cols}}
  var acc{{$i}}_{{$j}} = {{if $.Bias}}bias[c{{$j}}]{{else}}0.0{{end}};
{{- end}}{{end}}
  if (params.accumulate != 0u) {
{{- range $i := .Rows}}{{range $j := $.Cols}}
    acc{{$i}}_{{$j}} = c[r{{$i}} * n + c{{$j}}];
{{- end}}{{end}}
  }
  for (var k = params.k_begin; k < params.k_end; k++) {
{{- range .Rows}}
    let a{{.}} = a[r{{.}} * kk + k];
{{- end}}
{{- range .Cols}}
    let b{{.}} = {{if $.TransB}}b[c{{.}} * kk + k]{{else}}b[k * n + c{{.}}]{{end}};
{{- end}}
{{- range $i := .Rows}}{{range $j := $.Cols}}
    acc{{$i}}_{{$j}} = fma(a{{$i}}, b{{$j}}, acc{{$i}}_{{$j}});
{{- end}}{{end}}
  }
{{- range $i := .Rows}}{{range $j := $.Cols}}
  if (row0 + {{$i}}u < params.m && col0 + {{$j}}u < n) { c[(row0 + {{$i}}u) * n + col0 + {{$j}}u] = acc{{$i}}_{{$j}}; }
{{- end}}{{end}}
}
{{end}}
