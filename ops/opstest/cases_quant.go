package opstest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Weight-quantized linears and embeddings, with their constants written
// the way the ExecuTorch Vulkan exporter writes them
// (patterns/weight_packing_utils.py, _passes/fuse_quantized_ops.py):
// packed weights and scales are named constants passed to the op directly.

// randQ returns rows×cols random signed ints in [lo, hi].
func randQ(r *rand.Rand, rows, cols int64, lo, hi int) []int {
	q := make([]int, rows*cols)
	for i := range q {
		q[i] = lo + r.IntN(hi-lo+1)
	}
	return q
}

// packInt4 packs q (rows×cols values in [-8, 7]) as code = q+8, two codes
// per byte, each row zero-padded (value 0, code 8) to a multiple of pad
// elements; the even element goes in the low nibble unless highEven.
func packInt4(q []int, rows, cols, pad int64, highEven bool) (packed []byte, rowBytes int64) {
	cp := (cols + pad - 1) / pad * pad
	rowBytes = cp / 2
	packed = make([]byte, rows*rowBytes)
	for i := int64(0); i < rows; i++ {
		for j := int64(0); j < cp; j += 2 {
			c0, c1 := byte(8), byte(8)
			if j < cols {
				c0 = byte(q[i*cols+j] + 8)
			}
			if j+1 < cols {
				c1 = byte(q[i*cols+j+1] + 8)
			}
			if highEven {
				packed[i*rowBytes+j/2] = c0<<4 | c1
			} else {
				packed[i*rowBytes+j/2] = c1<<4 | c0
			}
		}
	}
	return packed, rowBytes
}

// randScales returns n float32 scales in [0.01, 0.1).
func randScales(r *rand.Rand, n int64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(float32(0.01 + 0.09*r.Float64()))
	}
	return s
}

// f32Bytes encodes vs as little-endian float32.
func f32Bytes(vs []float64) []byte {
	t := &reference.Tensor{DType: serialization.Float32, Shape: []int64{int64(len(vs))}, V: vs}
	return t.Encode()
}

// quantTol bounds the float32 rounding of a K-term dot product of
// activations in [-1, 1) and weights |q·s| ≤ 0.8.
func quantTol(k int64) Tolerance {
	return Tolerance{Abs: 1e-6 * math.Sqrt(float64(max(k, 1))) * 4, Rel: 1e-5}
}

// q4gswCase is et_vk.linear_q4gsw on input shape in with N outputs and
// group size g. out2D serializes a 3-D input's output as [M, N].
func q4gswCase(in []int64, n, g int64, bias, out2D bool) Case {
	k := in[len(in)-1]
	m := numel(in[:len(in)-1])
	outShape := append(append([]int64(nil), in[:len(in)-1]...), n)
	if out2D {
		outShape = []int64{m, n}
	}
	name := fmt.Sprintf("linear_q4gsw/%s_N%d_g%d/%s", shapeName(in), n, g, map[bool]string{true: "bias", false: "nobias"}[bias])
	if out2D {
		name += "/out2d"
	}
	return Case{
		Name: name,
		Tol:  quantTol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, in, -1, 1)
			x, ins := graphInput(b, xv)
			w, s, bv := q4gswWeights(b, r, n, k, g, bias)
			out := b.Tensor(f, Dims(outShape), -1)
			b.Op("et_vk.linear_q4gsw.default", x, w, s, b.Int(g), bv, out)
			b.Outputs(out)
			return ins
		},
	}
}

// q4gswUnpaddedCase is a one-row linear_q4gsw whose scale rows are N
// wide (not padded to a multiple of 4): the one-row kernel then reads
// them one by one instead of as vec4s.
func q4gswUnpaddedCase(k, n, g int64) Case {
	return Case{
		Name: fmt.Sprintf("linear_q4gsw/1x%d_N%d_g%d/scales_unpadded", k, n, g),
		Tol:  quantTol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, []int64{1, k}, -1, 1)
			x := b.Tensor(f, []uint32{1, uint32(k)}, -1)
			b.Inputs(x)
			w, s, bv := q4gswWeightsLd(b, r, n, k, g, true, n)
			out := b.Tensor(f, []uint32{1, uint32(n)}, -1)
			b.Op("et_vk.linear_q4gsw.default", x, w, s, b.Int(g), bv, out)
			b.Outputs(out)
			return []*reference.Tensor{xv}
		},
	}
}

