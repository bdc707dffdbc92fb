package opstest

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"

	"github.com/wgdelegate/wgdelegate/internal/fp16"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// FP16Tolerance is the tolerance of a FLOAT16 graph's float outputs: the
// device computes fp16 graphs in float32 (graph.DeviceDType) while the
// reference rounds every FLOAT16 op output to half (reference.Round), so
// they differ by the half roundings the reference makes, a few 2^-11
// relative each: 1e-2 relative, as issue 17 asks, plus a small absolute
// term for results that cancel to near zero.
var FP16Tolerance = Tolerance{Abs: 2e-3, Rel: 1e-2}

func init() { DefaultTolerance[serialization.Float16] = FP16Tolerance }

// ForceFP16 returns c rewritten as the Vulkan exporter's force_fp16 option
// writes graphs (package internal/fp16): every float32 tensor FLOAT16,
// constants converted to halves, non-constant tensors staged as staging.
// With float32 staging the host feeds and receives float32 (the inputs are
// c's own); with float16 staging it feeds and receives halves (c's float32
// inputs to FLOAT16 tensors are rounded and passed as float16). The
// tolerance is the looser of c's and FP16Tolerance, per component.
func ForceFP16(c Case, staging serialization.DataType) Case {
	tol := FP16Tolerance
	tol.Abs, tol.Rel = max(tol.Abs, c.Tol.Abs), max(tol.Rel, c.Tol.Rel)
	return Case{
		Name: fmt.Sprintf("fp16/staging_%v/%s", staging, c.Name),
		Tol:  tol,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			src := serialization.NewBuilder()
			ins := c.Build(src, r)
			if err := fp16.Rewrite(b, src, staging); err != nil {
				panic(fmt.Sprintf("opstest: rewriting %s for fp16: %v", c.Name, err))
			}
			if staging != serialization.Float16 {
				return ins
			}
			g := b.Graph()
			for i, id := range g.InputIDs {
				t := g.Values[id].Tensor
				if t == nil || t.DataType != serialization.Float16 || ins[i].DType == serialization.Float16 {
					continue
				}
				h := reference.New(serialization.Float16, ins[i].Shape)
				for k, v := range ins[i].V {
					h.V[k] = reference.Round(serialization.Float16, v)
				}
				ins[i] = h
			}
			return ins
		},
	}
}

// fp16Families picks, per op family, the existing float32 cases that run
// again as force_fp16 graphs: elementwise unary and binary, linear and
// matmul (weights as inputs, named constants and prepacked), convolution,
// softmax, the norms, rope, sdpa with and without a KV cache, the
// quantized linears and embedding (float16 scales), reductions, data
// movement and a fused chain. Each pattern takes the first max matches of
// every op it matches (the op being the case name's first segment; the
// cases of an op are ordered small to large). Cases whose values
// leave the half range on purpose (specials, 1e-30 fills, huge K) are not
// picked.
var fp16Families = []struct {
	pattern string
	max     int
	tol     Tolerance // when set, instead of ForceFP16's
}{
	{pattern: `^(exp|sigmoid|tanh|abs|relu|sqrt|rsqrt|hardswish|sin|neg)\.default/float32`, max: 1},
	{pattern: `^gelu\.default/.*float32`, max: 2},
	{pattern: `^(add|sub|mul|div)/float32_float32_float32/(1\+1|2x3x7\+2x3x7|6x8\+6x1|3x5\+5|4x1x5\+3x1|7\+7)$`, max: 3},
	{pattern: `^add_scalar/float32_float32/2x1x3x1x5x2`, max: 1},
	{pattern: `^linear/.*/(named|prepack|input)/(bias|nobias)/(gemv|vec4|scalar)$`, max: 8},
	// Two linears (K 64, then 128) through a rounded hidden layer: the
	// reference's half rounding of 128 hidden values reaches 5e-3 absolute
	// on outputs of ~0.3.
	{pattern: `^linear/mlp/`, max: 1, tol: Tolerance{Abs: 1e-2, Rel: 1e-2}},
	{pattern: `^(mm|bmm|addmm|matmul)/`, max: 2},
	{pattern: `^conv/conv2d/1x2x13x13`, max: 1},
	{pattern: `^conv/conv2d/1x8x11x11`, max: 1},
	{pattern: `^conv/conv1d/1x7x19`, max: 1},
	{pattern: `^conv/conv_transpose2d/2x4x6x5`, max: 1},
	{pattern: `^(softmax|log_softmax)/`, max: 2},
	{pattern: `^(layer_norm|rms_norm|group_norm|batch_norm)/`, max: 2},
	{pattern: `^(rope|rope_hf|rope_interleaved)/`, max: 2},
	{pattern: `^(sdpa|et_vk\.sdpa)/`, max: 2},
	{pattern: `^sdpa_with_kv_cache/`, max: 2},
	{pattern: `^custom_sdpa/`, max: 2},
	{pattern: `^(linear_q4gsw|linear_qcs4w|_weight_int8pack_mm|embedding_q4gsw)/`, max: 2},
	// choose_qparams' scale is a FLOAT16 tensor: the reference rounds it
	// to half, the device keeps float32, so an activation element can
	// quantize one int8 step apart (6e-3 on outputs of ~0.2).
	{pattern: `^linear_dq8ca_q4gsw/`, max: 2, tol: Tolerance{Abs: 1e-2, Rel: 1e-2}},
	// Static int8 (PT2E) ops in a force_fp16 graph: float16 scales, biases
	// and float inputs/outputs around int8 tensors.
	{pattern: `^(quantize_per_tensor|dequantize_per_tensor|q8ta_add|q8ta_relu|linear_q8ta_q8csw|q8ta_linear|q8ta_linear_gemv|q8ta_conv2d|q8ta_conv2d_pw|q8ta_conv2d_dw)/`, max: 1},
	{pattern: `^(mean|sum)/float32/`, max: 2},
	{pattern: `^(permute|cat|index_select|embedding|where)/float32`, max: 2},
	{pattern: `^pool/max/2x3x12x11`, max: 1},
	// Not fuse/unary_chain_vec4: its exp overflows the half range in the
	// reference (Inf, then NaN) where float32 does not.
	{pattern: `^fuse/(two_consumers|rank6_broadcast)$`, max: 2},
}

