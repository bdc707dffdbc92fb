// matmul_tiled128.wgsl: the GPU family's large tiled matmul, C =
// alpha·(A·B) + beta·bias then the fused epilogue, for float32 aten.mm,
// bmm, addmm, matmul and linear with many rows (prefill, CNN linears;
// ops/linear_gpu_tiled.go, linear_family.go entry "gpu/tiled128").
//
// A is M×K row-major{{if .VecA}} (K % 4 == 0: read as vec4s){{end}}; B is {{if eq .B "kn"}}K×N (mm's mat2){{if .VecB}}, N % 4 == 0: read
// as vec4s{{end}}{{else}}N×K (linear's weight, as exported){{if .VecB}}, K % 4 == 0: read as vec4s{{end}}{{end}}.
//
// Shape (../shared/spec/gpu-predictions.md §3 and §4.2): a workgroup of
// 16×16 invocations computes a {{.BM}}×{{.BN}} tile of C, each invocation 8×8
// outputs in registers: rows ty·4 .. ty·4+3 and 64 + ty·4 .. 64 + ty·4+3,
// columns likewise from tx, so that its operands are two aligned vec4s of
// each tile row and the 16 invocations of a half-warp read 256
// contiguous bytes of B's tile row (and 2 distinct vec4s of A's). K
// advances {{.BK}} at a time through workgroup memory, both tiles k-major
// (at[k][m], bt[k][n]) as array<vec4<f32>> without padding: the vec4 slot
// of row k is XORed with swz(k) = 4·((k / 4) % 2), which keeps the
// transposing stores of A's (and linear's B's) tile free of bank
// conflicts (the two invocations loading one row store k and k + 4 to
// different banks) while every read stays an aligned vec4 (LDS.128). The
// next K tile is loaded into registers (4 values of A and 4 of B an
// invocation) before the current one's {{mul .BK 64}} FMAs, and stored after
// them: one tile of workgroup memory, two barriers a tile.
//
// Elements past M, N and K load as 0, so any sizes work. Batches run along
// the grid's z as in matmul_gpu.wgsl (the same Params, ops.matmulParams);
// K is split into chunks of at most ops.gpuTiled128MaxTrips tiles, one
// dispatch each, only so that lavapipe (65535 loop back-edges per
// invocation) runs it correctly; later chunks add to C (accumulate) and
// the epilogue runs on the last.
{{- if .VecA}}
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
{{- else}}
@group(0) @binding(0) var<storage, read> a: array<f32>;
{{- end}}
{{- if .VecB}}
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
{{- else}}
@group(0) @binding(1) var<storage, read> b: array<f32>;
{{- end}}
{{- template "linear_bindings" (args "K" . "DQ8" false "Out" "c")}}

// Go twin: ops.matmulParams (matmul.wgsl's layout; k, k_begin and k_end
// count elements, bdims and the batch strides are in elements).
{{- template "matmul_params" (args "Q" false)}}
{{- template "linear_epilogue" (args "Act" .Act "Gate" .Gate "Res" .Res "T" "f32")}}

// The tiles, k-major, {{div .BM 4}} vec4 slots a k row, slot s of row k at
// [k·{{div .BM 4}} + (s ^ swz(k))].
var<workgroup> at: array<vec4<f32>, {{mul .BK (div .BM 4)}}>;
var<workgroup> bt: array<vec4<f32>, {{mul .BK (div .BN 4)}}>;

// swz is the XOR of k row k's vec4 slots.
fn swz(k: u32) -> u32 {
  return ((k >> 2u) & 1u) << 2u;
}

{{- define "t128_ld4"}}
{{- /* Loads the 4 elements .Dst of operand .Arr (.Vec: a vec4 array) at row
.R (valid below .Lim), k .K .. .K + 3, row stride .LD, base .Base. */ -}}
{
      {{.Dst}} = vec4<f32>(0.0);
      let rr = {{.R}};
      let kq = {{.K}};
      if (rr < {{.Lim}}) {
        let o = {{.Base}} + rr * {{.LD}} + kq;
{{- if .Vec}}
        if (kq < params.k_end) {
          {{.Dst}} = {{.Arr}}[o / 4u];
        }
{{- else}}
        for (var j = 0u; j < 4u; j++) {
          if (kq + j < params.k_end) {
            {{.Dst}}[j] = {{.Arr}}[o + j];
          }
        }
{{- end}}
      }
    }
{{- end}}

