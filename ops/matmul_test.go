package ops_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

var (
	testDevOnce sync.Once
	testDev     *gpu.Device
	testDevErr  error
)

// openTestDevice returns the process-wide test device on the default
// adapter (lavapipe in CI), opened once per test binary so its pipeline
// cache serves every test.
func openTestDevice(t *testing.T) *gpu.Device {
	t.Helper()
	testDevOnce.Do(func() { testDev, testDevErr = gpu.Open(context.Background(), gpu.Options{}) })
	if testDevErr != nil {
		t.Fatalf("open device: %v", testDevErr)
	}
	return testDev
}

// buildGraph encodes b's graph and builds it on dev, returning the graph
// (closed at cleanup) or the build error.
func buildGraph(t *testing.T, dev *gpu.Device, b *serialization.Builder) (*graph.WebGPUGraph, error) {
	t.Helper()
	raw, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := serialization.DecodeBlob(raw)
	if err != nil {
		t.Fatal(err)
	}
	named := serialization.NewNamedDataMap()
	for _, nb := range b.NamedBlobs() {
		if err := named.Add(nb.Key, nb.Data); err != nil {
			t.Fatal(err)
		}
	}
	g, err := graph.Build(context.Background(), dev, blob, graph.Options{NamedData: named})
	if err == nil {
		t.Cleanup(func() { g.Close() })
	}
	return g, err
}

