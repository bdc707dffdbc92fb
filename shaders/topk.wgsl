// topk.wgsl: what a sampler needs from one row of logits x, so that a
// sampled decode step reads back a few hundred bytes instead of the
// vocabulary's logits (graph's Head, llm's sampler):
//
//   - the row's maximum m (a NaN never counts unless all are: then NaN),
//   - z = the sum over the row of exp((x - m) * inv_temp), NaN terms left
//     out: the softmax's normalizer at the sampler's temperature,
//   - the k largest elements, as (index, value bits) pairs in no order:
//     every element whose key is above the k-th largest key, then those
//     equal to it (ties), as many as fit in cap slots.
//
// Layout of out (u32): [0] pairs written, [1] elements whose key equals
// the k-th largest key, [2] how many of those belong to the k largest
// (the rest of k are above it), [3] m's bits, [4] z's bits, [5..7] 0, then
// the pairs from [8]. The host sorts the pairs (value descending, index
// ascending, as llm's sampler orders tokens) and keeps the first k; when
// ties were left out (out[1] > the ties written) it reads the logits
// instead.
//
// One workgroup of {{.WG}} lanes. The k-th largest key is found by a radix
// select on integer keys of the bits (4 passes of 8 bits, a workgroup
// histogram each), so the order is exact on any adapter, and the row is
// read 6 times in all whatever k is.
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

// Go twin: topkParams in graph/head.go.
struct Params {
  base: u32,      // the row's first element
  n: u32,         // the row's length
  k: u32,         // how many of the largest (1..n)
  cap: u32,       // pair slots in out
  inv_temp: f32,  // 1 / temperature
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> hist: array<atomic<u32>, 256>;
var<workgroup> sk: array<u32, {{.WG}}>;
var<workgroup> sz: array<f32, {{.WG}}>;
var<workgroup> sel: vec2<u32>;  // the key prefix chosen so far, elements still to take
var<workgroup> written: atomic<u32>;
var<workgroup> ties: atomic<u32>;

// key maps v's bits to an unsigned integer in the order of the values,
// both zeros equal and NaN below every number (-Inf included).
fn key(v: f32) -> u32 {
  let b = bitcast<u32>(v);
  let m = b & 0x7fffffffu;
  if (m > 0x7f800000u) {
    return 0u;
  }
  if (m == 0u) {
    return 0x80000000u;
  }
  return select(b | 0x80000000u, ~b, (b >> 31u) != 0u);
}

// unkey is the value of key k (a non-zero key; +0 for both zeros).
fn unkey(k: u32) -> f32 {
  return bitcast<f32>(select(~k, k & 0x7fffffffu, (k >> 31u) != 0u));
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) lid: u32) {
  let n = params.n;
  // The maximum, as the largest key.
  var mk = 0u;
  for (var i = lid; i < n; i += {{.WG}}u) {
    let k = key(x[params.base + i]);
    if (k > mk) {
      mk = k;
    }
  }
  sk[lid] = mk;
  workgroupBarrier();
{{- range .Strides}}
  if (lid < {{.}}u && sk[lid + {{.}}u] > sk[lid]) {
    sk[lid] = sk[lid + {{.}}u];
  }
  workgroupBarrier();
{{- end}}
  mk = sk[0];
  // All NaN: m is NaN and z 0 (the host then reads the logits).
  let m = select(bitcast<f32>(0x7fc00000u), unkey(mk), mk != 0u);
  var z = 0.0;
  if (mk != 0u) {
    for (var i = lid; i < n; i += {{.WG}}u) {
      let v = x[params.base + i];
      if (key(v) != 0u) {
        z += exp((v - m) * params.inv_temp);
      }
    }
  }
  sz[lid] = z;
  workgroupBarrier();
{{- range .Strides}}
  if (lid < {{.}}u) {
    sz[lid] = sz[lid] + sz[lid + {{.}}u];
  }
  workgroupBarrier();
{{- end}}
  // Radix select of the k-th largest key, 8 bits at a time from the top.
  if (lid == 0u) {
    sel = vec2<u32>(0u, params.k);
    atomicStore(&written, 0u);
    atomicStore(&ties, 0u);
  }
  var mask = 0u;
  for (var d = 0u; d < 4u; d++) {
    let shift = 24u - 8u * d;
    atomicStore(&hist[lid], 0u);
    workgroupBarrier();
    let prefix = sel.x;
    for (var i = lid; i < n; i += {{.WG}}u) {
      let k = key(x[params.base + i]);
      if ((k & mask) == prefix) {
        atomicAdd(&hist[(k >> shift) & 0xffu], 1u);
      }
    }
    workgroupBarrier();
    if (lid == 0u) {
      var need = sel.y;
      var b = 255u;
      loop {
        let c = atomicLoad(&hist[b]);
        if (c >= need || b == 0u) {
          break;
        }
        need -= c;
        b -= 1u;
      }
      sel = vec2<u32>(prefix | (b << shift), need);
    }
    mask |= 0xffu << shift;
    workgroupBarrier();
  }
  let kth = sel.x;
  let need = sel.y;
  let above = params.k - need;
  // Collect: every key above the k-th, then ties while slots remain.
  for (var i = lid; i < n; i += {{.WG}}u) {
    let v = x[params.base + i];
    let k = key(v);
    var slot = params.cap;
    if (k > kth) {
      slot = atomicAdd(&written, 1u);
    } else if (k == kth) {
      let t = atomicAdd(&ties, 1u);
      if (t < params.cap - above) {
        slot = atomicAdd(&written, 1u);
      }
    }
    if (slot < params.cap) {
      out[8u + 2u * slot] = i;
      out[9u + 2u * slot] = bitcast<u32>(v);
    }
  }
  workgroupBarrier();
  if (lid == 0u) {
    out[0] = atomicLoad(&written);
    out[1] = atomicLoad(&ties);
    out[2] = need;
    out[3] = bitcast<u32>(m);
    out[4] = bitcast<u32>(sz[0]);
    out[5] = 0u;
    out[6] = 0u;
    out[7] = 0u;
  }
}