// q4gswWeights adds linear_q4gsw's constants for an [n, k] weight in
// groups of g as named data: the packed codes, the scales (ceil(k/g)
// groups) and, with bias, a bias; bv is Null without.
func q4gswWeights(b *serialization.Builder, r *rand.Rand, n, k, g int64, bias bool) (w, s, bv int32) {
	return q4gswWeightsLd(b, r, n, k, g, bias, (n+3)/4*4)
}

// q4gswWeightsLd is q4gswWeights with scale rows of np4 >= n columns.
func q4gswWeightsLd(b *serialization.Builder, r *rand.Rand, n, k, g int64, bias bool, np4 int64) (w, s, bv int32) {
	f := serialization.Float32
	q := randQ(r, n, k, -8, 7)
	packed, rb := packInt4(q, n, k, 8, false)
	w, _ = b.NamedConst(serialization.Uint8, []uint32{uint32(n), uint32(rb)}, packed)
	groups := (k + g - 1) / g
	// torchao's scales are [N, G]; the exporter stores them transposed
	// to [G, N], zero-padded to a multiple of 4 columns.
	sv := randScales(r, n*groups)
	st := make([]float64, groups*np4)
	for j := int64(0); j < n; j++ {
		for gi := int64(0); gi < groups; gi++ {
			st[gi*np4+j] = sv[j*groups+gi]
		}
	}
	s, _ = b.NamedConst(f, []uint32{uint32(groups), uint32(np4)}, f32Bytes(st))
	bv = b.Null()
	if bias {
		bb := make([]float64, np4)
		copy(bb, RandTensor(r, f, []int64{n}, -1, 1).V)
		bv, _ = b.NamedConst(f, []uint32{uint32(np4)}, f32Bytes(bb))
	}
	return w, s, bv
}

func init() {
	Cases = append(Cases,
		// The one-row kernel (qgemv.wgsl: M = 1, K and g multiples of 32):
		// N not a multiple of its 32 columns, N over three workgroups of
		// 256 columns (the last one partial), K not a multiple of g (a
		// partial last group), a 3-D input, groups split over two
		// dispatches (8193 groups of 32).
		q4gswCase([]int64{1, 64}, 13, 32, true, false),
		q4gswCase([]int64{1, 96}, 517, 32, true, false),
		q4gswUnpaddedCase(64, 301, 32),
		q4gswUnpaddedCase(128, 13, 64),
		q4gswCase([]int64{1, 160}, 9, 64, false, false),
		q4gswCase([]int64{1, 1, 384}, 17, 128, true, false),
		q4gswCase([]int64{1, 262176}, 3, 32, false, false),
		// GEMV-like path (M ≤ 16: one row block), group sizes 32/64/128.
		q4gswCase([]int64{1, 128}, 12, 32, true, false),
		q4gswCase([]int64{3, 128}, 10, 64, false, false),
		q4gswCase([]int64{16, 256}, 9, 128, true, false),
		// K not a multiple of 8 (exporter pads to 8): one group of 36, and
		// groups of 12 (a step of 8 k spans two groups).
		q4gswCase([]int64{5, 36}, 7, 36, true, false),
		q4gswCase([]int64{2, 36}, 8, 12, false, false),
		q4gswCase([]int64{6, 36}, 11, 12, true, false),
		// Tiled path (M > 16), odd M and N.
		q4gswCase([]int64{33, 64}, 13, 32, true, false),
		q4gswCase([]int64{17, 192}, 6, 64, true, false),
		// K over one dispatch's 16384 steps of 8: two chunks.
		q4gswCase([]int64{1, 131104}, 3, 32, true, false),
		// 3-D input, 3-D and 2-D outputs.
		q4gswCase([]int64{2, 3, 64}, 5, 32, true, false),
		q4gswCase([]int64{1, 20, 128}, 8, 128, false, true),
	)
}

