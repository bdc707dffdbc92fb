// embedding_chunk.wgsl: one chunk of an embedding whose table is held in
// chunks of rows (ops/chunk_embedding.go): table rows [params.v0,
// params.v1) of params.v. One dispatch per chunk; each writes the output
// units whose index falls in its rows and leaves the others alone, so
// that the chunks together write every unit once.
{{- if .Q4}}
//
// et_vk.embedding_q4gsw (as shaders/q4embedding.wgsl): w is the chunk of
// the table, params.row_words u32 words per row, two codes u per byte
// (value u − 8), the even d in the {{if .HighEven}}HIGH{{else}}LOW{{end}}
// nibble; s the chunk's scales, params.spr per row, scale of d =
// s[r·spr + d / g]. A unit is the 8 outputs of one weight word; an index
// outside [0, V) reads the nearest row.
@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> s: array<f32>;
@group(0) @binding(2) var<storage, read> idx: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> params: Params;
{{- else}}
//
// aten.embedding of a 4-byte table (as the gather kernel's plan): a unit
// is one element; a negative index counts from the end, an index still
// outside [0, V) gives 0 (written by the chunk that starts at row 0).
@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> idx: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
{{- end}}

// Go twin: chunkEmbeddingParams (ops/chunk_embedding.go).
struct Params {
  total: u32,      // indices × units per output row
  upr: u32,        // units per output row
  row_words: u32,  // weight row stride in words
  v: u32,          // rows of the whole table
  g: u32,          // group size (q4)
  spr: u32,        // scales per table row (q4)
  v0: u32,         // the chunk's first row
  v1: u32,         // one past its last
}
{{- if .Q4}}

fn dec(u: u32, half: u32) -> vec4<f32> {
{{- if .HighEven}}
  let sh = vec4<u32>(4u, 0u, 12u, 8u) + vec4<u32>(half * 16u);
{{- else}}
  let sh = vec4<u32>(0u, 4u, 8u, 12u) + vec4<u32>(half * 16u);
{{- end}}
  return vec4<f32>((vec4<u32>(u) >> sh) & vec4<u32>(15u)) - vec4<f32>(8.0);
}

fn scales(base: u32, d0: u32) -> vec4<f32> {
  let g = params.g;
  return vec4<f32>(s[base + d0 / g], s[base + (d0 + 1u) / g], s[base + (d0 + 2u) / g], s[base + (d0 + 3u) / g]);
}
{{- end}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (t >= params.total) {
    return;
  }
  let i = t / params.upr;
  let j = t % params.upr;
{{- if .Q4}}
  let r = u32(clamp(idx[i], 0, i32(params.v) - 1));
  if (r < params.v0 || r >= params.v1) {
    return;
  }
  let rr = r - params.v0;
  let u = w[rr * params.row_words + j];
  let base = rr * params.spr;
  let d0 = j * 8u;
  out[t * 2u] = dec(u, 0u) * scales(base, d0);
  out[t * 2u + 1u] = dec(u, 1u) * scales(base, d0 + 4u);
{{- else}}
  var x = idx[i];
  if (x < 0) {
    x = x + i32(params.v);
  }
  if (x < 0 || x >= i32(params.v)) {
    if (params.v0 == 0u) {
      out[t] = 0u;
    }
    return;
  }
  let r = u32(x);
  if (r < params.v0 || r >= params.v1) {
    return;
  }
  out[t] = w[(r - params.v0) * params.row_words + j];
{{- end}}
}
