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
// The k-th largest key is found by a radix select on integer keys of the
// bits (4 digits of 8 bits, a histogram each), so the order is exact on
// any adapter, and the row is read 6 times in all whatever k is.
//
// Stage "one": one workgroup of {{.WG}} lanes does it all, a workgroup
// histogram per digit. The two-level stages do the same for long rows,
// each pass over the row split in workgroups of params.chunk elements
// and each decision made by one workgroup in a dispatch of its own:
//
//   - "part": each workgroup's chunk maximum key and z relative to it
//     (tk stats), and the histogram of every key's first digit (tk hist
//     0, added from a workgroup histogram);
//   - "sel" (digit .Digit, one workgroup): with digit 0, m and z from
//     the chunks' (z = Σ z_w·exp((m_w − m)·inv_temp)); then the digit's
//     bin holding the k-th largest key, from the top, into the selection
//     (prefix, need). It zeroes the next digit's histogram, and after
//     the last digit (3) writes out's header, zeroes its counters and
//     the first digit's histogram for the next step;
//   - "hist" (digit .Digit): the histogram of that digit of the keys
//     that match the selection's prefix so far;
//   - "collect": every key above the k-th, then ties while slots remain,
//     slots taken with atomics on out's counters.
//
// tk (u32) holds hist[4][256] from 0, the selection (prefix, need, m's
// key, z bits) at 1024, and the chunks' (max key, z bits) from 1032.
{{- $one := eq .Stage "one"}}
{{- if $one}}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;
{{- else if eq .Stage "sel"}}
@group(0) @binding(0) var<storage, read_write> tk: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;
{{- else if eq .Stage "collect"}}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> tk: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> params: Params;
{{- else}}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> tk: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> params: Params;
{{- end}}

// Go twin: topkParams in graph/head.go.
struct Params {
  base: u32,      // the row's first element
  n: u32,         // the row's length
  k: u32,         // how many of the largest (1..n)
  cap: u32,       // pair slots in out
  inv_temp: f32,  // 1 / temperature
  chunk: u32,     // two-level: elements per workgroup
  _pad1: u32,
  _pad2: u32,
}

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
var<workgroup> sk: array<u32, {{.WG}}>;
var<workgroup> sz: array<f32, {{.WG}}>;
{{- if or $one (eq .Stage "part") (eq .Stage "hist")}}
var<workgroup> wh: array<atomic<u32>, 256>; // a digit's histogram
{{- end}}

{{template "tree" (args "Name" "tree_max" "T" "u32" "Comb" "max" "Sh" "sk" "Strides" .Strides)}}

{{template "tree" (args "Name" "tree_sum" "T" "f32" "Comb" "+" "Sh" "sz" "Strides" .Strides)}}
{{- if or $one (eq .Stage "part")}}

// max_key is the largest key of the row's elements [lo, hi), for every
// lane.
fn max_key(lo: u32, hi: u32, lid: u32) -> u32 {
  var mk = 0u;
  for (var i = lo + lid; i < hi; i += {{.WG}}u) {
    let k = key(x[params.base + i]);
    if (k > mk) {
      mk = k;
    }
  }
  return tree_max(mk, lid);
}
{{- end}}
{{- if or $one (eq .Stage "hist")}}

// count_digit adds to wh the digit at shift of each key of the row's
// elements [lo, hi) whose bits under mask are prefix.
fn count_digit(lo: u32, hi: u32, prefix: u32, mask: u32, shift: u32, lid: u32) {
  for (var i = lo + lid; i < hi; i += {{.WG}}u) {
    let k = key(x[params.base + i]);
    if ((k & mask) == prefix) {
      atomicAdd(&wh[(k >> shift) & 0xffu], 1u);
    }
  }
}
{{- end}}
{{- /* "pick": from the top bin of a digit's histogram (Count: bin b's
count), the bin holding the need-th largest key, into b, need left as the
rank within it. */}}
{{- define "pick"}}
    var b = 255u;
    loop {
      let c = {{.}};
      if (c >= need || b == 0u) {
        break;
      }
      need -= c;
      b -= 1u;
    }
{{- end}}
{{- /* "collect": every key of the row's elements [lo, hi) above the
k-th (kth; above of them in k), then ties while slots remain, slots taken
with atomics Written and Ties; Atomic: out is atomic. */}}
{{- define "collect"}}
  for (var i = lo + lid; i < hi; i += {{.WG}}u) {
    let v = x[params.base + i];
    let k = key(v);
    var slot = params.cap;
    if (k > kth) {
      slot = atomicAdd(&{{.Written}}, 1u);
    } else if (k == kth) {
      let t = atomicAdd(&{{.Ties}}, 1u);
      if (t < params.cap - above) {
        slot = atomicAdd(&{{.Written}}, 1u);
      }
    }
    if (slot < params.cap) {
{{- if .Atomic}}
      atomicStore(&out[8u + 2u * slot], i);
      atomicStore(&out[9u + 2u * slot], bitcast<u32>(v));
{{- else}}
      out[8u + 2u * slot] = i;
      out[9u + 2u * slot] = bitcast<u32>(v);
{{- end}}
    }
  }
{{- end}}
{{- if $one}}

