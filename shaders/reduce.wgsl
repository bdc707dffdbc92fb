// reduce.wgsl: sum / mean / amax / amin / argmax / argmin / var over any set
// of dims (ops/reduce.go, reduceVariant).
//
// Go coalesces self's dims into kept runs and reduced runs (outermost
// first). Output element `row` splits into kept coordinates with the kept
// runs' row-major steps (kstep) and lands at input offset base =
// sum(coord * kstride); reduced index r (row-major over the reduced runs,
// which is torch's flattened index for argmax) splits the same way with
// rstep/rstride. The splits are unrolled by the template.
//
// Serial variant: one invocation per output, a plain loop over the row.
// Tree variant: one workgroup per output (rows folded into 2-D past 65535
// workgroups); invocation lid accumulates elements lid, lid+WG, ..., then a
// workgroup-memory tree (unrolled) combines the WG partial states.
{{- if .Packed}}
// 1-byte elements, four to a word (little-endian).
@group(0) @binding(0) var<storage, read> x: array<u32>;
{{- else}}
@group(0) @binding(0) var<storage, read> x: array<{{.In}}>;
{{- end}}
@group(0) @binding(1) var<storage, read_write> y: array<{{.Out}}>;

{{template "rows" .}}

// State is one partial result: v the value, i the index (argmax/argmin;
// 0xffffffff means none yet).
struct State { v: {{.Acc}}, i: u32 }

{{- if or (eq .Op "amax") (eq .Op "amin") (eq .Op "argmax") (eq .Op "argmin")}}
{{- if eq .Acc "f32"}}

// Float comparisons on the bits (common.tmpl): exact with NaN and
// subnormals on every adapter.
{{template "num" (args "T" "f32")}}

fn nan_(v: f32) -> bool { return is_nan(v); }
fn less(a: f32, b: f32) -> bool { return flt(a, b); }
fn same(a: f32, b: f32) -> bool { return feq(a, b); }
{{- else}}

fn nan_(v: i32) -> bool { return false; }
fn less(a: i32, b: i32) -> bool { return a < b; }
fn same(a: i32, b: i32) -> bool { return a == b; }
{{- end}}
{{- end}}

fn ident() -> State {
{{- if or (eq .Op "sum") (eq .Op "mean") (eq .Op "var")}}
  return State({{.Acc}}(0), 0u);
{{- else if eq .Op "amax"}}
{{- if eq .Acc "f32"}}
  return State(bitcast<f32>(0xff800000u), 0u);
{{- else}}
  return State(i32(-2147483647 - 1), 0u);
{{- end}}
{{- else if eq .Op "amin"}}
{{- if eq .Acc "f32"}}
  return State(bitcast<f32>(0x7f800000u), 0u);
{{- else}}
  return State(2147483647, 0u);
{{- end}}
{{- else}}
  return State({{.Acc}}(0), 0xffffffffu);
{{- end}}
}

// comb merges b into a; for the index ops a must hold the lower indices
// on ties (both the loop and the tree keep that order).
fn comb(a: State, b: State) -> State {
{{- if or (eq .Op "sum") (eq .Op "mean") (eq .Op "var")}}
  return State(a.v + b.v, 0u);
{{- else if or (eq .Op "amax") (eq .Op "amin")}}
  // NaN wins, as in torch.
  if (nan_(a.v)) { return a; }
  if (nan_(b.v)) { return b; }
{{- if eq .Op "amax"}}
  if (less(a.v, b.v)) { return b; }
  return a;
{{- else}}
  if (less(b.v, a.v)) { return b; }
  return a;
{{- end}}
{{- else}}
  if (b.i == 0xffffffffu) { return a; }
  if (a.i == 0xffffffffu) { return b; }
  let an = nan_(a.v);
  let bn = nan_(b.v);
  if (an || bn) {
    // The first NaN is the extreme.
    if (an && (!bn || a.i < b.i)) { return a; }
    return b;
  }
{{- if eq .Op "argmax"}}
  if (less(a.v, b.v) || (same(b.v, a.v) && b.i < a.i)) { return b; }
{{- else}}
  if (less(b.v, a.v) || (same(b.v, a.v) && b.i < a.i)) { return b; }
{{- end}}
  return a;
{{- end}}
}

// load reads element i of self.
fn load(i: u32) -> {{.In}} {
{{- if eq .Packed "u8"}}
  return i32((x[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu);
{{- else if eq .Packed "i8"}}
  return (i32(x[i >> 2u] >> ((i & 3u) * 8u)) << 24u) >> 24u;
{{- else}}
  return x[i];
{{- end}}
}

fn elem(base: u32, r: u32) -> State {
  return State({{.Acc}}(load(base + red_off(r))), r);
}

fn finish(t: State) -> {{.Out}} {
{{- if eq .Op "mean"}}
  return t.v / params.f0;
{{- else if or (eq .Op "argmax") (eq .Op "argmin")}}
  return i32(select(t.i, 0u, t.i == 0xffffffffu));
{{- else}}
  return {{.Out}}(t.v);
{{- end}}
}
{{- if .Tree}}

var<workgroup> sh: array<State, {{.WG}}>;

{{template "tree" (args "Name" "tree" "T" "State" "Comb" "comb" "Sh" "sh" "Strides" .Strides)}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  // Folded grids overshoot: surplus workgroups still reach every barrier.
  let valid = row < params.rows;
  let base = kept_base(min(row, params.rows - 1u));
  var acc = ident();
  if (valid) {
    for (var r = lid; r < params.extent; r += {{.WG}}u) { acc = comb(acc, elem(base, r)); }
  }
{{- if eq .Op "var"}}
  let mean = tree(acc, lid).v / f32(params.extent);
  var dev = 0.0;
  if (valid) {
    for (var r = lid; r < params.extent; r += {{.WG}}u) {
      let d = load(base + red_off(r)) - mean;
      dev += d * d;
    }
  }
  let total = tree(State(dev, 0u), lid);
  if (valid && lid == 0u) { y[row] = total.v / params.f0; }
{{- else}}
  let total = tree(acc, lid);
  if (valid && lid == 0u) { y[row] = finish(total); }
{{- end}}
}
{{- else}}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (row >= params.rows) { return; }
  let base = kept_base(row);
  var acc = ident();
  for (var r = 0u; r < params.extent; r++) { acc = comb(acc, elem(base, r)); }
{{- if eq .Op "var"}}
  let mean = acc.v / f32(params.extent);
  var dev = 0.0;
  for (var r = 0u; r < params.extent; r++) {
    let d = load(base + red_off(r)) - mean;
    dev += d * d;
  }
  y[row] = dev / params.f0;
{{- else}}
  y[row] = finish(acc);
{{- end}}
}
{{- end}}
