package opstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// BenchmarkMatmul runs square mm and linear graphs (weight and bias as named
// constants bound directly) with the vec4 and the scalar kernel side by
// side. One Execute uploads the N×N input, runs the dispatches and reads the
// N×N output back; GFLOP/s counts 2·N³ per Execute.
//
//	go test -run '^$' -bench Matmul ./ops/opstest
func BenchmarkMatmul(b *testing.B) {
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	paths := []struct {
		name string
		path ops.MatmulPath
	}{{"vec4", ops.MatmulAuto}, {"scalar", ops.MatmulScalar}}
	for _, op := range []string{"mm", "linear"} {
		for _, n := range []int64{256, 512} {
			for _, p := range paths {
				b.Run(fmt.Sprintf("%s/N%d/%s", op, n, p.name), func(b *testing.B) {
					benchMatmul(b, dev, op, n, p.path)
				})
			}
		}
	}
}

func benchMatmul(b *testing.B, dev *gpu.Device, op string, n int64, path ops.MatmulPath) {
	prev := ops.SetMatmulPath(path)
	defer ops.SetMatmulPath(prev)

	r := rand.New(rand.NewPCG(1, 2))
	f := serialization.Float32
	sb := serialization.NewBuilder()
	x := sb.Tensor(f, []uint32{uint32(n), uint32(n)}, -1)
	w, _ := sb.NamedConst(f, []uint32{uint32(n), uint32(n)}, RandTensor(r, f, []int64{n, n}, -1, 1).Encode())
	out := sb.Tensor(f, []uint32{uint32(n), uint32(n)}, -1)
	if op == "mm" {
		sb.Op("aten.mm.default", x, w, out)
	} else {
		bias, _ := sb.NamedConst(f, []uint32{uint32(n)}, RandTensor(r, f, []int64{n}, -1, 1).Encode())
		sb.Op("aten.linear.default", x, w, bias, out)
	}
	sb.Inputs(x)
	sb.Outputs(out)
	g := buildBenchGraph(b, dev, sb)
	defer g.Close()

	in := []graph.Tensor{{DType: f, Shape: []int64{n, n}, Data: RandTensor(r, f, []int64{n, n}, -1, 1).Encode()}}
	ctx := context.Background()
	// The first Execute JIT-compiles the kernel; keep it out of the timing.
	if _, err := g.Execute(ctx, in); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := g.Execute(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(2*float64(n*n*n)/sec/1e9, "GFLOP/s")
	b.ReportMetric(sec*1e6, "µs/exec")
}

func buildBenchGraph(b *testing.B, dev *gpu.Device, sb *serialization.Builder) *graph.WebGPUGraph {
	b.Helper()
	raw, err := sb.Blob()
	if err != nil {
		b.Fatal(err)
	}
	blob, err := serialization.DecodeBlob(raw)
	if err != nil {
		b.Fatal(err)
	}
	named := serialization.NewNamedDataMap()
	for _, nb := range sb.NamedBlobs() {
		if err := named.Add(nb.Key, nb.Data); err != nil {
			b.Fatal(err)
		}
	}
	g, err := graph.Build(context.Background(), dev, blob, graph.Options{NamedData: named})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// BenchmarkAttention runs llama.custom_sdpa over prepacked KV caches
// ([1, ctx, 8, 64] each, 32 query heads): decode (one query row per head)
// and a 64-row prefill chunk, both attending ctx keys. GFLOP/s counts the
// two ctx·64 products per query row and head.
//
//	go test -run '^$' -bench Attention ./ops/opstest
func BenchmarkAttention(b *testing.B) {
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	for _, sq := range []int64{1, 64} {
		for _, ctx := range []int64{512, 2048} {
			b.Run(fmt.Sprintf("S%d/ctx%d", sq, ctx), func(b *testing.B) {
				benchAttention(b, dev, sq, ctx)
			})
		}
	}
}

func benchAttention(b *testing.B, dev *gpu.Device, sq, ctx int64) {
	const hq, hkv, d = 32, 8, 64
	r := rand.New(rand.NewPCG(1, 2))
	f := serialization.Float32
	sb := serialization.NewBuilder()
	qs, cs := []int64{1, sq, hq, d}, []int64{1, ctx, hkv, d}
	q := sb.Tensor(f, Dims(qs), -1)
	kc := cacheSrc(sb, RandTensor(r, f, cs, -1, 1))
	vc := cacheSrc(sb, RandTensor(r, f, cs, -1, 1))
	out := sb.Tensor(f, Dims(qs), -1)
	sb.Op("llama.custom_sdpa.default", q, kc, vc, sb.Int(ctx-sq), sb.Null(), sb.Double(0), sb.Bool(true), sb.Null(), out)
	sb.Inputs(q)
	sb.Outputs(out)
	g := buildBenchGraph(b, dev, sb)
	defer g.Close()

	in := []graph.Tensor{{DType: f, Shape: qs, Data: RandTensor(r, f, qs, -1, 1).Encode()}}
	c := context.Background()
	if _, err := g.Execute(c, in); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := g.Execute(c, in); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(4*float64(sq*hq*ctx*d)/sec/1e9, "GFLOP/s")
	b.ReportMetric(sec*1e6, "µs/exec")
}