{{template "tiled_main" .}}
  // This invocation's share of a tile load: A's row li / 2, k (li % 2)·4
  // .. +3; B's {{if eq .B "kn"}}k row li / 32, columns (li % 32)·4 .. +3{{else}}row (output column) li / 2, k (li % 2)·4 .. +3{{end}}.
  let la_r = li / 2u;
  let la_k = (li % 2u) * 4u;
{{- if eq .B "kn"}}
  let lb_k = li / 32u;
  let lb_s = li % 32u;
{{- else}}
  let lb_r = li / 2u;
  let lb_k = (li % 2u) * 4u;
{{- end}}
  var ra: vec4<f32>;
  var rb: vec4<f32>;
{{- range $i := .Acc}}{{range $j := $.Acc}}
  var c{{$i}}_{{$j}} = 0.0;
{{- end}}{{end}}
  // The first tile into registers.
  var k0 = params.k_begin;
  {{template "t128_load" (args "S" $ "Next" false)}}
  for (; k0 < params.k_end; k0 += {{.BK}}u) {
    // The registers into the tile (A's and nk B's transposed: 4 rows of k).
    for (var j = 0u; j < 4u; j++) {
      let kr = la_k + j;
      at[kr * {{div .BM 4}}u + ((la_r / 4u) ^ swz(kr))][la_r % 4u] = ra[j];
{{- if ne .B "kn"}}
      bt[kr * {{div .BN 4}}u + ((lb_r / 4u) ^ swz(kr))][lb_r % 4u] = rb[j];
{{- end}}
    }
{{- if eq .B "kn"}}
    bt[lb_k * {{div .BN 4}}u + (lb_s ^ swz(lb_k))] = rb;
{{- end}}
    workgroupBarrier();
    // The next tile into registers while this one is consumed.
    if (k0 + {{.BK}}u < params.k_end) {
      let kn = k0 + {{.BK}}u;
      {{template "t128_load" (args "S" $ "Next" true)}}
    }
{{- range $q := .Ks}}
    {
      let s = swz({{$q}}u);
      let a0 = at[{{mul $q (div $.BM 4)}}u + (ty ^ s)];
      let a1 = at[{{mul $q (div $.BM 4)}}u + ((16u + ty) ^ s)];
      let b0 = bt[{{mul $q (div $.BN 4)}}u + (tx ^ s)];
      let b1 = bt[{{mul $q (div $.BN 4)}}u + ((16u + tx) ^ s)];
{{- range $i := $.Acc}}{{range $j := $.Acc}}
      c{{$i}}_{{$j}} = fma({{if lt $i 4}}a0[{{$i}}]{{else}}a1[{{sub $i 4}}]{{end}}, {{if lt $j 4}}b0[{{$j}}]{{else}}b1[{{sub $j 4}}]{{end}}, c{{$i}}_{{$j}});
{{- end}}{{end}}
    }
{{- end}}
    workgroupBarrier();
  }
  let coff = batch * m * n;
{{- range $i := .Acc}}
  {
    let r = row0 + {{if lt $i 4}}ty * 4u + {{$i}}u{{else}}64u + ty * 4u + {{sub $i 4}}u{{end}};
{{- range $j := $.Acc}}
    {
      let cq = col0 + {{if lt $j 4}}tx * 4u + {{$j}}u{{else}}64u + tx * 4u + {{sub $j 4}}u{{end}};
      if (r < m && cq < n) {
        let o = coff + r * n + cq;
        {{template "linear_store" (args "Out" "c" "O" "o" "V" (printf "params.alpha * c%d_%d" $i $j) "Base" (and $.Bias "params.beta * bias[r * params.bias_sm + cq * params.bias_sn]") "Chunked" true "Epi" (or $.Act $.Res))}}
      }
    }
{{- end}}
  }
{{- end}}
}

{{- define "t128_load"}}
{{- /* The tile at k0 (with Next, at kn) into ra and rb. */ -}}
{{- $s := .S}}{{$k := "k0"}}{{if .Next}}{{$k = "kn"}}{{end}}
{{- template "t128_ld4" (args "Dst" "ra" "Arr" "a" "Vec" $s.VecA "R" "row0 + la_r" "Lim" "m" "K" (printf "%s + la_k" $k) "LD" "kk" "Base" "aoff")}}
{{- if eq $s.B "kn"}}
    {
      rb = vec4<f32>(0.0);
      let kq = {{$k}} + lb_k;
      let cq = col0 + lb_s * 4u;
      if (kq < params.k_end) {
        let o = boff + kq * params.ldb + cq;
{{- if $s.VecB}}
        if (cq < n) {
          rb = b[o / 4u];
        }
{{- else}}
        for (var j = 0u; j < 4u; j++) {
          if (cq + j < n) {
            rb[j] = b[o + j];
          }
        }
{{- end}}
      }
    }
{{- else}}
    {{template "t128_ld4" (args "Dst" "rb" "Arr" "b" "Vec" $s.VecB "R" "col0 + lb_r" "Lim" "n" "K" (printf "%s + lb_k" $k) "LD" "params.ldb" "Base" "boff")}}
{{- end}}
{{- end}}
