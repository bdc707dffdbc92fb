package graph

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
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
// before any buffer exists, with a *LimitError naming the op, the tensor,
// its size and the limit.
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
			if le.ValueID != 1 || le.MemObjID != c.memObj || le.Bytes < int64(n)*4 || le.Limit != lim && le.Name != "maxBufferSize" || le.Op != "aten.relu.default" {
				t.Errorf("LimitError %+v", le)
			}
			for _, want := range []string{"aten.relu.default", "value 1", le.Name} {
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

// TestRejectGraphValues: tensor sizes that overflow, and an op argument of
// the wrong kind, are typed errors at load.
func TestRejectGraphValues(t *testing.T) {
	f := serialization.Float32
	t.Run("dims product overflows", func(t *testing.T) {
		blob := buildBlob(t, func(b *serialization.Builder) {
			x := b.Tensor(f, []uint32{1 << 20, 1 << 20, 1 << 20}, -1)
			y := b.Tensor(f, []uint32{1 << 20, 1 << 20, 1 << 20}, -1)
			b.Op("aten.relu.default", x, y)
			b.Inputs(x)
			b.Outputs(y)
		})
		_, err := Load(context.Background(), device(t), blob, Options{})
		if !errors.Is(err, ErrInvalidGraph) || !strings.Contains(err.Error(), "overflow") {
			t.Fatalf("got %v, want an overflow ErrInvalidGraph", err)
		}
	})
	t.Run("argument of the wrong kind", func(t *testing.T) {
		blob := buildBlob(t, func(b *serialization.Builder) {
			x := b.Tensor(f, []uint32{4}, -1)
			y := b.Tensor(f, []uint32{4}, -1)
			b.Op("aten.relu.default", b.Int(3), y)
			b.Op("aten.relu.default", x, y)
			b.Inputs(x)
			b.Outputs(y)
		})
		_, err := Load(context.Background(), device(t), blob, Options{})
		var oe *OpError
		if !errors.As(err, &oe) || !errors.Is(err, ops.ErrArg) || oe.Index != 0 {
			t.Fatalf("got %v, want an ops.ErrArg in a *OpError for op 0", err)
		}
	})
	// Found by FuzzOpArgs: an et_vk.prepack whose source is no constant
	// (here Null, or a graph input), its output a float16 weight of a
	// linear (packed as halves at load), crashed the load while packing.
	for _, src := range []string{"null", "input"} {
		t.Run("prepack of "+src, func(t *testing.T) {
			blob := buildBlob(t, func(b *serialization.Builder) {
				x := b.Tensor(f, []uint32{2, 8}, -1)
				b.Inputs(x)
				from := b.Null()
				if src == "input" {
					from = b.Tensor(serialization.Float16, []uint32{4, 8}, -1)
					b.Inputs(from)
				}
				w := b.Tensor(serialization.Float16, []uint32{4, 8}, -1)
				b.Op("et_vk.prepack.default", from, w)
				y := b.Tensor(f, []uint32{2, 4}, -1)
				b.Op("aten.linear.default", x, w, b.Null(), y)
				b.Outputs(y)
			})
			g, err := Load(context.Background(), device(t), blob, Options{})
			if err == nil {
				g.Close()
				t.Fatal("loaded")
			}
			// The linear reads what is no weight.
			var oe *OpError
			if !errors.As(err, &oe) || !errors.Is(err, ops.ErrArg) || oe.Index != 1 || !strings.Contains(err.Error(), "not a weight") {
				t.Fatalf("got %v, want an ops.ErrArg in a *OpError for op 1 saying its weight is none", err)
			}
		})
	}
}

// TestExecuteInputBounds: an input may be smaller than its serialized
// (upper-bound) dims, not larger nor of another rank; a SymInt input takes a
// one-element integer tensor.
func TestExecuteInputBounds(t *testing.T) {
	f := serialization.Float32
	blob := buildBlob(t, func(b *serialization.Builder) {
		x := b.Tensor(f, []uint32{4, 3}, -1)
		y := b.Tensor(f, []uint32{4, 3}, -1)
		b.Op("aten.clone.default", x, b.Null(), y)
		n := b.SymInt(0)
		m := b.SymInt(0)
		b.Op("mul", n, n, m)
		b.Inputs(x, n)
		b.Outputs(y, m)
	})
	g, err := Load(context.Background(), device(t), blob, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	n := Int64Tensor([]int64{}, []int64{7})
	for _, c := range []struct {
		name string
		in   []Tensor
		want string
	}{
		{"larger than the bound", []Tensor{Float32Tensor([]int64{5, 3}, make([]float32, 15)), n}, "larger than the graph's bound"},
		{"another rank", []Tensor{Float32Tensor([]int64{12}, make([]float32, 12)), n}, "rank"},
		{"SymInt as a vector", []Tensor{Float32Tensor([]int64{4, 3}, make([]float32, 12)), Int64Tensor([]int64{2}, []int64{1, 2})}, "one-element"},
		{"SymInt as a float", []Tensor{Float32Tensor([]int64{4, 3}, make([]float32, 12)), Float32Tensor([]int64{}, []float32{1})}, "int32 or int64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := g.Execute(context.Background(), c.in)
			var ie *InputError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an *InputError mentioning %q", err, c.want)
			}
		})
	}
	// Smaller than the bound is fine and comes back with the live shape.
	out, err := g.Execute(context.Background(), []Tensor{Float32Tensor([]int64{2, 3}, []float32{-1, 2, -3, 4, -5, 6}), n})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := out[0].Float32s()
	if len(out[0].Shape) != 2 || out[0].Shape[0] != 2 || len(got) != 6 || got[1] != 2 || got[2] != -3 {
		t.Errorf("clone of a [2 3] input: shape %v values %v", out[0].Shape, got)
	}
	if v, _ := out[1].Int64s(); len(v) != 1 || v[0] != 49 {
		t.Errorf("SymInt output %v, want 49", v)
	}
	// The SymInt as an int32 scalar, sign and all.
	for _, v := range []int32{7, -3} {
		out, err := g.Execute(context.Background(), []Tensor{Float32Tensor([]int64{2, 3}, make([]float32, 6)), Int32Tensor([]int64{}, []int32{v})})
		if err != nil {
			t.Fatalf("SymInt %d as int32: %v", v, err)
		}
		if got, _ := out[1].Int64s(); len(got) != 1 || got[0] != int64(v)*int64(v) {
			t.Errorf("SymInt %d as int32: output %v, want %d", v, got, v*v)
		}
	}
}
