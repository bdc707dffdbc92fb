package graph

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/prepack"
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// testCopyKernel copies n u32 words; the test op below uses it to expose a
// packed weight as a graph output.
var testCopyKernel = &shaders.Kernel{Name: "test copy", Entry: "main", WorkgroupSize: 64,
	Layout: shaders.Layout(1, 1, true), Source: `
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
struct P { n: u32, a: u32, b: u32, c: u32 }
@group(0) @binding(2) var<uniform> p: P;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = g.x + g.y * nw.x * 64u;
  if (i < p.n) { y[i] = x[i]; }
}`}

// test.packed_transpose [w, out]: out = the transpose packing of w.
// test.packed_identity [w, out] reads w through PackWeight as exported and
// is registered as packing arg 0, so a constant w used only there gets no
// buffer of its own.
func init() {
	ops.RegisterOp(ops.Op{Name: "test.packed_identity", Packed: []int{0}, Run: func(b ops.Builder, args []int32) error {
		w, err := b.Tensor(args[0])
		if err != nil {
			return err
		}
		packed, err := b.PackWeight(args[0], ops.IdentitySpec(w))
		if err != nil {
			return err
		}
		return testCopy(b, packed, args[1])
	}})
	ops.Register("test.packed_transpose", func(b ops.Builder, args []int32) error {
		packed, err := packTransposed(b, args[0])
		if err != nil {
			return err
		}
		return testCopy(b, packed, args[1])
	})
	// The same, failing when the packing already has a buffer while the
	// op records: weights get their buffers in one place, after the
	// recording (weights.go).
	ops.Register("test.packed_transpose_placed", func(b ops.Builder, args []int32) error {
		packed, err := packTransposed(b, args[0])
		if err != nil {
			return err
		}
		if ts := b.(*opBuilder).g.tensors[packed.ID]; ts.buf != nil || !ts.placed {
			return fmt.Errorf("packed value %d has a buffer while its op records", packed.ID)
		}
		return testCopy(b, packed, args[1])
	})
}

// packTransposed is the transpose packing of the weight id.
func packTransposed(b ops.Builder, id int32) (ops.Tensor, error) {
	w, err := b.Tensor(id)
	if err != nil {
		return ops.Tensor{}, err
	}
	spec, err := ops.TransposeSpec(w, b.MaxWorkgroupsPerDim())
	if err != nil {
		return ops.Tensor{}, err
	}
	return b.PackWeight(id, spec)
}

// testCopy copies packed into out.
func testCopy(b ops.Builder, packed ops.Tensor, outID int32) error {
	out, err := ops.Output(b, 1, outID, packed.DType, packed.Dims)
	if err != nil {
		return err
	}
	return testDispatch(b, testCopyKernel, []int32{packed.ID}, []int32{out.ID}, out.Numel)
}

// testDispatch dispatches a test kernel whose params are the element count
// n, one invocation per element in workgroups of 64.
func testDispatch(b ops.Builder, k *shaders.Kernel, inputs, outputs []int32, n int64) error {
	var p ops.Params
	p.U32(uint32(n))
	grid, err := ops.Grid(uint64(n), 64, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	return b.Dispatch(k, inputs, outputs, p.Bytes(), grid)
}

// packedGraph is a weight [r, c] (named data, behind et_vk.prepack) whose
// transpose packing is the output.
func packedGraph(t testing.TB, r, c uint32, seed uint64) ([]byte, *serialization.NamedDataMap, []float32) {
	rng := rand.New(rand.NewPCG(seed, 1))
	w := make([]float32, r*c)
	raw := make([]byte, 4*len(w))
	for i := range w {
		w[i] = rng.Float32()
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(w[i]))
	}
	b := serialization.NewBuilder()
	f := serialization.Float32
	cst, _ := b.NamedConst(f, []uint32{r, c}, raw)
	p := b.Tensor(f, []uint32{r, c}, -1)
	b.Op("et_vk.prepack.default", cst, p)
	out := b.Tensor(f, []uint32{c, r}, -1)
	b.Op("test.packed_transpose", p, out)
	b.Outputs(out)
	blob, named := BuiltBlob(t, b)
	return blob, named, w
}

func checkTransposed(t *testing.T, g *WebGPUGraph, w []float32, r, c int) {
	t.Helper()
	out, err := g.Execute(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := out[0].Float32s()
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if got[j*r+i] != w[i*c+j] {
				t.Fatalf("packed[%d][%d] = %v, want %v", j, i, got[j*r+i], w[i*c+j])
			}
		}
	}
}

// TestPackedWeightPlaced: a packing asked for while recording gets its
// buffer, and its pack kernel runs, after the recording (placeWeights),
// and holds the packed weight then.
func TestPackedWeightPlaced(t *testing.T) {
	blob, named, w := packedGraph(t, 5, 7, 3)
	b, err := serialization.DecodeBlob(blob)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b.Graph.Chain {
		if b.Graph.Chain[i].Name == "test.packed_transpose" {
			b.Graph.Chain[i].Name = "test.packed_transpose_placed"
		}
	}
	g, err := Build(context.Background(), device(t), b, Options{NamedData: named})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	checkTransposed(t, g, w, 5, 7)
}

