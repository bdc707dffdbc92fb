package graph

import (
	"context"
	"errors"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestSplitUploads: large weights are uploaded after recording
// (gpu.Device.BeginUpload), half of them into buffers the driver clears
// first; every one reads back exactly, including weights whose deferred
// upload a GPU packing kernel reads while the load is still recording (it
// must be finished first) and odd sizes that need zero padding.
//
// Load order: the two transposed weights have buffers of their own,
// created when the load allocates and read by their packing kernels; the
// identity-packed ones are created as their ops record.
func TestSplitUploads(t *testing.T) {
	const tr, tc = 513, 517 // transposed weights, 1,060,884 bytes
	sizes := []uint32{262147, 0, 300001, 0, 262145}
	b := serialization.NewBuilder()
	f := serialization.Float32
	var want [][]float32
	var outs []int32
	for i, n := range sizes {
		if n == 0 { // the transposed weight, second in load order
			w, raw := randWeight(tr*tc, uint64(90+i))
			cst, _ := b.NamedConst(f, []uint32{tr, tc}, raw)
			out := b.Tensor(f, []uint32{tc, tr}, -1)
			b.Op("test.packed_transpose", cst, out)
			wt := make([]float32, tr*tc)
			for r := 0; r < tr; r++ {
				for c := 0; c < tc; c++ {
					wt[c*tr+r] = w[r*tc+c]
				}
			}
			want, outs = append(want, wt), append(outs, out)
			continue
		}
		w, raw := randWeight(int(n), uint64(91+i))
		cst, _ := b.NamedConst(f, []uint32{n}, raw)
		out := b.Tensor(f, []uint32{n}, -1)
		b.Op("test.packed_identity", cst, out)
		want, outs = append(want, w), append(outs, out)
	}
	b.Outputs(outs...)
	g := loadBuilt(t, b, Options{})
	defer g.Close()
	if g.dev.DirectUploads() {
		if g.upMain == 0 || g.upDriver == 0 {
			t.Errorf("uploads not split: %d bytes touched by the load, %d by the driver", g.upMain, g.upDriver)
		}
	} else {
		t.Log("device without direct uploads: every upload is a queue write")
	}
	if len(g.uploads) != 0 {
		t.Errorf("%d uploads left unfinished after the load", len(g.uploads))
	}
	res, err := g.Execute(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		got, err := res[i].Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want[i]) {
			t.Fatalf("output %d: %d values, want %d", i, len(got), len(want[i]))
		}
		for k := range got {
			if got[k] != want[i][k] {
				t.Fatalf("output %d[%d] = %v, want %v", i, k, got[k], want[i][k])
			}
		}
	}
}

// TestPrepackOutputBuffer: a prepack output read directly gets its buffer
// from its et_vk.prepack, with the constant's bytes (a large one through a
// deferred upload), and reads back exactly; an op that reads a prepack
// output before its et_vk.prepack is a read-before-write error.
func TestPrepackOutputBuffer(t *testing.T) {
	f := serialization.Float32
	for _, n := range []uint32{7, 262147} {
		b := serialization.NewBuilder()
		w, raw := randWeight(int(n), uint64(n))
		c, _ := b.NamedConst(f, []uint32{n}, raw)
		p := b.Tensor(f, []uint32{n}, -1)
		b.Op("et_vk.prepack.default", c, p)
		out := b.Tensor(f, []uint32{n}, -1)
		b.Op("aten.clone.default", p, b.Null(), out)
		b.Outputs(out)
		g := loadBuilt(t, b, Options{})
		if s := g.MemoryStats(); s.UnsharedTensorBufferBytes != 2*4*int64(n) || s.NumDeferredConstants != 1 {
			t.Errorf("n=%d: %d dedicated bytes, %d deferred; want the prepack output and the output, the constant deferred",
				n, s.UnsharedTensorBufferBytes, s.NumDeferredConstants)
		}
		res, err := g.Execute(context.Background(), nil)
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := res[0].Float32s()
		for i := range w {
			if got[i] != w[i] {
				t.Fatalf("n=%d: out[%d] = %v, want %v", n, i, got[i], w[i])
			}
		}
	}

	b := serialization.NewBuilder()
	_, raw := randWeight(4, 1)
	c, _ := b.NamedConst(f, []uint32{4}, raw)
	p := b.Tensor(f, []uint32{4}, -1)
	out := b.Tensor(f, []uint32{4}, -1)
	b.Op("aten.clone.default", p, b.Null(), out)
	b.Op("et_vk.prepack.default", c, p)
	b.Outputs(out)
	blob, named := BuiltBlob(t, b)
	_, err := Load(context.Background(), device(t), blob, Options{NamedData: named})
	if !errors.Is(err, ErrReadBeforeWrite) || !errors.Is(err, ErrInvalidGraph) {
		t.Errorf("prepack output read before its prepack: %v, want ErrReadBeforeWrite and ErrInvalidGraph", err)
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Index != 0 {
		t.Errorf("error %v does not name op 0", err)
	}
}
