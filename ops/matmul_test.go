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
	blob, named, err := b.Decode()
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(context.Background(), dev, blob, graph.Options{NamedData: named})
	if err == nil {
		t.Cleanup(func() { g.Close() })
	}
	return g, err
}

// argTensor declares a tensor of dt and dims (no memory object shared) for
// an argument-check case.
func argTensor(b *serialization.Builder, dt serialization.DataType, dims ...uint32) int32 {
	return b.Tensor(dt, dims, -1)
}

// inputOutputOp adds name(x, rest..., out) with x as the graph input and
// out, the last of rest, as its output.
func inputOutputOp(b *serialization.Builder, name string, x int32, rest ...int32) {
	b.Op(name, append([]int32{x}, rest...)...)
	b.Inputs(x)
	b.Outputs(rest[len(rest)-1])
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
	ten := argTensor
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

// TestAttentionRopeRejects: bad attention, KV-cache and rope arguments are
// ErrArgs at build time.
func TestAttentionRopeRejects(t *testing.T) {
	f := serialization.Float32
	ten := func(b *serialization.Builder, dims ...uint32) int32 {
		id := b.Tensor(f, dims, -1)
		return id
	}
	in := func(b *serialization.Builder, dims ...uint32) int32 {
		id := ten(b, dims...)
		b.Inputs(id)
		return id
	}
	cache := func(b *serialization.Builder, dims ...uint32) int32 {
		n := uint32(4)
		for _, d := range dims {
			n *= d
		}
		c := b.InlineConst(f, dims, make([]byte, n))
		p := ten(b, dims...)
		b.Op("et_vk.prepack.default", c, p)
		return p
	}
	kv := func(b *serialization.Builder, pos int64, mask int32, drop float64, kc int32) {
		q, k, v := in(b, 1, 2, 4, 8), in(b, 1, 2, 2, 8), in(b, 1, 2, 2, 8)
		if kc < 0 {
			kc = cache(b, 1, 6, 2, 8)
		}
		out := ten(b, 1, 2, 4, 8)
		b.Op("sdpa_with_kv_cache.default", q, k, v, kc, cache(b, 1, 6, 2, 8), b.Int(pos), b.Int(2), mask, b.Double(drop), b.Bool(true), b.Null(), out)
		b.Outputs(out)
	}
	wantArgError(t, openTestDevice(t), map[string]func(b *serialization.Builder){
		"sdpa_with_kv_cache/pos past the cache": func(b *serialization.Builder) { kv(b, 5, b.Null(), 0, -1) },
		"sdpa_with_kv_cache/negative pos":       func(b *serialization.Builder) { kv(b, -1, b.Null(), 0, -1) },
		"sdpa_with_kv_cache/mask":               func(b *serialization.Builder) { kv(b, 0, in(b, 2, 2), 0, -1) },
		"sdpa_with_kv_cache/dropout":            func(b *serialization.Builder) { kv(b, 0, b.Null(), 0.1, -1) },
		"sdpa_with_kv_cache/cache shape": func(b *serialization.Builder) {
			kv(b, 0, b.Null(), 0, b.InlineConst(f, []uint32{1, 6, 3, 8}, make([]byte, 4*144)))
		},
		"update_cache/head mismatch": func(b *serialization.Builder) {
			b.Op("update_cache.default", in(b, 1, 2, 3, 8), cache(b, 1, 6, 2, 8), b.Int(0), ten(b, 1))
		},
		"custom_sdpa/heads": func(b *serialization.Builder) {
			out := ten(b, 1, 2, 3, 8)
			b.Op("llama.custom_sdpa.default", in(b, 1, 2, 3, 8), cache(b, 1, 6, 2, 8), cache(b, 1, 6, 2, 8), b.Int(0), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
			b.Outputs(out)
		},
		"et_vk.sdpa/head dim": func(b *serialization.Builder) {
			out := ten(b, 1, 2, 3, 8)
			b.Op("et_vk.sdpa.default", in(b, 1, 2, 3, 8), in(b, 1, 2, 5, 4), in(b, 1, 2, 5, 8), b.Null(), b.Null(), out)
			b.Outputs(out)
		},
		"et_vk.sdpa/mask shape": func(b *serialization.Builder) {
			out := ten(b, 1, 2, 3, 8)
			b.Op("et_vk.sdpa.default", in(b, 1, 2, 3, 8), in(b, 1, 2, 5, 8), in(b, 1, 2, 5, 8), in(b, 3, 4), b.Null(), out)
			b.Outputs(out)
		},
		"et_vk.sdpa/int32 q": func(b *serialization.Builder) {
			q := b.Tensor(serialization.Int32, []uint32{1, 2, 3, 8}, -1)
			b.Inputs(q)
			out := ten(b, 1, 2, 3, 8)
			b.Op("et_vk.sdpa.default", q, in(b, 1, 2, 5, 8), in(b, 1, 2, 5, 8), b.Null(), b.Null(), out)
			b.Outputs(out)
		},
		"sdpa/mask and causal": func(b *serialization.Builder) {
			out := ten(b, 2, 3, 8)
			b.Op("aten.scaled_dot_product_attention.default", in(b, 2, 3, 8), in(b, 2, 3, 8), in(b, 2, 3, 8), in(b, 3, 3), b.Double(0), b.Bool(true), b.Null(), b.Bool(false), out)
			b.Outputs(out)
		},
		"rope/freqs shape": func(b *serialization.Builder) {
			qo, ko := ten(b, 1, 2, 4, 8), ten(b, 1, 2, 2, 8)
			b.Op("et_vk.apply_rotary_emb.default", in(b, 1, 2, 4, 8), in(b, 1, 2, 2, 8), in(b, 2, 8), in(b, 2, 8), b.ValueList(qo, ko))
			b.Outputs(qo)
		},
		"rope/odd head dim": func(b *serialization.Builder) {
			qo, ko := ten(b, 1, 2, 4, 7), ten(b, 1, 2, 2, 7)
			b.Op("et_vk.apply_rotary_emb.default", in(b, 1, 2, 4, 7), in(b, 1, 2, 2, 7), in(b, 2, 3), in(b, 2, 3), b.ValueList(qo, ko))
			b.Outputs(qo)
		},
		"rope_hf/start past the table": func(b *serialization.Builder) {
			qo, ko := ten(b, 1, 2, 4, 8), ten(b, 1, 2, 2, 8)
			b.Op("et_vk.apply_rotary_emb_hf.default", in(b, 1, 2, 4, 8), in(b, 1, 2, 2, 8), in(b, 4, 8), in(b, 4, 8), b.Int(3), b.ValueList(qo, ko))
			b.Outputs(qo)
		},
		"rope_interleaved/freqs size": func(b *serialization.Builder) {
			out := ten(b, 1, 3, 4)
			b.Op("et_vk.apply_rotary_emb_interleaved.default", in(b, 1, 3, 4), in(b, 3, 2), out)
			b.Outputs(out)
		},
	})
}
