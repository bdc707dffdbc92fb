// gemv_skinny.wgsl: the GPU family's linear for 8 < M ≤ 16 rows (short
// prefill chunks, small batches; ops/linear_gpu_skinny.go, linear_family.go
// entry "gpu/skinny"): out = alpha·(x·Wᵀ) + beta·bias, then the fused
// epilogue, for a float32 weight [N, K] as exported, K % 4 == 0.
//
// Shape (../shared/spec/gpu-predictions.md §3 and §4.4): a workgroup of
// {{.WG}} invocations is {{.Warps}} warps of 32 lanes; each warp computes {{len .Cols}} output
// columns (weight rows) for all {{len .Rows}} input rows, its 32 lanes walking K in
// vec4 units, lane l taking units l, l + 32, ...: a step loads one vec4 of
// each of the {{len .Cols}} weight rows (a warp reads 512 contiguous bytes of each)
// and one vec4 of each input row, and makes {{mul (len .Rows) (len .Cols)}} dot products, so the
// weight is read once for all rows and each activation load serves {{len .Cols}}
// columns (gemv_gpu.wgsl's 16-row form loads 16 activation vec4s for
// each weight vec4). The lanes' sums meet in workgroup memory, one column
// at a time: every lane writes its {{len .Rows}} sums at part[li·{{.Pitch}} + row] (a pitch
// of {{.Pitch}}: neighbouring lanes write different banks), then lane r < {{len .Rows}}
// of each warp adds row r's 32 sums in lane order (reading neighbouring
// addresses across lanes) and stores the output.
//
// K is split into chunks of at most ops.gpuGEMVMaxTrips trips a lane
// ([k_begin, k_end), in units), one dispatch each, only so that lavapipe
// (which cuts loops at 65535 back-edges) runs it correctly; later chunks
// add to out (accumulate) and the epilogue runs on the last. Columns past
// N read the last valid one and are not written (no early return: every
// invocation reaches the barriers). The grid's x (folded into y past the
// per-dimension limit) runs over column blocks.
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<vec4<f32>>;
{{- template "linear_bindings" (args "K" . "DQ8" false "Out" "out")}}

// Go twin: gpuGEMVParams in ops/linear_gpu.go (gemv_gpu.wgsl's).
{{- template "gemv_params" (args "KUnit" "in vec4 units")}}
{{- template "linear_epilogue" (args "Act" .Act "Gate" .Gate "Res" .Res "T" "f32")}}

// part holds the lanes' sums of one column, lane li's row r at
// part[li·{{.Pitch}} + r].
var<workgroup> part: array<f32, {{mul .WG .Pitch}}>;

@compute @workgroup_size({{.WG}})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let kl = li % 32u;
  let wi = li / 32u;
  let blk = wid.x + wid.y * nwg.x;
  let n0 = (blk * {{.Warps}}u + wi) * {{len .Cols}}u;
{{- range $c := .Cols}}
  let col{{$c}} = n0 + {{$c}}u;
  let wr{{$c}} = min(col{{$c}}, params.n - 1u) * params.k;
{{- end}}
{{- range $r := .Rows}}
  let xr{{$r}} = min({{$r}}u, params.m - 1u) * params.k;
{{- range $c := $.Cols}}
  var acc{{$r}}_{{$c}} = 0.0;
{{- end}}
{{- end}}
  for (var t = params.k_begin + kl; t < params.k_end; t += 32u) {
{{- range $c := .Cols}}
    let w{{$c}} = w[wr{{$c}} + t];
{{- end}}
{{- range $r := .Rows}}
    {
      let xv = x[xr{{$r}} + t];
{{- range $c := $.Cols}}
      acc{{$r}}_{{$c}} += dot(xv, w{{$c}});
{{- end}}
    }
{{- end}}
  }
{{- range $c := .Cols}}
  // Column {{$c}}.
{{- range $r := $.Rows}}
  part[li * {{$.Pitch}}u + {{$r}}u] = acc{{$r}}_{{$c}};
{{- end}}
  workgroupBarrier();
  if (kl < {{len $.Rows}}u) {
    var s = 0.0;
    for (var j = 0u; j < 32u; j++) {
      s += part[(wi * 32u + j) * {{$.Pitch}}u + kl];
    }
    if (kl < params.m && col{{$c}} < params.n) {
      let o = kl * params.n + col{{$c}};
      {{template "linear_store" (args "Out" "out" "O" "o" "V" "params.alpha * s" "Base" (and $.Bias (printf "params.beta * bias[kl * params.bias_sm + col%d * params.bias_sn]" $c)) "Chunked" true "Epi" (or $.Act $.Res))}}
    }
  }
  workgroupBarrier();
{{- end}}
}