// perChannelCase is et_vk.linear_qcs4w (int8 false: 4-bit codes, even k in
// the high nibble, K padded only to even) or aten._weight_int8pack_mm
// (i8: the PT2E int8 weights as they are), scales [N], followed by the
// exporter's separate aten.add.Tensor of a prepacked bias when bias is set.
func perChannelCase(in []int64, n int64, i8, bias bool) Case {
	k := in[len(in)-1]
	op := "linear_qcs4w"
	if i8 {
		op = "_weight_int8pack_mm"
	}
	name := fmt.Sprintf("%s/%s_N%d/%s", op, shapeName(in), n, map[bool]string{true: "bias", false: "nobias"}[bias])
	return Case{
		Name: name,
		Tol:  quantTol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, in, -1, 1)
			x, ins := graphInput(b, xv)
			var w int32
			if i8 {
				q := randQ(r, n, k, -128, 127)
				data := make([]byte, len(q))
				for i, v := range q {
					data[i] = byte(int8(v))
				}
				w, _ = b.NamedConst(serialization.Int8, []uint32{uint32(n), uint32(k)}, data)
			} else {
				packed, rb := packInt4(randQ(r, n, k, -8, 7), n, k, 2, true)
				w, _ = b.NamedConst(serialization.Uint8, []uint32{uint32(n), uint32(rb)}, packed)
			}
			sv := randScales(r, n)
			if i8 {
				for i := range sv {
					sv[i] = float64(float32(sv[i] / 16))
				}
			}
			s, _ := b.NamedConst(f, []uint32{uint32(n)}, f32Bytes(sv))
			outShape := append(append([]int64(nil), in[:len(in)-1]...), n)
			out := b.Tensor(f, Dims(outShape), -1)
			opName := "et_vk.linear_qcs4w.default"
			if i8 {
				opName = "aten._weight_int8pack_mm.default"
			}
			if !bias {
				b.Op(opName, x, w, s, out)
				b.Outputs(out)
				return ins
			}
			mm := b.Tensor(f, Dims(outShape), -1)
			b.Op(opName, x, w, s, mm)
			bc, _ := b.NamedConst(f, []uint32{uint32(n)}, RandTensor(r, f, []int64{n}, -1, 1).Encode())
			bp := b.Tensor(f, []uint32{uint32(n)}, -1)
			b.Op("et_vk.prepack.default", bc, bp)
			b.Op("aten.add.Tensor", mm, bp, b.Int(1), out)
			b.Outputs(out)
			return ins
		},
	}
}

func init() {
	Cases = append(Cases,
		perChannelCase([]int64{1, 64}, 12, false, false),
		perChannelCase([]int64{3, 36}, 7, false, true), // row bytes 18: unaligned rows
		perChannelCase([]int64{2, 3, 20}, 5, false, false),
		perChannelCase([]int64{19, 40}, 9, false, true),
		perChannelCase([]int64{1, 36}, 10, true, true),
		perChannelCase([]int64{5, 64}, 7, true, false),
		perChannelCase([]int64{2, 9, 12}, 6, true, false),
	)
}

// embeddingQ4gswCase is et_vk.embedding_q4gsw on a [v, d] table with group
// size g (g == d: 1-D scales [V], as export_llama squeezes one group per
// row), indices of shape ix, the weight packed the linear way (even d in
// the low nibble) when linear and the embedding_4bit way otherwise.
// intFlag passes is_linear_weight as an Int.
func embeddingQ4gswCase(v, d, g int64, ix []int64, linear, intFlag bool) Case {
	name := fmt.Sprintf("embedding_q4gsw/V%d_D%d_g%d/%s/linear=%v", v, d, g, shapeName(ix), linear)
	if intFlag {
		name += "/int_flag"
	}
	return Case{
		Name: name,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			packed, rb := packInt4(randQ(r, v, d, -8, 7), v, d, 8, !linear)
			w, _ := b.NamedConst(serialization.Uint8, []uint32{uint32(v), uint32(rb)}, packed)
			groups := d / g
			sdims := []uint32{uint32(v), uint32(groups)}
			if groups == 1 {
				sdims = []uint32{uint32(v)}
			}
			s, _ := b.NamedConst(f, sdims, f32Bytes(randScales(r, v*groups)))
			iv := RandTensor(r, serialization.Int32, ix, 0, float64(v))
			idx := b.Tensor(serialization.Int32, Dims(ix), -1)
			b.Inputs(idx)
			flag := b.Bool(linear)
			if intFlag {
				flag = b.Int(map[bool]int64{true: 1, false: 0}[linear])
			}
			out := b.Tensor(f, Dims(append(append([]int64(nil), ix...), d)), -1)
			b.Op("et_vk.embedding_q4gsw.default", w, s, b.Int(g), idx, flag, out)
			b.Outputs(out)
			return []*reference.Tensor{iv}
		},
	}
}

func init() {
	Cases = append(Cases,
		embeddingQ4gswCase(50, 64, 32, []int64{7}, true, false),
		embeddingQ4gswCase(33, 128, 64, []int64{2, 5}, false, false),
		embeddingQ4gswCase(20, 128, 128, []int64{3}, true, true),
		embeddingQ4gswCase(17, 96, 96, []int64{4, 3}, false, false),
		embeddingQ4gswCase(9, 256, 32, []int64{1, 1}, false, true),
	)
}