// wantArgError builds each case's graph and requires an ops.ErrArg from the
// op, reported through *graph.OpError.
func wantArgError(t *testing.T, dev *gpu.Device, cases map[string]func(b *serialization.Builder)) {
	t.Helper()
	for name, build := range cases {
		b := serialization.NewBuilder()
		build(b)
		_, err := buildGraph(t, dev, b)
		var oe *graph.OpError
		if !errors.Is(err, ops.ErrArg) || !errors.As(err, &oe) {
			t.Errorf("%s: got %v, want an ops.ErrArg inside a *graph.OpError", name, err)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestMatmulRejects(t *testing.T) {
	f := serialization.Float32
	ten := func(b *serialization.Builder, dt serialization.DataType, dims ...uint32) int32 {
		return b.Tensor(dt, dims, -1)
	}
	mm := func(b *serialization.Builder, x, y, out int32) {
		b.Op("aten.mm.default", x, y, out)
		b.Inputs(x)
		b.Outputs(out)
	}
	linear := func(b *serialization.Builder, x, w, bias, out int32) {
		b.Op("aten.linear.default", x, w, bias, out)
		b.Inputs(x)
		b.Outputs(out)
	}
	wantArgError(t, openTestDevice(t), map[string]func(b *serialization.Builder){
		"mm/int32": func(b *serialization.Builder) {
			i := serialization.Int32
			mm(b, ten(b, i, 3, 4), ten(b, i, 4, 2), ten(b, i, 3, 2))
		},
		"mm/out int32": func(b *serialization.Builder) {
			mm(b, ten(b, f, 3, 4), ten(b, f, 4, 2), ten(b, serialization.Int32, 3, 2))
		},
		"mm/K mismatch": func(b *serialization.Builder) {
			mm(b, ten(b, f, 3, 4), ten(b, f, 5, 2), ten(b, f, 3, 2))
		},
		"mm/out too small": func(b *serialization.Builder) {
			mm(b, ten(b, f, 3, 4), ten(b, f, 4, 2), ten(b, f, 2, 2))
		},
		"bmm/batch mismatch": func(b *serialization.Builder) {
			x := ten(b, f, 2, 3, 4)
			b.Op("aten.bmm.default", x, ten(b, f, 3, 4, 2), ten(b, f, 2, 3, 2))
			b.Inputs(x)
		},
		"bmm/2-D self": func(b *serialization.Builder) {
			x := ten(b, f, 3, 4)
			b.Op("aten.bmm.default", x, ten(b, f, 1, 4, 2), ten(b, f, 1, 3, 2))
			b.Inputs(x)
		},
		"addmm/bias shape": func(b *serialization.Builder) {
			x := ten(b, f, 3, 4)
			b.Op("aten.addmm.default", ten(b, f, 2, 2), x, ten(b, f, 4, 2), b.Double(1), b.Double(1), ten(b, f, 3, 2))
			b.Inputs(x)
		},
		"addmm/beta string": func(b *serialization.Builder) {
			x := ten(b, f, 3, 4)
			b.Op("aten.addmm.default", ten(b, f, 2), x, ten(b, f, 4, 2), b.String("1"), b.Double(1), ten(b, f, 3, 2))
			b.Inputs(x)
		},
		"matmul/batch broadcast": func(b *serialization.Builder) {
			x := ten(b, f, 2, 3, 4)
			b.Op("aten.matmul.default", x, ten(b, f, 3, 4, 2), ten(b, f, 3, 3, 2))
			b.Inputs(x)
		},
		"matmul/rank 0": func(b *serialization.Builder) {
			x := ten(b, f)
			b.Op("aten.matmul.default", x, ten(b, f, 1, 2), ten(b, f, 2))
			b.Inputs(x)
		},
		"mm/3-D self": func(b *serialization.Builder) {
			mm(b, ten(b, f, 2, 3, 4), ten(b, f, 4, 2), ten(b, f, 6, 2))
		},
		"mm/mat2 not a tensor": func(b *serialization.Builder) {
			mm(b, ten(b, f, 3, 4), b.Int(4), ten(b, f, 3, 2))
		},
		"mm/arg count": func(b *serialization.Builder) {
			x, out := ten(b, f, 3, 4), ten(b, f, 3, 4)
			b.Op("aten.mm.default", x, out)
			b.Inputs(x)
			b.Outputs(out)
		},
		"linear/float64 weight": func(b *serialization.Builder) {
			w := b.InlineConst(serialization.Float64, []uint32{2, 4}, make([]byte, 64))
			linear(b, ten(b, f, 3, 4), w, b.Null(), ten(b, f, 3, 2))
		},
		"linear/K mismatch": func(b *serialization.Builder) {
			w := b.InlineConst(f, []uint32{2, 5}, make([]byte, 40))
			linear(b, ten(b, f, 3, 4), w, b.Null(), ten(b, f, 3, 2))
		},
		"linear/1-D weight": func(b *serialization.Builder) {
			w := b.InlineConst(f, []uint32{4}, make([]byte, 16))
			linear(b, ten(b, f, 3, 4), w, b.Null(), ten(b, f, 3))
		},
		"linear/bias size": func(b *serialization.Builder) {
			w := b.InlineConst(f, []uint32{2, 4}, make([]byte, 32))
			bias := b.InlineConst(f, []uint32{3}, make([]byte, 12))
			linear(b, ten(b, f, 3, 4), w, bias, ten(b, f, 3, 2))
		},
		"linear/bias int32": func(b *serialization.Builder) {
			w := b.InlineConst(f, []uint32{2, 4}, make([]byte, 32))
			bias := b.InlineConst(serialization.Int32, []uint32{2}, make([]byte, 8))
			linear(b, ten(b, f, 3, 4), w, bias, ten(b, f, 3, 2))
		},
		"linear/out too small": func(b *serialization.Builder) {
			w := b.InlineConst(f, []uint32{2, 4}, make([]byte, 32))
			linear(b, ten(b, f, 2, 3, 4), w, b.Null(), ten(b, f, 5, 2))
		},
	})
}

// TestMatmulEmpty: M = 0 records no dispatch; K = 0 still writes the bias.
func TestMatmulEmpty(t *testing.T) {
	dev := openTestDevice(t)
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{2, 0}, -1)
	w := b.InlineConst(f, []uint32{3, 0}, nil)
	bias := b.InlineConst(f, []uint32{3}, graph.Float32Tensor([]int64{3}, []float32{1, 2, 3}).Data)
	y := b.Tensor(f, []uint32{2, 3}, -1)
	b.Op("aten.linear.default", x, w, bias, y)
	x0 := b.Tensor(f, []uint32{0, 4}, -1)
	m0 := b.InlineConst(f, []uint32{4, 4}, make([]byte, 64))
	y0 := b.Tensor(f, []uint32{0, 4}, -1)
	b.Op("aten.mm.default", x0, m0, y0)
	b.Inputs(x, x0)
	b.Outputs(y)
	g, err := buildGraph(t, dev, b)
	if err != nil {
		t.Fatal(err)
	}
	if n := g.MemoryStats().NumDispatches; n != 1 {
		t.Errorf("%d dispatches, want 1 (the K=0 linear)", n)
	}
	outs, err := g.Execute(context.Background(), []graph.Tensor{
		{DType: f, Shape: []int64{2, 0}}, {DType: f, Shape: []int64{0, 4}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := outs[0].Float32s()
	want := []float32{1, 2, 3, 1, 2, 3}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