// TestPackedWeightCache: the first load packs on the device and saves the
// packing; a second load takes it from the cache file and packs nothing;
// both give the transposed weight.
func TestPackedWeightCache(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "packed.cache")
	blob, named, w := packedGraph(t, 37, 45, 1)
	for i, want := range []PackedCacheStats{{Misses: 1, Bytes: 37 * 45 * 4}, {Hits: 1, Bytes: 37 * 45 * 4}} {
		g, err := Load(ctx, device(t), blob, Options{NamedData: named, PackedCache: path})
		if err != nil {
			t.Fatal(err)
		}
		if s := g.PackedCacheStats(); s != want {
			t.Errorf("load %d: %+v, want %+v", i, s, want)
		}
		checkTransposed(t, g, w, 37, 45)
		g.Close()
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("load %d: no cache file: %v", i, err)
		}
	}
	// Without a cache it packs every time.
	g, err := Load(ctx, device(t), blob, Options{NamedData: named})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if s := g.PackedCacheStats(); s.Misses != 1 || s.Hits != 0 {
		t.Errorf("no cache: %+v", s)
	}
	checkTransposed(t, g, w, 37, 45)
}

// TestPackedWeightCacheCorrupt: a cache file whose packed region has a
// flipped byte is not served: the load counts the entry corrupt, packs the
// weight again (the output is the right transpose), and rewrites the
// entry, so the next load (here, and in a process that opens the file
// afresh) hits. The cache reports the problem to the load that met it.
func TestPackedWeightCacheCorrupt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first := filepath.Join(dir, "first.cache")
	blob, named, w := packedGraph(t, 37, 45, 3)
	load := func(path string, want PackedCacheStats) *WebGPUGraph {
		t.Helper()
		g, err := Load(ctx, device(t), blob, Options{NamedData: named, PackedCache: path})
		if err != nil {
			t.Fatal(err)
		}
		if s := g.PackedCacheStats(); s != want {
			t.Errorf("%s: %+v, want %+v", filepath.Base(path), s, want)
		}
		checkTransposed(t, g, w, 37, 45)
		return g
	}
	const size = 37 * 45 * 4
	load(first, PackedCacheStats{Misses: 1, Bytes: size}).Close()
	b, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	// The cache is per path and process: a new path reads the file anew.
	// The one region starts the file.
	flipped := filepath.Join(dir, "flipped.cache")
	b[size/2] ^= 0x20
	if err := os.WriteFile(flipped, b, 0o644); err != nil {
		t.Fatal(err)
	}
	g := load(flipped, PackedCacheStats{Misses: 1, Corrupt: 1, Bytes: size})
	errs := g.PackedCacheErrors()
	if len(errs) != 1 || errs[0].Op != prepack.CacheVerify || !errors.Is(errs[0], prepack.ErrCorrupt) {
		t.Errorf("cache errors %v, want one corrupt entry", errs)
	}
	g.Close()
	// The next load in this process hits the rewritten entry and is told
	// of no problem: the errors are the load's own.
	g = load(flipped, PackedCacheStats{Hits: 1, Bytes: size})
	if e := g.PackedCacheErrors(); len(e) != 0 {
		t.Errorf("cache errors %v in the load after the rewrite", e)
	}
	g.Close()
	rewritten, err := os.ReadFile(flipped)
	if err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh.cache")
	if err := os.WriteFile(fresh, rewritten, 0o644); err != nil {
		t.Fatal(err)
	}
	g = load(fresh, PackedCacheStats{Hits: 1, Bytes: size})
	if e := g.PackedCacheErrors(); len(e) != 0 {
		t.Errorf("cache errors %v after the rewrite", e)
	}
	g.Close()
}

// TestPackedWeightLoadHeap: a load whose packing comes from the cache
// allocates (Go heap) far less than the weight's size: the bytes go from
// the mapping to the device.
func TestPackedWeightLoadHeap(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "packed.cache")
	const r, c = 1024, 2048 // 8 MiB
	blob, named, w := packedGraph(t, r, c, 2)
	for i := 0; i < 2; i++ {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g, err := Load(ctx, device(t), blob, Options{NamedData: named, PackedCache: path, SkipWarmup: true})
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		heap := after.TotalAlloc - before.TotalAlloc
		t.Logf("load %d: %+v, %d heap bytes for %d weight bytes", i, g.PackedCacheStats(), heap, r*c*4)
		if heap > r*c*4/10 {
			t.Errorf("load %d allocated %d heap bytes, over 10%% of the %d weight bytes", i, heap, r*c*4)
		}
		if i == 1 {
			checkTransposed(t, g, w, r, c)
		}
		g.Close()
	}
}

// TestPackedArgDeferred: a weight used only through PackWeight (an op's
// registered packed argument) gets no buffer of its own; the identity
// packing holds it as exported.
func TestPackedArgDeferred(t *testing.T) {
	b := serialization.NewBuilder()
	f := serialization.Float32
	raw := make([]byte, 4*6*5)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	w, _ := b.NamedConst(f, []uint32{6, 5}, raw)
	out := b.Tensor(f, []uint32{6, 5}, -1)
	b.Op("test.packed_identity", w, out)
	b.Outputs(out)
	blob, named := BuiltBlob(t, b)
	g, err := Load(context.Background(), device(t), blob, Options{NamedData: named})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if s := g.MemoryStats(); s.NumDeferredConstants != 1 {
		t.Errorf("%d deferred constants, want 1 (the packed weight)", s.NumDeferredConstants)
	}
	res, err := g.Execute(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res[0].Data) != string(raw) {
		t.Errorf("identity packing changed the weight")
	}
}
