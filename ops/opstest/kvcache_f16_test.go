package opstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// halfKVTol is the tolerance of the half KV cache cases against the
// reference that rounds the cached k and v to half as the device does:
// only float32 arithmetic separates them, so it is far tighter than the
// rounding itself (about 5e-4 relative on each cached value), which a
// kernel that skipped or garbled it would show.
var halfKVTol = Tolerance{Abs: 2e-6, Rel: 2e-5}

// halfKVTolLoose is fp16 graphs' tolerance: for caches that stay float32
// (graph outputs, odd head_dim) the reference still rounds them.
var halfKVTolLoose = Tolerance{Abs: 1e-3, Rel: 1e-2}

// halfKVSpec is a prefill-then-decode chain on one pair of caches
// [B, maxS, Hkv, D]: a P-token step at input_pos 0, then one-token steps
// at P, P+1, ..., each with its own q, k and v inputs.
type halfKVSpec struct {
	b, hq, hkv, d, maxS, prefill, decode int64
	split                                bool // update_cache ×2 + custom_sdpa, not sdpa_with_kv_cache
	direct                               bool // caches passed as the constants themselves, not prepacked
	cacheOut                             bool // v_cache is also a graph output: it stays float32
	// attendFirst (split): the prefill's custom_sdpa runs before its
	// update_cache ops, so it reads the caches' initial values.
	attendFirst bool
}

func (c halfKVSpec) String() string {
	n := fmt.Sprintf("B%d_Hq%d_Hkv%d_D%d_max%d_P%d_steps%d", c.b, c.hq, c.hkv, c.d, c.maxS, c.prefill, c.decode)
	if c.split {
		n = "update_cache+custom_sdpa/" + n
	} else {
		n = "sdpa_with_kv_cache/" + n
	}
	if c.direct {
		n += "/constant"
	}
	if c.cacheOut {
		n += "/v_cache_output"
	}
	if c.attendFirst {
		n += "/attend_first"
	}
	return n
}

