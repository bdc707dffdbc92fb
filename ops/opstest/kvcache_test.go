package opstest

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// kvShape is the attention geometry of the multi-step tests: q [B, S, Hq,
// D] per step, caches [B, maxS, Hkv, D].
const (
	kvB, kvS, kvHq, kvHkv, kvD, kvMaxS = 1, 2, 4, 2, 8, 8
)

// kvStepRef runs one decode step on the reference: a graph whose caches
// start as the given host state, sdpa_with_kv_cache at pos. It returns the
// attention output; the caller advances the host caches itself.
func kvStepRef(q, k, v, kc, vc *reference.Tensor, pos int64) (*reference.Tensor, error) {
	b := serialization.NewBuilder()
	f := serialization.Float32
	qi, ki, vi := b.Tensor(f, Dims(q.Shape), -1), b.Tensor(f, Dims(k.Shape), -1), b.Tensor(f, Dims(v.Shape), -1)
	b.Inputs(qi, ki, vi)
	kci, vci := cacheSrc(b, kc), cacheSrc(b, vc)
	out := b.Tensor(f, Dims(q.Shape), -1)
	b.Op("sdpa_with_kv_cache.default", qi, ki, vi, kci, vci, b.Int(pos), b.Int(kvS), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
	b.Outputs(out)
	outs, err := runRef(b, []*reference.Tensor{q, k, v})
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// runRef encodes b and runs it on the reference interpreter.
func runRef(b *serialization.Builder, inputs []*reference.Tensor) ([]*reference.Tensor, error) {
	blob, named, err := b.Decode()
	if err != nil {
		return nil, err
	}
	return reference.Run(blob, named, inputs)
}

// kvShapes returns the shapes of q, of k and v, and of the caches.
func kvShapes() (qs, ks, cs []int64) {
	return []int64{kvB, kvS, kvHq, kvD}, []int64{kvB, kvS, kvHkv, kvD}, []int64{kvB, kvMaxS, kvHkv, kvD}
}

// kvOpen returns the shared device and a random source seeded with seed.
func kvOpen(t *testing.T, seed uint64) (*gpu.Device, *rand.Rand) {
	t.Helper()
	return testDevice(t), rand.New(rand.NewPCG(seed, 0x5eed))
}

// writeRows is the host model of a cache update: rows pos.. of cache take
// value's rows.
func writeRows(cache, value *reference.Tensor, pos int64) {
	row := int64(kvHkv * kvD)
	for b := int64(0); b < kvB; b++ {
		copy(cache.V[(b*kvMaxS+pos)*row:(b*kvMaxS+pos+kvS)*row], value.V[b*kvS*row:(b+1)*kvS*row])
	}
}

// buildKV encodes b and builds it on dev.
func buildKV(t *testing.T, dev *gpu.Device, b *serialization.Builder) *graph.WebGPUGraph {
	t.Helper()
	blob, named, err := b.Decode()
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(context.Background(), dev, blob, graph.Options{NamedData: named})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func hostTensors(ts ...*reference.Tensor) []graph.Tensor {
	out := make([]graph.Tensor, len(ts))
	for i, x := range ts {
		out[i] = graph.Tensor{DType: x.DType, Shape: x.Shape, Data: x.Encode()}
	}
	return out
}

func decodeOut(t *testing.T, g graph.Tensor) *reference.Tensor {
	t.Helper()
	r, err := reference.Decode(g.DType, g.Shape, g.Data)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestKVCacheSteps is a decode loop: one graph whose KV caches are
// prepacked constants, executed three times with input_pos (a SymInt graph
// input) at 0, 2 and 4. Each step's output must match a reference that
// replays the steps, which only holds if every step's cache writes persist
// in the caches' buffers into the next Execute.
func TestKVCacheSteps(t *testing.T) {
	t.Parallel()
	// The caches come through et_vk.prepack, or (as the exporter passes them
	// to sdpa_with_kv_cache, which prepacks its own inputs) as the
	// constants themselves, which the op keeps a writable copy of.
	for _, direct := range []bool{false, true} {
		name := "prepacked"
		if direct {
			name = "constant"
		}
		t.Run(name, func(t *testing.T) { kvCacheSteps(t, direct) })
	}
}

func kvCacheSteps(t *testing.T, direct bool) {
	dev, r := kvOpen(t, 7)
	f := serialization.Float32
	qs, ks, cs := kvShapes()
	kc0, vc0 := RandTensor(r, f, cs, -1, 1), RandTensor(r, f, cs, -1, 1)

	b := serialization.NewBuilder()
	qi, ki, vi := b.Tensor(f, Dims(qs), -1), b.Tensor(f, Dims(ks), -1), b.Tensor(f, Dims(ks), -1)
	pos := b.SymInt(0)
	b.Inputs(qi, ki, vi, pos)
	var kci, vci int32
	if direct {
		kci, _ = b.NamedConst(f, Dims(cs), kc0.Encode())
		vci, _ = b.NamedConst(f, Dims(cs), vc0.Encode())
	} else {
		kci, vci = cacheSrc(b, kc0), cacheSrc(b, vc0)
	}
	out := b.Tensor(f, Dims(qs), -1)
	b.Op("sdpa_with_kv_cache.default", qi, ki, vi, kci, vci, pos, b.Int(kvS), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
	b.Outputs(out)
	g := buildKV(t, dev, b)
	defer g.Close()

	kc, vc := cloneRef(kc0), cloneRef(vc0)
	for step, p := range []int64{0, 2, 4} {
		q, k, v := RandTensor(r, f, qs, -1, 1), RandTensor(r, f, ks, -1, 1), RandTensor(r, f, ks, -1, 1)
		want, err := kvStepRef(q, k, v, kc, vc, p)
		if err != nil {
			t.Fatal(err)
		}
		writeRows(kc, k, p)
		writeRows(vc, v, p)
		in := hostTensors(q, k, v)
		// A SymInt input travels as a one-element int64 tensor.
		in = append(in, graph.Tensor{DType: serialization.Int64, Shape: []int64{1}, Data: binary.LittleEndian.AppendUint64(nil, uint64(p))})
		got, err := g.Execute(context.Background(), in)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if err := Compare(decodeOut(t, got[0]), want, attnTol); err != nil {
			t.Fatalf("step %d (input_pos %d): %v", step, p, err)
		}
	}
}

// TestKVCacheChain runs three decode steps as three chained
// sdpa_with_kv_cache ops on one pair of prepacked caches (input_pos 0, 2,
// 4 as Int values), checks every step's output against the step-by-step
// reference, and executes the graph twice more with fresh inputs: each
// step must see the rows the previous ops wrote in the same Execute, and
// stale rows from the previous Execute must be overwritten, not mixed in.
func TestKVCacheChain(t *testing.T) {
	t.Parallel()
	dev, r := kvOpen(t, 9)
	f := serialization.Float32
	qs, ks, cs := kvShapes()
	kc0, vc0 := RandTensor(r, f, cs, -1, 1), RandTensor(r, f, cs, -1, 1)
	steps := []int64{0, 2, 4}

	b := serialization.NewBuilder()
	kci, vci := cacheSrc(b, kc0), cacheSrc(b, vc0)
	var outs []int32
	for _, p := range steps {
		qi, ki, vi := b.Tensor(f, Dims(qs), -1), b.Tensor(f, Dims(ks), -1), b.Tensor(f, Dims(ks), -1)
		b.Inputs(qi, ki, vi)
		out := b.Tensor(f, Dims(qs), -1)
		b.Op("sdpa_with_kv_cache.default", qi, ki, vi, kci, vci, b.Int(p), b.Int(kvS), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
		outs = append(outs, out)
	}
	b.Outputs(outs...)
	g := buildKV(t, dev, b)
	defer g.Close()

	// Rows past the last step keep the prepacked values in every Execute;
	// the rest are rewritten before they are read.
	kc, vc := cloneRef(kc0), cloneRef(vc0)
	for run := 0; run < 3; run++ {
		var in []*reference.Tensor
		var want []*reference.Tensor
		for _, p := range steps {
			q, k, v := RandTensor(r, f, qs, -1, 1), RandTensor(r, f, ks, -1, 1), RandTensor(r, f, ks, -1, 1)
			in = append(in, q, k, v)
			w, err := kvStepRef(q, k, v, kc, vc, p)
			if err != nil {
				t.Fatal(err)
			}
			writeRows(kc, k, p)
			writeRows(vc, v, p)
			want = append(want, w)
		}
		got, err := g.Execute(context.Background(), hostTensors(in...))
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		for i := range want {
			if err := Compare(decodeOut(t, got[i]), want[i], attnTol); err != nil {
				t.Fatalf("run %d step %d: %v", run, i, fmt.Errorf("input_pos %d: %w", steps[i], err))
			}
		}
	}
}

func cloneRef(x *reference.Tensor) *reference.Tensor {
	return &reference.Tensor{DType: x.DType, Shape: append([]int64(nil), x.Shape...), V: append([]float64(nil), x.V...)}
}

// customStepRef runs llama.custom_sdpa at pos on the reference with caches
// starting as the given host state.
func customStepRef(q, kc, vc *reference.Tensor, pos int64) (*reference.Tensor, error) {
	b := serialization.NewBuilder()
	f := serialization.Float32
	qi := b.Tensor(f, Dims(q.Shape), -1)
	b.Inputs(qi)
	kci, vci := cacheSrc(b, kc), cacheSrc(b, vc)
	out := b.Tensor(f, Dims(q.Shape), -1)
	b.Op("llama.custom_sdpa.default", qi, kci, vci, b.Int(pos), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
	b.Outputs(out)
	outs, err := runRef(b, []*reference.Tensor{q})
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// TestKVCachePersists: attention first reads cache rows 4..5, then
// update_cache writes them. The first Execute sees the prepacked rows,
// every later one the rows the previous Execute wrote, so the outputs only
// match the replayed reference if cache writes persist across Execute
// calls in the cache tensors' own buffers.
func TestKVCachePersists(t *testing.T) {
	t.Parallel()
	dev, r := kvOpen(t, 11)
	f := serialization.Float32
	const pos = 4
	qs, ks, cs := kvShapes()
	kc0, vc0 := RandTensor(r, f, cs, -1, 1), RandTensor(r, f, cs, -1, 1)

	b := serialization.NewBuilder()
	qi, ki, vi := b.Tensor(f, Dims(qs), -1), b.Tensor(f, Dims(ks), -1), b.Tensor(f, Dims(ks), -1)
	b.Inputs(qi, ki, vi)
	kci, vci := cacheSrc(b, kc0), cacheSrc(b, vc0)
	out := b.Tensor(f, Dims(qs), -1)
	b.Op("llama.custom_sdpa.default", qi, kci, vci, b.Int(pos), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
	b.Op("update_cache.default", ki, kci, b.Int(pos), b.Tensor(f, []uint32{1}, -1))
	b.Op("update_cache.default", vi, vci, b.Int(pos), b.Tensor(f, []uint32{1}, -1))
	b.Outputs(out)
	g := buildKV(t, dev, b)
	defer g.Close()

	kc, vc := cloneRef(kc0), cloneRef(vc0)
	for run := 0; run < 3; run++ {
		q, k, v := RandTensor(r, f, qs, -1, 1), RandTensor(r, f, ks, -1, 1), RandTensor(r, f, ks, -1, 1)
		want, err := customStepRef(q, kc, vc, pos)
		if err != nil {
			t.Fatal(err)
		}
		writeRows(kc, k, pos)
		writeRows(vc, v, pos)
		got, err := g.Execute(context.Background(), hostTensors(q, k, v))
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if err := Compare(decodeOut(t, got[0]), want, attnTol); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
}
