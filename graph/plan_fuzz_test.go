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
	seeds := append(seedGraphs(f), mlpSeed(f))
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
