package graph

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

func buildBlob(t *testing.T, build func(b *serialization.Builder)) []byte {
	t.Helper()
	b := serialization.NewBuilder()
	build(b)
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	return blob
}

// TestReadBeforeWrite: a tensor that is read but that no input, constant or
// earlier op provides is rejected at load, as is an output nothing writes.
func TestReadBeforeWrite(t *testing.T) {
	f := serialization.Float32
	for _, c := range []struct {
		name  string
		build func(b *serialization.Builder)
	}{
		{"op input never written", func(b *serialization.Builder) {
			x := b.Tensor(f, []uint32{4}, -1)
			ghost := b.Tensor(f, []uint32{4}, -1)
			y := b.Tensor(f, []uint32{4}, -1)
			b.Op("aten.mul.Tensor", x, ghost, y)
			b.Inputs(x)
			b.Outputs(y)
		}},
		{"read before the op that writes it", func(b *serialization.Builder) {
			x := b.Tensor(f, []uint32{4}, -1)
			y := b.Tensor(f, []uint32{4}, -1)
			z := b.Tensor(f, []uint32{4}, -1)
			b.Op("aten.relu.default", y, z) // y is written only below
			b.Op("aten.relu.default", x, y)
			b.Inputs(x)
			b.Outputs(z)
		}},
		{"output never written", func(b *serialization.Builder) {
			x := b.Tensor(f, []uint32{4}, -1)
			y := b.Tensor(f, []uint32{4}, -1)
			b.Inputs(x)
			b.Outputs(y)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(context.Background(), device(t), buildBlob(t, c.build), Options{})
			if !errors.Is(err, ErrReadBeforeWrite) || !errors.Is(err, ErrInvalidGraph) {
				t.Fatalf("got %v, want ErrReadBeforeWrite and ErrInvalidGraph", err)
			}
		})
	}
}

// TestDeviceLimit: a tensor over maxStorageBufferBindingSize is rejected
// before any buffer exists, with a *LimitError naming the tensor, its size
// and the limit.
func TestDeviceLimit(t *testing.T) {
	dev := device(t)
	lim := dev.Limits().MaxStorageBufferBindingSize
	n := uint32(lim/4 + 16) // float32 elements just over the limit
	f := serialization.Float32
	for _, c := range []struct {
		name   string
		memObj int32
	}{{"dedicated", -1}, {"shared memory object", 3}} {
		t.Run(c.name, func(t *testing.T) {
			blob := buildBlob(t, func(b *serialization.Builder) {
				x := b.Tensor(f, []uint32{4}, -1)
				big := b.Tensor(f, []uint32{n}, c.memObj)
				b.Op("aten.relu.default", x, big)
				b.Inputs(x)
				b.Outputs(big)
			})
			before := dev.LiveObjects()
			_, err := Load(context.Background(), dev, blob, Options{MemoryLimit: 1 << 40})
			var le *LimitError
			if !errors.As(err, &le) || !errors.Is(err, ErrDeviceLimit) || !errors.Is(err, ErrUnsupported) {
				t.Fatalf("got %v, want a *LimitError", err)
			}
			if le.ValueID != 1 || le.MemObjID != c.memObj || le.Bytes < int64(n)*4 || le.Limit != lim && le.Name != "maxBufferSize" {
				t.Errorf("LimitError %+v", le)
			}
			for _, want := range []string{"value 1", le.Name} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not name %q", err, want)
				}
			}
			if after := dev.LiveObjects(); after.Buffers != before.Buffers {
				t.Errorf("rejected load left %d buffers (before %d)", after.Buffers, before.Buffers)
			}
		})
	}
}

// TestNaNInfComputed: NaN and ±Inf inputs are computed as IEEE values, not
// rejected.
func TestNaNInfComputed(t *testing.T) {
	f := serialization.Float32
	blob := buildBlob(t, func(b *serialization.Builder) {
		x := b.Tensor(f, []uint32{5}, -1)
		y := b.Tensor(f, []uint32{5}, -1)
		s := b.Tensor(f, []uint32{5}, -1)
		b.Op("aten.add.Tensor", x, y, b.Int(1), s)
		b.Inputs(x, y)
		b.Outputs(s)
	})
	g, err := Load(context.Background(), device(t), blob, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	out, err := g.Execute(context.Background(), []Tensor{
		Float32Tensor([]int64{5}, []float32{nan, inf, inf, -inf, 1}),
		Float32Tensor([]int64{5}, []float32{1, 1, -inf, -inf, nan}),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := out[0].Float32s()
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{math.NaN(), math.Inf(1), math.NaN(), math.Inf(-1), math.NaN()}
	for i, w := range want {
		g := float64(got[i])
		if math.IsNaN(w) != math.IsNaN(g) || (!math.IsNaN(w) && g != w) {
			t.Errorf("element %d: got %v, want %v", i, g, w)
		}
	}
}