var<workgroup> sel: vec2<u32>;  // the key prefix chosen so far, elements still to take
var<workgroup> written: atomic<u32>;
var<workgroup> ties: atomic<u32>;

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) lid: u32) {
  let lo = 0u;
  let hi = params.n;
  // The maximum, as the largest key.
  let mk = max_key(lo, hi, lid);
  // All NaN: m is NaN and z 0 (the host then reads the logits).
  let m = select(bitcast<f32>(0x7fc00000u), unkey(mk), mk != 0u);
  var z = 0.0;
  if (mk != 0u) {
    for (var i = lo + lid; i < hi; i += {{.WG}}u) {
      let v = x[params.base + i];
      if (key(v) != 0u) {
        z += exp((v - m) * params.inv_temp);
      }
    }
  }
  let zsum = tree_sum(z, lid);
  // Radix select of the k-th largest key, 8 bits at a time from the top.
  if (lid == 0u) {
    sel = vec2<u32>(0u, params.k);
    atomicStore(&written, 0u);
    atomicStore(&ties, 0u);
  }
  var mask = 0u;
  for (var d = 0u; d < 4u; d++) {
    let shift = 24u - 8u * d;
    atomicStore(&wh[lid], 0u);
    workgroupBarrier();
    let prefix = sel.x;
    count_digit(lo, hi, prefix, mask, shift, lid);
    workgroupBarrier();
    if (lid == 0u) {
      var need = sel.y;
{{- template "pick" "atomicLoad(&wh[b])"}}
      sel = vec2<u32>(prefix | (b << shift), need);
    }
    mask |= 0xffu << shift;
    workgroupBarrier();
  }
  let kth = sel.x;
  let need = sel.y;
  let above = params.k - need;
  // Collect: every key above the k-th, then ties while slots remain.
{{- template "collect" (args "WG" .WG "Written" "written" "Ties" "ties" "Atomic" false)}}
  workgroupBarrier();
  if (lid == 0u) {
    out[0] = atomicLoad(&written);
    out[1] = atomicLoad(&ties);
    out[2] = need;
    out[3] = bitcast<u32>(m);
    out[4] = bitcast<u32>(zsum);
    out[5] = 0u;
    out[6] = 0u;
    out[7] = 0u;
  }
}
{{- else}}

// Offsets into tk.
const SEL: u32 = 1024u;   // prefix, need, m's key, z bits
const STATS: u32 = 1032u; // per chunk: max key, z bits

// NEG_INF is -Inf's key.
const NEG_INF: u32 = 0x007fffffu;
{{- if eq .Stage "sel"}}
var<workgroup> wsel: vec2<u32>;
{{- end}}
{{- if eq .Stage "hist"}}