// dq8caCase is the 8da4w pair: torchao.choose_qparams_affine (nargs 10, 11
// or 14, the torchao versions' arg lists) on x, then
// et_vk.linear_dq8ca_q4gsw of x with those qparams. The qparams are graph
// outputs too, so the int8 zero points are compared exactly.
func dq8caCase(in []int64, n, g int64, bias bool, nargs int) Case {
	k := in[len(in)-1]
	lead := in[:len(in)-1]
	name := fmt.Sprintf("linear_dq8ca_q4gsw/%s_N%d_g%d/%s/qparams%d", shapeName(in), n, g, map[bool]string{true: "bias", false: "nobias"}[bias], nargs)
	return Case{
		Name: name,
		Tol:  Tolerance{Abs: quantTol(k).Abs * 4, Rel: 1e-5},
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, in, -1, 1)
			// Rows of one sign and a tiny row exercise the range rules.
			xv.V[0] = 0.75
			if len(xv.V) > 2*int(k) {
				for j := 0; j < int(k); j++ {
					xv.V[int(k)+j] = -math.Abs(xv.V[int(k)+j])
				}
			}
			x := b.Tensor(f, Dims(in), -1)
			b.Inputs(x)
			scale := b.Tensor(f, Dims(lead), -1)
			zp := b.Tensor(serialization.Int8, Dims(lead), -1)
			bsz := make([]int64, len(in))
			for i := range bsz {
				bsz[i] = 1
			}
			bsz[len(in)-1] = k
			qa := []int32{x, b.String("ASYMMETRIC"), b.IntList(bsz...), b.Null(), b.Int(-128), b.Int(127), b.Null(), b.Null(), b.Null()}
			switch nargs {
			case 11:
				qa = append(qa, b.Bool(false))
			case 14:
				qa = append(qa, b.Bool(true), b.Null(), b.Null(), b.Null())
			}
			b.Op("torchao.choose_qparams_affine.default", append(qa, b.ValueList(scale, zp))...)

			w, ws, s, bv := dq8caWeights(b, r, n, k, g, bias)
			out := b.Tensor(f, Dims(append(append([]int64(nil), lead...), n)), -1)
			b.Op("et_vk.linear_dq8ca_q4gsw.default", x, scale, zp, w, ws, s, b.Int(g), bv, out)
			b.Outputs(out, scale, zp)
			return []*reference.Tensor{xv}
		},
	}
}

// dq8caWeights adds linear_dq8ca_q4gsw's constants for an [n, k] weight
// in groups of g (k % g == 0) as named data: the packed codes, the weight
// sums, the scales and, with bias, a bias; bv is Null without.
func dq8caWeights(b *serialization.Builder, r *rand.Rand, n, k, g int64, bias bool) (w, ws, s, bv int32) {
	f := serialization.Float32
	q := randQ(r, n, k, -8, 7)
	packed, rb := packInt4(q, n, k, 8, false)
	w, _ = b.NamedConst(serialization.Uint8, []uint32{uint32(n), uint32(rb)}, packed)
	groups, np4, np8 := k/g, (n+3)/4*4, (n+7)/8*8
	sums := &reference.Tensor{DType: serialization.Int32, Shape: []int64{groups, np8}, V: make([]float64, groups*np8)}
	for j := int64(0); j < n; j++ {
		for p := int64(0); p < k; p++ {
			sums.V[(p/g)*np8+j] += float64(q[j*k+p])
		}
	}
	ws, _ = b.NamedConst(serialization.Int32, []uint32{uint32(groups), uint32(np8)}, sums.Encode())
	sv := randScales(r, groups*np4)
	s, _ = b.NamedConst(f, []uint32{uint32(groups), uint32(np4)}, f32Bytes(sv))
	bv = b.Null()
	if bias {
		bb := make([]float64, np4)
		copy(bb, RandTensor(r, f, []int64{n}, -1, 1).V)
		bv, _ = b.NamedConst(f, []uint32{uint32(np4)}, f32Bytes(bb))
	}
	return w, ws, s, bv
}

