package graph

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// randomPlan rewrites the mem_obj_ids of g into a random plan that is valid
// for the exporter's lifetimes (memplan.ExporterLifetimes): tensors whose
// spans overlap never share an object, otherwise anything goes (a tensor
// may share with any dead one, or get a new object, or stay dedicated).
func randomPlan(g *serialization.Graph, r *rand.Rand) {
	memplan.PlanDedicated(g)
	ivs := memplan.ExporterLifetimes(g)
	r.Shuffle(len(ivs), func(i, j int) { ivs[i], ivs[j] = ivs[j], ivs[i] })
	var objs [][]memplan.Span
	for _, iv := range ivs {
		var free []int
		for o, spans := range objs {
			if !slices.ContainsFunc(spans, iv.Span.Overlaps) {
				free = append(free, o)
			}
		}
		var o int
		switch k := r.IntN(8); {
		case k == 0:
			continue // dedicated
		case k == 1 || len(free) == 0:
			o = len(objs)
			objs = append(objs, nil)
		default:
			o = free[r.IntN(len(free))]
		}
		objs[o] = append(objs[o], iv.Span)
		g.Values[iv.ID].Tensor.MemObjID = int32(o)
	}
}

// mlpSeed is linear -> relu -> linear -> relu -> linear with prepacked
// weights: every linear absorbs its relu.
// decodeGroupsSeed is a decode step's fused groups (package lower) on
// activations in shared objects: rms_norm read by SwiGLU's linears, and
// the rope over table slices with the KV-cache attention.
func decodeGroupsSeed(t testing.TB) []byte {
	f := serialization.Float32
	b := serialization.NewBuilder()
	h := b.Tensor(f, []uint32{1, 1, 8}, -1)
	x := b.Tensor(f, []uint32{1, 1, 8}, 0)
	b.Op("et_vk.rms_norm.default", h, b.InlineConst(f, []uint32{8}, f32Bytes(8, 1)), b.Double(1e-5), x)
	g, s, sg := b.Tensor(f, []uint32{1, 1, 4}, 1), b.Tensor(f, []uint32{1, 1, 4}, 2), b.Tensor(f, []uint32{1, 1, 4}, 1)
	b.Op("aten.linear.default", x, b.InlineConst(f, []uint32{4, 8}, f32Bytes(32, 2)), b.Null(), g)
	b.Op("aten.sigmoid.default", g, s)
	b.Op("aten.mul.Tensor", g, s, sg)
	u, y := b.Tensor(f, []uint32{1, 1, 4}, 2), b.Tensor(f, []uint32{1, 1, 4}, 0)
	b.Op("aten.linear.default", x, b.InlineConst(f, []uint32{4, 8}, f32Bytes(32, 3)), b.Null(), u)
	b.Op("aten.mul.Tensor", sg, u, y)
	q, k, v := b.Tensor(f, []uint32{1, 1, 2, 4}, -1), b.Tensor(f, []uint32{1, 1, 2, 4}, -1), b.Tensor(f, []uint32{1, 1, 2, 4}, -1)
	ct, st := b.InlineConst(f, []uint32{8, 2}, f32Bytes(16, 4)), b.InlineConst(f, []uint32{8, 2}, f32Bytes(16, 5))
	kc, vc := b.Tensor(f, []uint32{1, 8, 2, 4}, -1), b.Tensor(f, []uint32{1, 8, 2, 4}, -1)
	b.Op("et_vk.prepack.default", b.InlineConst(f, []uint32{1, 8, 2, 4}, f32Bytes(64, 6)), kc)
	b.Op("et_vk.prepack.default", b.InlineConst(f, []uint32{1, 8, 2, 4}, f32Bytes(64, 7)), vc)
	pos, end := b.Int(3), b.Int(4)
	ci, si := b.Tensor(f, []uint32{1, 2}, 1), b.Tensor(f, []uint32{1, 2}, 2)
	b.Op("aten.slice_copy.Tensor", ct, b.Int(0), pos, end, b.Int(1), ci)
	b.Op("aten.slice_copy.Tensor", st, b.Int(0), pos, end, b.Int(1), si)
	qo, ko := b.Tensor(f, []uint32{1, 1, 2, 4}, 0), b.Tensor(f, []uint32{1, 1, 2, 4}, 1)
	b.Op("et_vk.apply_rotary_emb.default", q, k, ci, si, b.ValueList(qo, ko))
	out := b.Tensor(f, []uint32{1, 1, 2, 4}, 2)
	b.Op("sdpa_with_kv_cache.default", qo, ko, v, kc, vc, pos, b.Int(1), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
	b.Inputs(h, q, k, v)
	b.Outputs(y, out)
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	return blob
}

// f32Bytes is n float32s of a fixed pattern (seed k), small and varied.
func f32Bytes(n, k int) []byte {
	out := make([]byte, 0, 4*n)
	for i := range n {
		v := float32((i*7+k*3)%11-5) / 8
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out
}

func mlpSeed(t testing.TB) []byte {
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{3, 8}, -1)
	cur := x
	for l := range 3 {
		w := b.InlineConst(f, []uint32{8, 8}, randBytes(64, uint64(l)))
		p := b.Tensor(f, []uint32{8, 8}, -1)
		b.Op("et_vk.prepack.default", w, p)
		h := b.Tensor(f, []uint32{3, 8}, -1)
		b.Op("aten.linear.default", cur, p, b.Null(), h)
		cur = h
		if l < 2 {
			a := b.Tensor(f, []uint32{3, 8}, -1)
			b.Op("aten.relu.default", h, a)
			cur = a
		}
	}
	b.Inputs(x)
	b.Outputs(cur)
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	return blob
}

// randBytes is n random float32 values in [-1, 1) as bytes.
func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	var buf bytes.Buffer
	for range n {
		v := float32(r.Float64()*2 - 1)
		buf.Write(f32le(v))
	}
	return buf.Bytes()
}

