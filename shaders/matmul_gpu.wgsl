// matmul_gpu.wgsl: the GPU family's tiled matmul, C = alpha·(A·B) +
// beta·bias then the fused epilogue, for aten.mm, bmm, addmm, matmul and
// linear with more rows than the GPU GEMV takes (prefill, CNN linears).
// Chosen by ops/linear_family.go ("gpu/tiled", "gpu/tiled-half") on GPU
// adapters, or with Config.Family = FamilyGPU.
//
// A is M×K row-major; B is {{if eq .B "kn"}}K×N (mm's mat2){{else if eq .B "nk"}}N×K (linear's weight, as
// exported){{else if eq .B "half"}}N×K packed halves (ops.HalfWeightSpec: row n is K8/2 u32 words){{else}}N×K
// quantized codes as exported (the weight-quantized linears: rows of
// params.q_row_bytes bytes, bound as u32 words; see qdec), dequantized as
// the tile is loaded{{end}}.
//
// Shape: a workgroup of 16×16 invocations computes a {{.BM}}×{{.BN}} tile of C,
// each invocation {{.TM}}×{{.TN}} outputs (rows ty·{{.TM}}.., columns
// tx·{{.TN}}..) in registers. K advances {{.BK}} at a time: the workgroup
// copies a {{.BM}}×{{.BK}} tile of A and a {{.BK}}×{{.BN}} tile of B into workgroup
// memory (each element loaded once per tile, neighbouring invocations
// loading neighbouring addresses), then every invocation runs {{.BK}} steps
// of {{mul .TM .TN}} FMAs from it, reading its rows and columns as vec4s. Elements
// past M, N and K load as 0, so any sizes work.
//
// Batches run along the grid's z as in matmul.wgsl (the same Params,
// ops.matmulParamsWords); K is split into chunks of at most
// ops.gpuTiledMaxTrips tiles, one dispatch each, only so that lavapipe
// (65535 loop back-edges per invocation) runs it correctly; later chunks
// add to C (accumulate) and the epilogue runs on the last.
@group(0) @binding(0) var<storage, read> a: array<f32>;
{{- if or (eq .B "half") (eq .B "q")}}
@group(0) @binding(1) var<storage, read> b: array<u32>;
{{- else}}
@group(0) @binding(1) var<storage, read> b: array<f32>;
{{- end}}
{{- if eq .B "q"}}
@group(0) @binding(2) var<storage, read> s: array<f32>;
{{- end}}
{{- if .Q.DQ8}}
// Dynamic int8 activations (et_vk.linear_dq8ca_q4gsw): row r's scale
// xs[r] and int8 zero point (byte r % 4 of xz[r / 4]). A's tile holds the
// codes clamp(round(x / xs) + xz, -128, 127) - xz, each quotient
// correctly rounded (dq8_qx_exact: A's elements are loaded once per tile,
// so the exact quantizer costs little), and each row's sums are scaled by
// xs[r] at the store.
{{- end}}
{{- template "linear_bindings" (args "K" . "DQ8" .Q.DQ8 "Out" "c")}}

// Go twin: matmulParams in ops/linear_cpu.go (matmul.wgsl's
// layout; k, k_begin and k_end count elements here, bdims and the batch
// strides are in elements{{if eq .B "half"}}, B's in u32 words{{end}}).
{{- template "matmul_params" (args "Q" true)}}
{{- template "linear_epilogue" (args "Act" .Act "Gate" .Gate "Res" .Res "T" "f32")}}
{{- if .Q.DQ8}}

{{template "dq8_qx"}}
{{- end}}
{{- if eq .B "q"}}

// qbyte returns the weight byte at byte offset o.
fn qbyte(o: u32) -> u32 {
  return (b[o >> 2u] >> ((o & 3u) * 8u)) & 255u;
}

// qdec returns weight element (n, k) dequantized: {{if .Q.Int8}}the int8 code{{else}}the 4-bit code u
// (two a byte, the even k in the {{if .Q.HighEven}}high{{else}}low{{end}} nibble) as u − 8{{end}}{{if .Q.Zeros}}, times
// its group's scale plus its zero (interleaved: s[2i], s[2i + 1]){{else if .Q.Grouped}}, times its group's
// scale{{else}}; the per-channel scale s[n] multiplies the sums at the
// store{{end}}.
fn qdec(n: u32, k: u32) -> f32 {
{{- if .Q.Int8}}
  let v = f32(bitcast<i32>(qbyte(n * params.q_row_bytes + k) << 24u) >> 24u);
{{- else}}
  let by = qbyte(n * params.q_row_bytes + k / 2u);
{{- if .Q.HighEven}}
  let v = f32((by >> select(0u, 4u, (k & 1u) == 0u)) & 15u) - 8.0;
{{- else}}
  let v = f32((by >> select(4u, 0u, (k & 1u) == 0u)) & 15u) - 8.0;
{{- end}}
{{- end}}
{{- if .Q.Zeros}}
  let gi = (k / params.q_g) * params.q_ld_s + n;
  return fma(v, s[gi * 2u], s[gi * 2u + 1u]);
{{- else if .Q.Grouped}}
  return v * s[(k / params.q_g) * params.q_ld_s + n];
{{- else}}
  return v;
{{- end}}
}
{{- end}}

