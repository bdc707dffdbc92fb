// grid_sample.wgsl: aten.grid_sampler_2d (Op "sample") and
// et_vk.grid_priors (Op "priors"), float32, one invocation per output
// element.
//
// sample: out [N, C, Ho, Wo] reads grid[n, ho, wo] = (gx, gy), unnormalizes
// it to input pixels (align_corners: (g+1)·(size-1)/2; else (g+1)·size/2
// - 0.5), clips it to [0, size-1] for border padding, then takes the nearest
// pixel (round half to even) or the bilinear blend of the four neighbours;
// with zeros padding, neighbours outside the input count as 0.
// priors: out [H·W, 2], row h·W+w = ((w + offset)·stride, (h + offset)·stride).
{{- if eq .Op "sample"}}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> grid: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

// Go twin: the Params packing in gridSamplerOp.
struct Params {
  n_out: u32, c: u32, ho: u32, wo: u32,
  ih: u32, iw: u32, align: u32, _p0: u32,
}
@group(0) @binding(3) var<uniform> params: Params;

{{template "num" (args "T" "f32")}}

fn unnormalize(g: f32, size: u32) -> f32 {
  var v: f32;
  // The forms of torch's vectorized CPU kernel (ComputeLocationBase).
  if (params.align != 0u) {
    v = (g + 1.0) * (f32(size - 1u) * 0.5);
  } else {
    v = (g + 1.0) * (f32(size) * 0.5) - 0.5;
  }
{{- if .Border}}
  // NaN stays NaN, as the reference's math.Min(size-1, math.Max(v, 0)).
  v = fmin(f32(size - 1u), fmax(v, 0.0));
{{- end}}
  return v;
}

// at returns the input pixel (iy, ix) of plane base, or 0 outside.
fn at(base: u32, iy: f32, ix: f32) -> f32 {
  if (iy >= 0.0 && ix >= 0.0 && iy < f32(params.ih) && ix < f32(params.iw)) {
    return x[base + u32(iy) * params.iw + u32(ix)];
  }
  return 0.0;
}

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n_out) { return; }
  let pix = i % (params.ho * params.wo);
  let plane = i / (params.ho * params.wo); // n·C + c
  let n = plane / params.c;
  let g = (n * params.ho * params.wo + pix) * 2u;
  let ix = unnormalize(grid[g], params.iw);
  let iy = unnormalize(grid[g + 1u], params.ih);
  let base = plane * params.ih * params.iw;
{{- if .Nearest}}
  y[i] = at(base, round(iy), round(ix));
{{- else}}
  let x0 = floor(ix);
  let y0 = floor(iy);
  let wx = ix - x0;
  let wy = iy - y0;
  y[i] = at(base, y0, x0) * (1.0 - wx) * (1.0 - wy)
       + at(base, y0, x0 + 1.0) * wx * (1.0 - wy)
       + at(base, y0 + 1.0, x0) * (1.0 - wx) * wy
       + at(base, y0 + 1.0, x0 + 1.0) * wx * wy;
{{- end}}
}
{{- else}}
@group(0) @binding(0) var<storage, read_write> y: array<f32>;

// Go twin: the Params packing in gridPriorsOp.
struct Params { n_out: u32, w: u32, stride: f32, offset: f32 }
@group(0) @binding(1) var<uniform> params: Params;

@compute @workgroup_size({{.WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * (nwg.x * {{.WG}}u);
  if (i >= params.n_out) { return; }
  let cell = i / 2u;
  var c = cell % params.w; // x: w
  if (i % 2u == 1u) { c = cell / params.w; } // y: h
  y[i] = (f32(c) + params.offset) * params.stride;
}
{{- end}}
