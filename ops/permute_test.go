package ops_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/serialization"
)

func TestPermuteRejects(t *testing.T) {
	f := serialization.Float32
	permute := func(b *serialization.Builder, in, out []uint32, dims int32) {
		x := b.Tensor(f, in, -1)
		y := b.Tensor(f, out, -1)
		b.Op("aten.permute_copy.default", x, dims, y)
		b.Inputs(x)
		b.Outputs(y)
	}
	wantArgError(t, openTestDevice(t), map[string]func(b *serialization.Builder){
		"repeated axis": func(b *serialization.Builder) {
			permute(b, []uint32{2, 3, 4}, []uint32{2, 2, 3}, b.IntList(0, 0, 1))
		},
		"repeated after normalising": func(b *serialization.Builder) {
			permute(b, []uint32{2, 3, 4}, []uint32{4, 3, 4}, b.IntList(2, 1, -1))
		},
		"axis out of range": func(b *serialization.Builder) {
			permute(b, []uint32{2, 3}, []uint32{3, 2}, b.IntList(1, 2))
		},
		"negative out of range": func(b *serialization.Builder) {
			permute(b, []uint32{2, 3}, []uint32{3, 2}, b.IntList(-3, 0))
		},
		"too few dims": func(b *serialization.Builder) {
			permute(b, []uint32{2, 3, 4}, []uint32{3, 2, 4}, b.IntList(1, 0))
		},
		"dims not a list": func(b *serialization.Builder) {
			permute(b, []uint32{2, 3}, []uint32{3, 2}, b.Double(1.5))
		},
		// The serialized out dims are only a capacity: a differently
		// shaped out of the same size is fine, a smaller one is not.
		"out too small": func(b *serialization.Builder) {
			permute(b, []uint32{2, 3, 4}, []uint32{4, 5}, b.IntList(2, 0, 1))
		},
		"out dtype": func(b *serialization.Builder) {
			x := b.Tensor(f, []uint32{2, 3}, -1)
			y := b.Tensor(serialization.Int32, []uint32{3, 2}, -1)
			b.Op("aten.permute_copy.default", x, b.IntList(1, 0), y)
			b.Inputs(x)
			b.Outputs(y)
		},
		"rank 9": func(b *serialization.Builder) {
			d := []uint32{1, 1, 1, 1, 1, 1, 1, 1, 2}
			permute(b, d, d, b.IntList(0, 1, 2, 3, 4, 5, 6, 7, 8))
		},
	})
}

// TestPermuteFloat16 moves random half bit patterns (NaNs, infinities and
// subnormals included) through a FLOAT16 permute, held as float32 on the
// device: every half must come back bit for bit, compared with a byte-wise
// permutation done here.
func TestPermuteFloat16(t *testing.T) {
	dev := openTestDevice(t)
	for _, c := range []struct {
		shape []int64
		dims  []int64
	}{
		{[]int64{3, 5, 7}, []int64{2, 0, 1}},
		{[]int64{3, 5, 7}, []int64{-2, -1, -3}},
		{[]int64{5}, []int64{0}},
		{[]int64{2, 3, 1, 3}, []int64{3, 1, 2, 0}},
	} {
		perm := make([]int, len(c.dims))
		outShape := make([]int64, len(c.dims))
		for i, d := range c.dims {
			if d < 0 {
				d += int64(len(c.shape))
			}
			perm[i], outShape[i] = int(d), c.shape[d]
		}
		b := serialization.NewBuilder()
		x := b.Tensor(serialization.Float16, u32s(c.shape), -1)
		y := b.Tensor(serialization.Float16, u32s(outShape), -1)
		b.Op("aten.permute_copy.default", x, b.IntList(c.dims...), y)
		b.Inputs(x)
		b.Outputs(y)
		g, err := buildGraph(t, dev, b)
		if err != nil {
			t.Fatal(err)
		}
		numel := int64(1)
		for _, d := range c.shape {
			numel *= d
		}
		in := make([]byte, 2*numel)
		r := rand.New(rand.NewPCG(uint64(numel), 7))
		for i := range in {
			in[i] = byte(r.Uint32())
		}
		outs, err := g.Execute(context.Background(), []graph.Tensor{{DType: serialization.Float16, Shape: c.shape, Data: in}})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, len(in))
		coord := make([]int64, len(outShape))
		for o := int64(0); o < numel; o++ {
			rest := o
			for i := len(outShape) - 1; i >= 0; i-- {
				coord[i], rest = rest%outShape[i], rest/outShape[i]
			}
			src := int64(0)
			for axis := range c.shape {
				src = src*c.shape[axis] + coord[slices.Index(perm, axis)]
			}
			copy(want[2*o:2*o+2], in[2*src:2*src+2])
		}
		if !slices.Equal(outs[0].Data, want) || !slices.Equal(outs[0].Shape, outShape) {
			t.Errorf("%v by %v: got %x %v, want %x %v", c.shape, c.dims, outs[0].Data, outs[0].Shape, want, outShape)
		}
	}
}

func u32s(s []int64) []uint32 {
	out := make([]uint32, len(s))
	for i, v := range s {
		out[i] = uint32(v)
	}
	return out
}