// build writes the chain into b and returns its random inputs.
func (c halfKVSpec) build(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	f := serialization.Float32
	cs := []int64{c.b, c.maxS, c.hkv, c.d}
	kc0, vc0 := RandTensor(r, f, cs, -1, 1), RandTensor(r, f, cs, -1, 1)
	var kc, vc int32
	if c.direct {
		kc, _ = b.NamedConst(f, Dims(cs), kc0.Encode())
		vc, _ = b.NamedConst(f, Dims(cs), vc0.Encode())
	} else {
		kc, vc = cacheSrc(b, kc0), cacheSrc(b, vc0)
	}
	var inputs []*reference.Tensor
	var outs []int32
	pos := int64(0)
	for step := int64(0); step <= c.decode; step++ {
		s := int64(1)
		if step == 0 {
			s = c.prefill
		}
		qv := RandTensor(r, f, []int64{c.b, s, c.hq, c.d}, -1, 1)
		kv := RandTensor(r, f, []int64{c.b, s, c.hkv, c.d}, -1, 1)
		vv := RandTensor(r, f, []int64{c.b, s, c.hkv, c.d}, -1, 1)
		inputs = append(inputs, qv, kv, vv)
		q, k, v := b.Tensor(f, Dims(qv.Shape), -1), b.Tensor(f, Dims(kv.Shape), -1), b.Tensor(f, Dims(vv.Shape), -1)
		b.Inputs(q, k, v)
		out := b.Tensor(f, Dims(qv.Shape), -1)
		if c.split {
			first := c.attendFirst && step == 0
			if first {
				b.Op("llama.custom_sdpa.default", q, kc, vc, b.Int(pos), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
			}
			b.Op("update_cache.default", k, kc, b.Int(pos), b.Tensor(f, []uint32{1}, -1))
			b.Op("update_cache.default", v, vc, b.Int(pos), b.Tensor(f, []uint32{1}, -1))
			if !first {
				b.Op("llama.custom_sdpa.default", q, kc, vc, b.Int(pos), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
			}
		} else {
			b.Op("sdpa_with_kv_cache.default", q, k, v, kc, vc, b.Int(pos), b.Int(s), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
		}
		outs = append(outs, out)
		pos += s
	}
	if c.cacheOut {
		outs = append(outs, vc)
	}
	b.Outputs(outs...)
	return inputs
}

func (c halfKVSpec) testCase() Case {
	tol := halfKVTol
	if c.cacheOut {
		tol = halfKVTolLoose
	}
	return Case{Name: "half_kv/" + c.String(), Tol: tol, Build: c.build}
}

// halfKVSpecs: grouped-query heads, a head dim that is not a multiple of 4
// (the kernel's two-half tail chunk), batches of two, both cache styles,
// prepacked and constant caches, a prefill that reads the caches' initial
// (load-time rounded) values.
var halfKVSpecs = []halfKVSpec{
	{b: 1, hq: 8, hkv: 2, d: 8, maxS: 16, prefill: 5, decode: 3},
	{b: 1, hq: 8, hkv: 2, d: 8, maxS: 16, prefill: 5, decode: 3, split: true},
	{b: 2, hq: 6, hkv: 2, d: 6, maxS: 11, prefill: 3, decode: 4, direct: true},
	{b: 2, hq: 6, hkv: 2, d: 6, maxS: 11, prefill: 3, decode: 4, split: true},
	{b: 1, hq: 4, hkv: 1, d: 10, maxS: 9, prefill: 4, decode: 2, split: true, direct: true},
	{b: 2, hq: 4, hkv: 2, d: 6, maxS: 10, prefill: 4, decode: 2, split: true, attendFirst: true},
	{b: 1, hq: 2, hkv: 2, d: 64, maxS: 40, prefill: 7, decode: 3},
}

// TestKVCacheHalf runs prefill-then-decode chains with
// ops.Config.HalfKVCache under both memory plans, against the reference
// that reads the cached k and v rounded to half.
func TestKVCacheHalf(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	var cases []Case
	for _, s := range halfKVSpecs {
		cases = append(cases, s.testCase())
	}
	// One cache also a graph output (float32 there), one not (half).
	cases = append(cases, halfKVSpec{b: 1, hq: 4, hkv: 2, d: 8, maxS: 12, prefill: 3, decode: 2, split: true, cacheOut: true}.testCase())
	RunAgainst(t, GPU{Dev: dev, Kernels: ops.Config{HalfKVCache: true}}, Reference{Options: reference.Options{HalfKVCache: true}}, cases)
}

// TestKVCacheHalfFallback runs the cache attention conformance cases with
// ops.Config.HalfKVCache: their caches are graph outputs (float32, exact)
// or, for custom_sdpa's v_cache, only read by the cache ops (half, when
// head_dim is even); the outputs must match the half reference
// within fp16's tolerance.
func TestKVCacheHalfFallback(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	var cases []Case
	for _, c := range Cases {
		if strings.HasPrefix(c.Name, "sdpa_with_kv_cache/") || strings.HasPrefix(c.Name, "custom_sdpa/") {
			c.Tol = halfKVTolLoose
			cases = append(cases, c)
		}
	}
	if len(cases) < 5 {
		t.Fatalf("%d cache attention cases", len(cases))
	}
	RunAgainst(t, GPU{Dev: dev, Kernels: ops.Config{HalfKVCache: true}}, Reference{Options: reference.Options{HalfKVCache: true}}, cases)
}

// TestKVCacheHalfBytes loads chains with and without
// ops.Config.HalfKVCache and checks what MemoryStats reports: each cache
// only the cache ops use takes 2 bytes an element instead of 4 (a
// prepacked cache) or 8 (a constant plus the op's writable copy); a cache
// that is also a graph output, or has an odd head_dim, stays float32
// and its output holds exactly the float32 values written.
func TestKVCacheHalfBytes(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	for _, c := range []struct {
		spec      halfKVSpec
		half      int   // caches held as halves
		perElem32 int64 // float32 load's bytes per cache element
	}{
		{halfKVSpec{b: 1, hq: 8, hkv: 2, d: 8, maxS: 32, prefill: 2, decode: 1}, 2, 4},
		{halfKVSpec{b: 1, hq: 8, hkv: 2, d: 8, maxS: 32, prefill: 2, decode: 1, direct: true}, 2, 8},
		{halfKVSpec{b: 1, hq: 8, hkv: 2, d: 8, maxS: 32, prefill: 2, decode: 1, split: true, cacheOut: true}, 1, 4},
		{halfKVSpec{b: 1, hq: 4, hkv: 2, d: 5, maxS: 32, prefill: 2, decode: 1}, 0, 4},
	} {
		t.Run(c.spec.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 0x5eed))
			b := serialization.NewBuilder()
			inputs := c.spec.build(b, r)
			memplan.PlanLikeExporter(b.Graph())
			numel := c.spec.b * c.spec.maxS * c.spec.hkv * c.spec.d
			stats := map[bool]graph.MemoryStats{}
			var outs map[bool][]graph.Tensor = map[bool][]graph.Tensor{}
			for _, half := range []bool{false, true} {
				blob, named, err := b.Decode()
				if err != nil {
					t.Fatal(err)
				}
				g, err := graph.Build(context.Background(), dev, blob, graph.Options{NamedData: named, Kernels: ops.Config{HalfKVCache: half}})
				if err != nil {
					t.Fatal(err)
				}
				stats[half] = g.MemoryStats()
				if outs[half], err = g.Execute(context.Background(), hostTensors(inputs...)); err != nil {
					t.Fatal(err)
				}
				g.Close()
			}
			hs, fs := stats[true], stats[false]
			if hs.NumHalfKVCaches != c.half || hs.HalfKVCacheBytes != int64(c.half)*numel*2 {
				t.Fatalf("%d half caches of %d bytes, want %d of %d", hs.NumHalfKVCaches, hs.HalfKVCacheBytes, c.half, int64(c.half)*numel*2)
			}
			if fs.NumHalfKVCaches != 0 || fs.HalfKVCacheBytes != 0 {
				t.Fatalf("float32 load: %d half caches", fs.NumHalfKVCaches)
			}
			if d, want := fs.TotalBytes()-hs.TotalBytes(), int64(c.half)*numel*(c.perElem32-2); d != want {
				t.Fatalf("float32 load holds %d bytes more, want %d\nfloat32 %+v\nhalf %+v", d, want, fs, hs)
			}
			if c.spec.cacheOut {
				// The float32 v_cache output: the same bits either way.
				n := len(outs[true]) - 1
				if got, want := outs[true][n].Data, outs[false][n].Data; string(got) != string(want) {
					t.Fatal("v_cache output differs from the float32 load's")
				}
			}
		})
	}
}

