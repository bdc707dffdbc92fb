// q4embedding.wgsl: et_vk.embedding_q4gsw, a row gather from a 4-bit
// group-quantized table, dequantized as it is read (ops/quant_embedding.go).
//
// w is the table [V, D/2] as exported, params.row_words u32 words per row,
// two codes u per byte (value u − 8), the even d in the
// {{if .HighEven}}HIGH{{else}}LOW{{end}} nibble. s holds params.spr scales per
// table row, scale of d = s[v·spr + d / g]. Each invocation writes the 8
// outputs of one weight word (two vec4s) of one index; an index outside
// [0, V) reads the nearest row (the runtimes do not check it).
@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> s: array<f32>;
@group(0) @binding(2) var<storage, read> idx: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> params: Params;

// Go twin: the Params built in embeddingQ4gswOp (ops/quant_embedding.go).
struct Params {
  total: u32,      // indices × words per output row
  wpr: u32,        // words per output row (D / 8)
  row_words: u32,  // weight row stride in words
  v: u32,          // table rows
  g: u32,          // group size
  spr: u32,        // scales per table row
  _p0: u32,
  _p1: u32,
}

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

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (t >= params.total) {
    return;
  }
  let i = t / params.wpr;
  let j = t % params.wpr;
  let r = u32(clamp(idx[i], 0, i32(params.v) - 1));
  let u = w[r * params.row_words + j];
  let base = r * params.spr;
  let d0 = j * 8u;
  out[t * 2u] = dec(u, 0u) * scales(base, d0);
  out[t * 2u + 1u] = dec(u, 1u) * scales(base, d0 + 4u);
}
