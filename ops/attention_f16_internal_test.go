package ops

import (
	"errors"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// halfBuilder is a Builder with tensors, a Config and a HalfCacher; every
// other method is the nil interface's (a test that reaches one panics).
type halfBuilder struct {
	Builder
	tensors map[int32]Tensor
	half    map[int32]Tensor
	err     error
	cfg     Config
}

func (b *halfBuilder) Tensor(id int32) (Tensor, error) {
	t, ok := b.tensors[id]
	if !ok {
		return Tensor{}, fmt.Errorf("no tensor %d", id)
	}
	return t, nil
}

func (b *halfBuilder) HalfCache(id int32) (Tensor, bool, error) {
	if b.err != nil {
		return Tensor{}, false, b.err
	}
	t, ok := b.half[id]
	return t, ok, nil
}

func (b *halfBuilder) Config() Config { return b.cfg }

func TestHalfKVCacheDims(t *testing.T) {
	for _, c := range []struct {
		dims []int64
		want bool
	}{
		{[]int64{1, 16, 2, 8}, true},
		{[]int64{2, 5, 3, 6}, true},
		{[]int64{1, 16, 2, 7}, false}, // odd head_dim: a head's row would start mid-word
		{[]int64{1, 16, 4, 5}, false}, // even heads·head_dim is not enough
		{[]int64{1, 0, 2, 8}, false},
		{[]int64{16, 2, 8}, false},
	} {
		if got := HalfKVCacheDims(c.dims); got != c.want {
			t.Errorf("HalfKVCacheDims(%v) = %v, want %v", c.dims, got, c.want)
		}
	}
	if a := KVCacheArgs("sdpa_with_kv_cache.default"); len(a) != 2 || a[0] != 3 || a[1] != 4 {
		t.Errorf("sdpa_with_kv_cache cache args %v", a)
	}
	if a := KVCacheArgs("aten.add.Tensor"); a != nil {
		t.Errorf("aten.add cache args %v", a)
	}
}

// TestHalfCacheRejects: a half buffer of the wrong size, a builder error,
// and half caches a kernel could not address word by word are typed
// argument errors; without the option a HalfCacher is not asked.
func TestHalfCacheRejects(t *testing.T) {
	f := serialization.Float32
	cache := Tensor{ID: 1, DType: f, Dims: []int64{1, 8, 2, 4}, Numel: 64}
	words := Tensor{ID: 9, DType: serialization.Int32, Dims: []int64{32}, Numel: 32, NBytes: 128}
	short := Tensor{ID: 9, DType: serialization.Int32, Dims: []int64{31}, Numel: 31, NBytes: 124}
	on := Config{HalfKVCache: true}

	b := &halfBuilder{half: map[int32]Tensor{1: words}, cfg: on}
	h, ok, err := halfCache(b, cache, 3)
	if err != nil || !ok || h.ID != 9 || h.Numel != 64 || h.Constant {
		t.Fatalf("halfCache = %+v, %v, %v", h, ok, err)
	}
	if _, ok, err := halfCache(&halfBuilder{half: map[int32]Tensor{1: words}}, cache, 3); ok || err != nil {
		t.Fatalf("without Config.HalfKVCache: ok %v, err %v", ok, err)
	}
	for name, b := range map[string]*halfBuilder{
		"short buffer":  {half: map[int32]Tensor{1: short}, cfg: on},
		"builder error": {err: errors.New("boom"), cfg: on},
	} {
		if _, _, err := halfCache(b, cache, 3); !errors.Is(err, ErrArg) {
			t.Errorf("%s: err %v, want ErrArg", name, err)
		}
	}
	odd := Tensor{ID: 1, DType: f, Dims: []int64{1, 8, 2, 5}, Numel: 80}
	value := Tensor{ID: 2, DType: f, Dims: []int64{1, 1, 2, 5}, Numel: 10}
	if _, err := checkCacheUpdate(value, odd, true, 0, 1, 2, 0); !errors.Is(err, ErrArg) {
		t.Errorf("half update of an odd head_dim: err %v, want ErrArg", err)
	}
	if _, err := checkCacheUpdate(value, odd, false, 0, 1, 2, 0); err != nil {
		t.Errorf("float32 update of an odd head_dim: %v", err)
	}
	call := attnCall{q: 0, k: 1, v: 2, mask: -1, out: 3, bsz: 1, hq: 2, sq: 1, g: 1, nkeys: 4, d: 5, dv: 5,
		halfK: true, ks: attnStrides{b: 80, h: 5, s: 10}, vs: attnStrides{b: 80, h: 5, s: 10}}
	if err := recordAttention(&halfBuilder{}, call); !errors.Is(err, ErrArg) {
		t.Errorf("half k with head dim 5: err %v, want ErrArg", err)
	}
}