// TestKVCacheHalfRounding writes chosen values through update_cache into a
// half cache and reads them back through a one-key custom_sdpa, whose
// output is the cached v itself: every value must come back exactly as
// round-to-nearest-even to half gives it (ties both ways, signs, values
// half holds exactly, half subnormals, which lavapipe's pack2x16float
// keeps).
func TestKVCacheHalfRounding(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	vals := []float64{
		1 + 0x1p-11,    // tie: down to 1 (even)
		1 + 3*0x1p-11,  // tie: up to 1+2⁻⁹ (even)
		-(1 + 0x1p-11), // the same, negative
		1 + 0x1p-11 + 0x1p-20,
		0.1, -0.3333, 2048 + 1, 2048 + 3, 60000.7, 0.000123,
		0.5, -2, 0, 1024.25, 3.14159, -65504,
		3e-6, -1e-5, 6e-8, 2e-8, 1e-4, 5e-5, 7e-6, 1e-7, // half subnormals
	}
	f := serialization.Float32
	const d = 8
	n := int64(len(vals)) / d
	b := serialization.NewBuilder()
	shape := []int64{1, 1, n, d}
	q, k, v := b.Tensor(f, Dims(shape), -1), b.Tensor(f, Dims(shape), -1), b.Tensor(f, Dims(shape), -1)
	b.Inputs(q, k, v)
	zero := reference.New(f, []int64{1, 4, n, d})
	kc, vc := cacheSrc(b, zero), cacheSrc(b, zero)
	b.Op("update_cache.default", k, kc, b.Int(0), b.Tensor(f, []uint32{1}, -1))
	b.Op("update_cache.default", v, vc, b.Int(0), b.Tensor(f, []uint32{1}, -1))
	out := b.Tensor(f, Dims(shape), -1)
	b.Op("llama.custom_sdpa.default", q, kc, vc, b.Int(0), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
	b.Outputs(out)
	blob, named, err := b.Decode()
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(context.Background(), dev, blob, graph.Options{NamedData: named, Kernels: ops.Config{HalfKVCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if s := g.MemoryStats(); s.NumHalfKVCaches != 2 {
		t.Fatalf("%d half caches, want 2", s.NumHalfKVCaches)
	}
	qv, vv := reference.New(f, shape), reference.New(f, shape)
	copy(vv.V, vals)
	got, err := g.Execute(context.Background(), hostTensors(qv, qv, vv))
	if err != nil {
		t.Fatal(err)
	}
	res := decodeOut(t, got[0])
	for i, x := range vals {
		if want := reference.Round(serialization.Float16, x); res.V[i] != want {
			t.Errorf("value %v: read back %v, want %v", x, res.V[i], want)
		}
	}
}