// FuzzPlan runs the seed graphs under random memory plans that are valid
// for the exporter's lifetimes and requires the outputs of every plan to
// equal, bit for bit, those under dedicated buffers: fusion and the
// re-binding of transient tensors after recording must make the plan
// invisible.
func FuzzPlan(f *testing.F) {
	seeds := append(seedGraphs(f), mlpSeed(f), decodeGroupsSeed(f))
	for i := range seeds {
		f.Add(uint8(i), uint64(i))
	}
	dev := device(f)
	run := func(t *testing.T, g *serialization.Graph, consts []byte, inputs []Tensor) ([]Tensor, int) {
		raw, err := serialization.EncodeBlob(g, consts)
		if err != nil {
			t.Fatal(err)
		}
		gr, err := Load(context.Background(), dev, raw, Options{SkipWarmup: true})
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		defer gr.Close()
		out, err := gr.Execute(context.Background(), inputs)
		if err != nil {
			t.Fatalf("execute: %v", err)
		}
		return out, len(gr.Dispatches())
	}
	f.Fuzz(func(t *testing.T, seed uint8, planSeed uint64) {
		blob, err := serialization.DecodeBlob(seeds[int(seed)%len(seeds)])
		if err != nil {
			t.Fatal(err)
		}
		g := blob.Graph
		r := rand.New(rand.NewPCG(planSeed, 3))
		var inputs []Tensor
		for _, id := range g.InputIDs {
			tt := g.Values[id].Tensor
			shape := make([]int64, len(tt.Dims))
			n := 1
			for i, d := range tt.Dims {
				shape[i] = int64(d)
				n *= int(d)
			}
			inputs = append(inputs, Tensor{DType: tt.DataType, Shape: shape, Data: randBytes(n, r.Uint64())})
		}
		memplan.PlanDedicated(g)
		want, wantN := run(t, g, blob.Constants, inputs)
		randomPlan(g, r)
		got, gotN := run(t, g, blob.Constants, inputs)
		if gotN != wantN {
			t.Errorf("%d dispatches under the random plan, %d under dedicated buffers", gotN, wantN)
		}
		for i := range want {
			if !bytes.Equal(got[i].Data, want[i].Data) {
				t.Errorf("output %d differs under the random plan", i)
			}
		}
	})
}

func TestRandomPlansAreValid(t *testing.T) {
	for i, s := range append(seedGraphs(t), mlpSeed(t)) {
		blob, err := serialization.DecodeBlob(s)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(i), 9))
		for range 50 {
			randomPlan(blob.Graph, r)
			spans := map[int32][]memplan.Span{}
			for _, iv := range memplan.ExporterLifetimes(blob.Graph) {
				o := blob.Graph.Values[iv.ID].Tensor.MemObjID
				if o < 0 {
					continue
				}
				if slices.ContainsFunc(spans[o], iv.Span.Overlaps) {
					t.Fatalf("seed %d: value %d shares object %d with an overlapping tensor", i, iv.ID, o)
				}
				spans[o] = append(spans[o], iv.Span)
			}
		}
	}
}

func f32le(v float32) []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, math.Float32bits(v))
	return b
}
