// pack_f16.wgsl: packs a linear weight [N, K] whose float32 values are
// halves (a FLOAT16 constant, widened at load) into rows of K8/2 u32 words,
// K8 = K rounded up to 8, two halves a word, the lower k in the low 16
// bits (pack2x16float; exact, the values being halves); words past K are
// zero. Run once at load (ops.HalfWeightSpec); read by gemv_f16.wgsl as
// vec4<u32>, eight halves a load. Go twin: HalfWeightSpec in
// ops/linear_f16.go.
@group(0) @binding(0) var<storage, read> w: array<f32>;
@group(0) @binding(1) var<storage, read_write> p: array<u32>;

struct Params {
  n: u32,      // rows
  k: u32,      // row length in floats
  words: u32,  // words per packed row (K8/2)
  stride: u32, // invocations per grid row (x groups · 64)
}
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.y * params.stride + gid.x;
  if (i >= params.n * params.words) { return; }
  let row = i / params.words;
  let k = (i % params.words) * 2u;
  var lo = 0.0;
  var hi = 0.0;
  if (k < params.k) { lo = w[row * params.k + k]; }
  if (k + 1u < params.k) { hi = w[row * params.k + k + 1u]; }
  p[i] = pack2x16float(vec2<f32>(lo, hi));
}