// FP16Cases returns the force_fp16 conformance cases: the picked float32
// cases (fp16Families) under float32 staging, a third of them again under
// float16 staging, and the cases written for fp16 (fp16OwnCases).
func FP16Cases() []Case {
	var out []Case
	n := 0
	for _, f := range fp16Families {
		re := regexp.MustCompile(f.pattern)
		k := map[string]int{}
		for _, c := range Cases {
			op, _, _ := strings.Cut(c.Name, "/")
			if k[op] == f.max || !re.MatchString(c.Name) {
				continue
			}
			k[op]++
			for _, st := range []serialization.DataType{serialization.Float32, serialization.Float16} {
				if st == serialization.Float16 && n%3 != 0 {
					continue
				}
				fc := ForceFP16(c, st)
				if f.tol != (Tolerance{}) {
					fc.Tol = f.tol
				}
				out = append(out, fc)
			}
			n++
		}
	}
	out = append(out, fp16OwnCases()...)
	return append(out, halfGEMVCases()...)
}

// halfGEMVCases are linears whose FLOAT16 weight the GEMV path reads as
// packed halves (ops/linear_f16.go): K a multiple of 8 (8 to past one
// dispatch's K chunk), one to 16 rows, N odd and even, with and without
// bias, the weight named, inline or prepacked, an activation epilogue
// fused, and both stagings; and prefill-sized ones of 8 to 40 rows (16
// columns an invocation). Cases whose K is not a multiple of 8 (above)
// keep the float32 path.
func halfGEMVCases() []Case {
	var cs []Case
	for i, c := range []struct {
		in   []int64
		n    int64
		bias bool
	}{
		{[]int64{1, 8}, 1, false},
		{[]int64{1, 64}, 33, true},
		{[]int64{3, 24}, 7, true},
		{[]int64{16, 64}, 5, false},
		{[]int64{2, 3, 40}, 9, true},
		{[]int64{1, 1024}, 129, true},
		{[]int64{1, 131080}, 3, true}, // 16385 trips: two K chunks
		{[]int64{40, 64}, 9, true},
		{[]int64{8, 72}, 17, false},
		{[]int64{1, 33, 16}, 40, true},
	} {
		src := []weightSrc{weightNamed, weightPrepack, weightInline}[i%3]
		st := []serialization.DataType{serialization.Float32, serialization.Float16}[i%2]
		fc := ForceFP16(linearCase(c.in, c.n, c.bias, src), st)
		fc.Name = "fp16/half_gemv/" + fc.Name[len("fp16/"):]
		cs = append(cs, fc)
	}
	for i, act := range []string{"relu", "gelu"} {
		fc := ForceFP16(epilogueCase("linear", 1, 64, 37, []weightSrc{weightNamed, weightPrepack}[i], act, epiFused, false), serialization.Float32)
		fc.Name = "fp16/half_gemv/" + fc.Name[len("fp16/"):]
		cs = append(cs, fc)
	}
	return cs
}

// halfConst adds a FLOAT16 named constant holding t's values as halves.
func halfConst(b *serialization.Builder, t *reference.Tensor) int32 {
	h := &reference.Tensor{DType: serialization.Float16, Shape: t.Shape, V: t.V}
	id, _ := b.NamedConst(serialization.Float16, Dims(t.Shape), h.Encode())
	return id
}