// The tiles, k-major: at[kk·{{.AP}} + row], bt[kk·{{.BP}} + column], rows
// padded by one so that the transposing stores of neighbouring
// invocations hit different memory banks.
var<workgroup> at: array<f32, {{mul .BK .AP}}>;
var<workgroup> bt: array<f32, {{mul .BK .BP}}>;

{{template "tiled_main" .}}
{{- range $i := .RowsT}}{{range $j := $.ColsT}}
  var acc{{$i}}_{{$j}} = 0.0;
{{- end}}{{end}}
  for (var k0 = params.k_begin; k0 < params.k_end; k0 += {{.BK}}u) {
    // A's tile: element e = li + 256·i is row e / {{.BK}}, k e % {{.BK}}.
{{- range .LoadA}}
    {
      let e = li + {{.}}u;
      let r = row0 + e / {{$.BK}}u;
      let kq = k0 + e % {{$.BK}}u;
      var v = 0.0;
      if (r < m && kq < params.k_end) {
        v = a[aoff + r * kk + kq];
{{- if $.Q.DQ8}}
        let z = f32((bitcast<i32>(xz[r / 4u]) << (24u - 8u * (r % 4u))) >> 24u);
        v = dq8_qx_exact(vec4<f32>(v), xs[r], z).x;
{{- end}}
      }
      at[(e % {{$.BK}}u) * {{$.AP}}u + e / {{$.BK}}u] = v;
    }
{{- end}}
    // B's tile.
{{- range .LoadB}}
    {
      let e = li + {{.}}u;
{{- if eq $.B "kn"}}
      let kq = k0 + e / {{$.BN}}u;
      let cq = col0 + e % {{$.BN}}u;
      var v = 0.0;
      if (cq < n && kq < params.k_end) {
        v = b[boff + kq * params.ldb + cq];
      }
      bt[(e / {{$.BN}}u) * {{$.BP}}u + e % {{$.BN}}u] = v;
{{- else}}
      let cq = col0 + e / {{$.BK}}u;
      let kq = k0 + e % {{$.BK}}u;
      var v = 0.0;
      if (cq < n && kq < params.k_end) {
{{- if eq $.B "half"}}
        v = unpack2x16float(b[boff + cq * params.ldb + kq / 2u])[kq % 2u];
{{- else if eq $.B "q"}}
        v = qdec(cq, kq);
{{- else}}
        v = b[boff + cq * params.ldb + kq];
{{- end}}
      }
      bt[(e % {{$.BK}}u) * {{$.BP}}u + e / {{$.BK}}u] = v;
{{- end}}
    }
{{- end}}
    workgroupBarrier();
    for (var q = 0u; q < {{.BK}}u; q++) {
{{- range $i := .VecM}}
      let av{{$i}} = vec4<f32>(at[q * {{$.AP}}u + ty * {{$.TM}}u + {{mul $i 4}}u], at[q * {{$.AP}}u + ty * {{$.TM}}u + {{add (mul $i 4) 1}}u],
        at[q * {{$.AP}}u + ty * {{$.TM}}u + {{add (mul $i 4) 2}}u], at[q * {{$.AP}}u + ty * {{$.TM}}u + {{add (mul $i 4) 3}}u]);
{{- end}}
{{- range $j := .VecN}}
      let bv{{$j}} = vec4<f32>(bt[q * {{$.BP}}u + tx * {{$.TN}}u + {{mul $j 4}}u], bt[q * {{$.BP}}u + tx * {{$.TN}}u + {{add (mul $j 4) 1}}u],
        bt[q * {{$.BP}}u + tx * {{$.TN}}u + {{add (mul $j 4) 2}}u], bt[q * {{$.BP}}u + tx * {{$.TN}}u + {{add (mul $j 4) 3}}u]);
{{- end}}
{{- range $i := .RowsT}}{{range $j := $.ColsT}}
      acc{{$i}}_{{$j}} = fma(av{{div $i 4}}[{{mod $i 4}}], bv{{div $j 4}}[{{mod $j 4}}], acc{{$i}}_{{$j}});
{{- end}}{{end}}
    }
    workgroupBarrier();
  }
  let coff = batch * m * n;
{{- range $i := .RowsT}}
  {
    let r = row0 + ty * {{$.TM}}u + {{$i}}u;
{{- range $j := $.ColsT}}
    {
      let cq = col0 + tx * {{$.TN}}u + {{$j}}u;
      if (r < m && cq < n) {
        let o = coff + r * n + cq;
{{- $v := printf "params.alpha * acc%d_%d" $i $j}}{{if $.Q.DQ8}}{{$v = printf "%s * xs[r]" $v}}{{end}}{{if and (eq $.B "q") (not $.Q.Grouped)}}{{$v = printf "%s * s[cq]" $v}}{{end}}
        {{template "linear_store" (args "Out" "c" "O" "o" "V" $v "Base" (and $.Bias "params.beta * bias[r * params.bias_sm + cq * params.bias_sn]") "Chunked" true "Epi" (or $.Act $.Res))}}
      }
    }
{{- end}}
  }
{{- end}}
}