// The digit and the key bits the selection fixed before it.
const SHIFT: u32 = {{sub 24 (mul 8 .Digit)}}u;
const MASK: u32 = {{.Mask}}u;
{{- end}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
{{- if ne .Stage "sel"}}
  let lo = wid.x * params.chunk;
  let hi = min(lo + params.chunk, params.n);
{{- end}}
{{- if eq .Stage "part"}}
  // The chunk's maximum key, z relative to it, and its keys' first digit.
  atomicStore(&wh[lid], 0u);
  let mk = max_key(lo, hi, lid);
  let m = unkey(mk);
  var z = 0.0;
  for (var i = lo + lid; i < hi; i += {{.WG}}u) {
    let v = x[params.base + i];
    let k = key(v);
    atomicAdd(&wh[k >> 24u], 1u);
    if (k != 0u) {
      z += exp((v - m) * params.inv_temp);
    }
  }
  let zsum = tree_sum(z, lid);
  let c = atomicLoad(&wh[lid]);
  if (c != 0u) {
    atomicAdd(&tk[lid], c);
  }
  if (lid == 0u) {
    // A chunk of NaNs and -Infs adds nothing to z (unless the whole row
    // is: see "sel").
    atomicStore(&tk[STATS + 2u * wid.x], mk);
    atomicStore(&tk[STATS + 2u * wid.x + 1u], bitcast<u32>(select(0.0, zsum, mk > NEG_INF)));
  }
{{- else if eq .Stage "hist"}}
  // The digit's histogram of the keys that match the prefix so far.
  atomicStore(&wh[lid], 0u);
  workgroupBarrier();
  count_digit(lo, hi, atomicLoad(&tk[SEL]), MASK, SHIFT, lid);
  workgroupBarrier();
  let c = atomicLoad(&wh[lid]);
  if (c != 0u) {
    atomicAdd(&tk[{{mul 256 .Digit}}u + lid], c);
  }
{{- else if eq .Stage "sel"}}
  let shift = {{sub 24 (mul 8 .Digit)}}u;
{{- if eq .Digit 0}}
  // m and z from the chunks'.
  let groups = (params.n + params.chunk - 1u) / params.chunk;
  var mk0 = 0u;
  for (var j = lid; j < groups; j += {{.WG}}u) {
    mk0 = max(mk0, atomicLoad(&tk[STATS + 2u * j]));
  }
  let mk = tree_max(mk0, lid);
  let m = unkey(mk);
  var z = 0.0;
  if (mk > NEG_INF) {
    for (var j = lid; j < groups; j += {{.WG}}u) {
      let mw = atomicLoad(&tk[STATS + 2u * j]);
      if (mw > NEG_INF) {
        z += bitcast<f32>(atomicLoad(&tk[STATS + 2u * j + 1u])) * exp((unkey(mw) - m) * params.inv_temp);
      }
    }
  }
  let zsum = tree_sum(z, lid);
{{- end}}
  if (lid == 0u) {
{{- if eq .Digit 0}}
    var prefix = 0u;
    var need = params.k;
    atomicStore(&tk[SEL + 2u], mk);
    // A row whose largest is -Inf: exp(-Inf − -Inf) is NaN, as the
    // one-workgroup kernel (and the host) sum it.
    atomicStore(&tk[SEL + 3u], select(bitcast<u32>(zsum), 0x7fc00000u, mk == NEG_INF));
{{- else}}
    var prefix = atomicLoad(&tk[SEL]);
    var need = atomicLoad(&tk[SEL + 1u]);
{{- end}}
{{- template "pick" (printf "atomicLoad(&tk[%du + b])" (mul 256 .Digit))}}
    wsel = vec2<u32>(prefix | (b << shift), need);
    atomicStore(&tk[SEL], wsel.x);
    atomicStore(&tk[SEL + 1u], wsel.y);
  }
  workgroupBarrier();
  // The histogram the next pass adds to starts at zero.
  atomicStore(&tk[{{mul 256 (mod (add .Digit 1) 4)}}u + lid], 0u);
{{- if eq .Digit 3}}
  if (lid == 0u) {
    let mk = atomicLoad(&tk[SEL + 2u]);
    out[0] = 0u;
    out[1] = 0u;
    out[2] = wsel.y;
    out[3] = bitcast<u32>(select(bitcast<f32>(0x7fc00000u), unkey(mk), mk != 0u));
    out[4] = atomicLoad(&tk[SEL + 3u]);
    out[5] = 0u;
    out[6] = 0u;
    out[7] = 0u;
  }
{{- end}}
{{- else}}
  // Collect: every key above the k-th, then ties while slots remain.
  let kth = tk[SEL];
  let above = params.k - tk[SEL + 1u];
{{- template "collect" (args "WG" .WG "Written" "out[0]" "Ties" "out[1]" "Atomic" true)}}
{{- end}}
}
{{- end}}