// fp16OwnCases are the fp16 cases no float32 case becomes: the dtype
// conversions to and from half, softmax's half_to_float, fills and arange
// into a half tensor, a mixed graph (a float32 input added to an fp16
// one), and an fp16 output staged as float16 next to one staged as
// float32.
func fp16OwnCases() []Case {
	f, h := serialization.Float32, serialization.Float16
	toCopy := func(b *serialization.Builder, x, y int32) {
		b.Op("aten._to_copy.default", x, b.Null(), b.Null(), b.Null(), b.Bool(false), b.Bool(false), b.Null(), y)
	}
	shape := []int64{3, 37}
	var cs []Case
	for _, st := range []serialization.DataType{f, h} {
		cs = append(cs,
			Case{Name: fmt.Sprintf("fp16/own/to_copy_float32_to_half/staging_%v", st), Tol: FP16Tolerance,
				Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
					x := b.Tensor(f, Dims(shape), -1)
					y := b.Tensor(h, Dims(shape), -1)
					b.SetStaging(y, st)
					toCopy(b, x, y)
					b.Inputs(x)
					b.Outputs(y)
					return []*reference.Tensor{RandTensor(r, f, shape, -300, 300)}
				}},
			Case{Name: fmt.Sprintf("fp16/own/to_copy_half_to_float32_and_int32/staging_%v", st), Tol: FP16Tolerance,
				Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
					x := b.Tensor(h, Dims(shape), -1)
					b.SetStaging(x, st)
					y := b.Tensor(f, Dims(shape), -1)
					z := b.Tensor(serialization.Int32, Dims(shape), -1)
					toCopy(b, x, y)
					toCopy(b, x, z)
					b.Inputs(x)
					b.Outputs(y, z)
					in := RandTensor(r, st, shape, -1000, 1000)
					return []*reference.Tensor{in}
				}},
			Case{Name: fmt.Sprintf("fp16/own/softmax_half_to_float/staging_%v", st), Tol: FP16Tolerance,
				Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
					x := b.Tensor(h, Dims(shape), -1)
					b.SetStaging(x, st)
					y := b.Tensor(f, Dims(shape), -1)
					b.Op("aten._softmax.default", x, b.Int(-1), b.Bool(true), y)
					b.Inputs(x)
					b.Outputs(y)
					return []*reference.Tensor{RandTensor(r, st, shape, -4, 4)}
				}},
		)
	}
	cs = append(cs,
		Case{Name: "fp16/own/full_arange_zeros_into_half", Tol: FP16Tolerance,
			Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
				x := b.Tensor(h, []uint32{5}, -1)
				b.SetStaging(x, f)
				full := b.Tensor(h, []uint32{2, 3}, -1)
				b.SetStaging(full, f)
				b.Op("aten.full.default", b.IntList(2, 3), b.Double(1.0/3), b.Null(), b.Null(), b.Null(), b.Null(), full)
				ar := b.Tensor(h, []uint32{11}, -1)
				b.SetStaging(ar, f)
				b.Op("aten.arange.start_step", b.Double(-2), b.Double(3.3), b.Double(0.5), b.Null(), b.Null(), b.Null(), b.Null(), ar)
				z := b.Tensor(h, []uint32{5}, -1)
				b.Op("aten.zeros_like.default", x, b.Null(), b.Null(), b.Null(), b.Null(), b.Null(), z)
				b.Inputs(x)
				b.Outputs(full, ar, z)
				return []*reference.Tensor{RandTensor(r, f, []int64{5}, -1, 1)}
			}},
		Case{Name: "fp16/own/mixed_float32_and_half_constants", Tol: FP16Tolerance,
			Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
				// y = x16 * w16 (fp16 constant) + x32 (float32 input),
				// through an fp16 intermediate: the binary ops see float32
				// on both sides.
				x16 := b.Tensor(h, Dims(shape), -1)
				b.SetStaging(x16, f)
				x32 := b.Tensor(f, Dims(shape), -1)
				w := halfConst(b, RandTensor(r, f, shape, -2, 2))
				t := b.Tensor(h, Dims(shape), 0)
				b.SetStaging(t, f)
				y := b.Tensor(f, Dims(shape), -1)
				b.Op("aten.mul.Tensor", x16, w, t)
				b.Op("aten.add.Tensor", t, x32, b.Int(1), y)
				b.Inputs(x16, x32)
				b.Outputs(y)
				return []*reference.Tensor{RandTensor(r, f, shape, -3, 3), RandTensor(r, f, shape, -3, 3)}
			}},
		Case{Name: "fp16/own/outputs_staged_half_and_float32", Tol: FP16Tolerance,
			Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
				x := b.Tensor(h, Dims(shape), -1)
				b.SetStaging(x, h)
				y := b.Tensor(h, Dims(shape), -1)
				b.SetStaging(y, h)
				z := b.Tensor(h, Dims(shape), -1)
				b.SetStaging(z, f)
				b.Op("aten.exp.default", x, y)
				b.Op("aten.tanh.default", x, z)
				b.Inputs(x)
				b.Outputs(y, z)
				return []*reference.Tensor{RandTensor(r, h, shape, -8, 8)}
			}},
	)
	return cs
}