func init() {
	Cases = append(Cases,
		// One row on the one-row kernel (qgemv.wgsl), N past its 16 columns.
		dq8caCase([]int64{1, 256}, 37, 64, false, 11),
		dq8caCase([]int64{1, 64}, 301, 32, true, 11), // one-row kernel, two workgroups
		dq8caCase([]int64{1, 1, 96}, 9, 96, true, 10),
		dq8caCase([]int64{1, 128}, 12, 32, true, 11),
		dq8caCase([]int64{3, 64}, 9, 64, false, 10),
		dq8caCase([]int64{1, 5, 128}, 8, 128, true, 14),
		dq8caCase([]int64{19, 64}, 7, 32, true, 11),
	)
}

// weightInt4Case is the historical et_vk.linear_weight_int4 (-qmode
// vulkan_4w, 2024-10 … 2025-09): torchao uint4 codes with a float zero
// per group, even k in the high nibble, qScaleAndZeros [K/g, N, 2].
func weightInt4Case(in []int64, n, g int64) Case {
	k := in[len(in)-1]
	return Case{
		Name: fmt.Sprintf("linear_weight_int4/%s_N%d_g%d", shapeName(in), n, g),
		Tol:  quantTol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, in, -1, 1)
			x, ins := graphInput(b, xv)
			packed, rb := packInt4(randQ(r, n, k, -8, 7), n, k, 2, true)
			w, _ := b.NamedConst(serialization.Uint8, []uint32{uint32(n), uint32(rb)}, packed)
			sz := make([]float64, (k/g)*n*2)
			for i := range sz {
				if i%2 == 0 {
					sz[i] = float64(float32(0.01 + 0.09*r.Float64()))
				} else {
					sz[i] = float64(float32(0.2 * (r.Float64() - 0.5)))
				}
			}
			s, _ := b.NamedConst(f, []uint32{uint32(k / g), uint32(n), 2}, f32Bytes(sz))
			out := b.Tensor(f, Dims(append(append([]int64(nil), in[:len(in)-1]...), n)), -1)
			b.Op("et_vk.linear_weight_int4.default", x, w, b.Int(g), s, b.Int(8), out)
			b.Outputs(out)
			return ins
		},
	}
}

func init() {
	Cases = append(Cases,
		weightInt4Case([]int64{1, 128}, 12, 32),
		weightInt4Case([]int64{2, 3, 64}, 7, 64),
		weightInt4Case([]int64{21, 256}, 9, 256),
	)
}

// A dynamic token dim: x [1, S, 64] serialized with S = 24 and fed with S
// in 1..24, so re-recordings move between the one-block (S ≤ 16) and the
// tiled kernels; linear_q4gsw and the choose_qparams → linear_dq8ca_q4gsw
// pair read the same x. Constants are inline: TestDynamicReexecute loads
// the graph without named data.
func init() {
	Cases = append(Cases, Case{
		Name: "dynamic/quant_linears",
		Tol:  Tolerance{Abs: quantTol(64).Abs * 4, Rel: 1e-5},
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			const s, k, n, g = 24, 64, 12, 32
			x := b.Tensor(f, []uint32{1, s, k}, -1)
			b.Inputs(x)
			packed, rb := packInt4(randQ(r, n, k, -8, 7), n, k, 8, false)
			w := b.InlineConst(serialization.Uint8, []uint32{n, uint32(rb)}, packed)
			sc := b.InlineConst(f, []uint32{k / g, n}, f32Bytes(randScales(r, k/g*n)))
			bias := b.InlineConst(f, []uint32{n}, RandTensor(r, f, []int64{n}, -1, 1).Encode())
			y := b.Tensor(f, []uint32{1, s, n}, -1)
			b.Op("et_vk.linear_q4gsw.default", x, w, sc, b.Int(g), bias, y)
			xs := b.Tensor(f, []uint32{1, s}, -1)
			xz := b.Tensor(serialization.Int8, []uint32{1, s}, -1)
			b.Op("torchao.choose_qparams_affine.default", x, b.String("ASYMMETRIC"), b.IntList(1, 1, k), b.Null(),
				b.Int(-128), b.Int(127), b.Null(), b.Null(), b.Null(), b.Bool(false), b.ValueList(xs, xz))
			ws := b.InlineConst(serialization.Int32, []uint32{k / g, 16}, make([]byte, 4*k/g*16))
			yq := b.Tensor(f, []uint32{1, s, n}, -1)
			b.Op("et_vk.linear_dq8ca_q4gsw.default", x, xs, xz, w, ws, sc, b.Int(g), b.Null(), yq)
			b.Outputs(y, yq)
			live := 1 + r.Int64N(s)
			return []*reference.Tensor{RandTensor(r, f, []int64{1, live, k}, -1, 1)}
		},
	})
}
