package graph

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestChunkLimitError: a constant over the (lowered) binding limit that
// some op cannot read in chunks is rejected with a *LimitError naming that
// op and the tensor, before any buffer exists, even when other readers
// could read it in chunks; read only by ops that can, it loads.
func TestChunkLimitError(t *testing.T) {
	dev := device(t)
	f := serialization.Float32
	const limit = 64*128 + 16
	w := make([]byte, 100*32*4) // [100, 32] float32: 12800 bytes
	for _, c := range []struct {
		name   string
		build  func(b *serialization.Builder, x, wt int32)
		op     string // "" when the load must succeed
		wantID int32
	}{
		{"add", func(b *serialization.Builder, x, wt int32) {
			out := b.Tensor(f, []uint32{100, 32}, -1)
			b.Op("aten.add.Tensor", wt, wt, b.Int(1), out)
			b.Outputs(out)
		}, "aten.add.Tensor", 1},
		{"linear and add", func(b *serialization.Builder, x, wt int32) {
			y := b.Tensor(f, []uint32{1, 100}, -1)
			b.Op("aten.linear.default", x, wt, b.Null(), y)
			out := b.Tensor(f, []uint32{100, 32}, -1)
			b.Op("aten.add.Tensor", wt, wt, b.Int(1), out)
			b.Outputs(y, out)
		}, "aten.add.Tensor", 1},
		{"permute", func(b *serialization.Builder, x, wt int32) {
			y := b.Tensor(f, []uint32{1, 100}, -1)
			b.Op("aten.permute_copy.default", wt, b.IntList(1, 0), y) // not chunkable either
			b.Outputs(y)
		}, "aten.permute_copy.default", 1},
		{"linear", func(b *serialization.Builder, x, wt int32) {
			y := b.Tensor(f, []uint32{1, 100}, -1)
			b.Op("aten.linear.default", x, wt, b.Null(), y)
			b.Outputs(y)
		}, "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			blob := buildBlob(t, func(b *serialization.Builder) {
				x := b.Tensor(f, []uint32{1, 32}, -1)
				b.Inputs(x)
				wt := b.InlineConst(f, []uint32{100, 32}, w)
				c.build(b, x, wt)
			})
			before := dev.LiveObjects()
			g, err := Load(context.Background(), dev, blob, Options{MaxBindingSize: limit, SkipWarmup: true})
			if c.op == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				if s := g.MemoryStats(); s.NumChunkedWeights != 1 || s.NumWeightChunks != 2 || s.ChunkedWeightBytes != int64(len(w)) {
					t.Errorf("stats %+v, want one weight of %d bytes in 2 chunks", s, len(w))
				}
				// Per chunk, the GEMV into its scratch output and the
				// copy into the output's columns.
				var chunks []int
				for _, d := range g.Dispatches() {
					if !d.Chunked {
						t.Errorf("dispatch %+v is not of a chunk", d)
					}
					chunks = append(chunks, d.Chunk)
				}
				if !slices.Equal(chunks, []int{0, 0, 1, 1}) {
					t.Errorf("dispatch chunks %v, want [0 0 1 1]", chunks)
				}
				return
			}
			var le *LimitError
			if !errors.As(err, &le) || !errors.Is(err, ErrDeviceLimit) || !errors.Is(err, ErrUnsupported) {
				t.Fatalf("got %v, want a *LimitError", err)
			}
			if le.Op != c.op || le.ValueID != c.wantID || le.Limit != limit {
				t.Errorf("LimitError %+v, want op %s, value %d, limit %d", le, c.op, c.wantID, limit)
			}
			for _, want := range []string{c.op, "value 1"} {
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

// BenchmarkChunkedLinear is a one-row linear [1, 256] × [120000, 256]ᵀ
// (123 MB of weight, under lavapipe's 128 MiB binding limit) whole and
// held in 2 chunks (MaxBindingSize 64 MiB): the cost of the chunked path
// (a GEMV per chunk into a scratch output, and a copy into the output).
func BenchmarkChunkedLinear(b *testing.B) {
	dev := device(b)
	f := serialization.Float32
	const n, k = 120000, 256
	w := make([]byte, n*k*4)
	for i := range w {
		w[i] = byte(i * 7)
	}
	bb := serialization.NewBuilder()
	x := bb.Tensor(f, []uint32{1, k}, -1)
	bb.Inputs(x)
	wt, _ := bb.NamedConst(f, []uint32{n, k}, w)
	y := bb.Tensor(f, []uint32{1, n}, -1)
	bb.Op("aten.linear.default", x, wt, bb.Null(), y)
	bb.Outputs(y)
	blob, nd := BuiltBlob(b, bb)
	in := []Tensor{{DType: f, Shape: []int64{1, k}, Data: make([]byte, k*4)}}
	for _, c := range []struct {
		name  string
		limit uint64
	}{{"whole", 0}, {"chunks2", 64 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			g, err := Load(context.Background(), dev, blob, Options{NamedData: nd, MaxBindingSize: c.limit})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			for b.Loop() {
				if _, err := g.Execute(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(g.MemoryStats().NumWeightChunks), "chunks")
		})
	}
}

// TestChunkedPackedCache: a FLOAT16 linear weight held in 2 chunks is read
// as packed halves chunk by chunk; the first load packs both chunks (2
// misses), the second takes both from the packed-weight cache file (2
// hits), keyed by the weight's content and the chunk's rows, and both
// compute the same (exact) result.
func TestChunkedPackedCache(t *testing.T) {
	const n, k = 100, 32
	path := filepath.Join(t.TempDir(), "packed.cache")
	h := serialization.Float16
	b := serialization.NewBuilder()
	x := b.Tensor(h, []uint32{1, k}, -1)
	b.Inputs(x)
	wb := make([]byte, n*k*2)
	for i := range n * k {
		// Small integers: exact in halves and in float32 sums.
		binary.LittleEndian.PutUint16(wb[2*i:], tensor.Float32ToHalf(float32(i%7-3)))
	}
	w, _ := b.NamedConst(h, []uint32{n, k}, wb)
	y := b.Tensor(h, []uint32{1, n}, -1)
	b.Op("aten.linear.default", x, w, b.Null(), y)
	b.Outputs(y)
	xb := make([]byte, k*2)
	for i := range k {
		binary.LittleEndian.PutUint16(xb[2*i:], tensor.Float32ToHalf(float32(i%3)))
	}
	var first []byte
	for i, want := range []PackedCacheStats{{Misses: 2, Bytes: n * k * 2}, {Hits: 2, Bytes: n * k * 2}} {
		g := loadBuilt(t, b, Options{PackedCache: path, MaxBindingSize: 64*k*4 + 16})
		if got := g.PackedCacheStats(); got != want {
			t.Errorf("load %d: %+v, want %+v", i, got, want)
		}
		if s := g.MemoryStats(); s.NumChunkedWeights != 1 || s.NumWeightChunks != 2 {
			t.Errorf("load %d: %d chunked weights in %d chunks, want 1 in 2", i, s.NumChunkedWeights, s.NumWeightChunks)
		}
		res, err := g.Execute(context.Background(), []Tensor{{DType: h, Shape: []int64{1, k}, Data: xb}})
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = res[0].Data
			for j := range n {
				var sum float32
				for c := range k {
					sum += float32((j*k+c)%7-3) * float32(c%3)
				}
				if got := tensor.HalfToFloat32(binary.LittleEndian.Uint16(first[2*j:])); got != sum {
					t.Fatalf("y[%d] = %v, want %v", j, got, sum)
				}
			}
		} else if !bytes.Equal(res[0].Data, first) {
			t.Errorf("load %d: another result than load 0", i)
		}
	}
}

// TestChunkedMemoryLimit: a weight held in chunks counts against the
// memory limit (its chunks are made at load), though it has no buffer of
// its own in the memory plan.
func TestChunkedMemoryLimit(t *testing.T) {
	f := serialization.Float32
	blob := buildBlob(t, func(b *serialization.Builder) {
		x := b.Tensor(f, []uint32{1, 32}, -1)
		b.Inputs(x)
		w := b.InlineConst(f, []uint32{100, 32}, make([]byte, 100*32*4))
		y := b.Tensor(f, []uint32{1, 100}, -1)
		b.Op("aten.linear.default", x, w, b.Null(), y)
		b.Outputs(y)
	})
	opts := Options{MaxBindingSize: 64*128 + 16, SkipWarmup: true, MemoryLimit: 100 * 32 * 4}
	if _, err := Load(context.Background(), device(t), blob, opts); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("got %v, want the memory limit's ErrUnsupported", err)
	}
	opts.MemoryLimit = 2 * 100 * 32 * 4
	g, err := Load(context.Background(), device(t), blob, opts)
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
}
