package ops

import (
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestConvPoolChunks: reductions past the loop budget become consecutive
// accumulating dispatches that cover every trip once; only the first
// starts fresh and only the last finishes (clamp, avg divide).
func TestConvPoolChunks(t *testing.T) {
	f := serialization.Float32
	for _, c := range []struct {
		name   string
		build  func(b *serialization.Builder) (Func, []int32)
		trips  uint32
		chunks int
		begin  int // index of r_begin in the params (u32s)
	}{
		{"conv 70400", func(b *serialization.Builder) (Func, []int32) {
			x, w, y := b.Tensor(f, []uint32{1, 1100, 8, 8}, -1), b.Tensor(f, []uint32{2, 1100, 8, 8}, -1), b.Tensor(f, []uint32{1, 2, 1, 1}, -1)
			return opFunc("aten.convolution.default"), []int32{x, w, b.Null(), b.IntList(1), b.IntList(0), b.IntList(1), b.Bool(false), b.IntList(0), b.Int(1), y}
		}, 70400, 5, 11},
		{"conv 16384", func(b *serialization.Builder) (Func, []int32) {
			x, w, y := b.Tensor(f, []uint32{1, 256, 8, 8}, -1), b.Tensor(f, []uint32{2, 256, 8, 8}, -1), b.Tensor(f, []uint32{1, 2, 1, 1}, -1)
			return opFunc("aten.convolution.default"), []int32{x, w, b.Null(), b.IntList(1), b.IntList(0), b.IntList(1), b.Bool(false), b.IntList(0), b.Int(1), y}
		}, 16384, 1, 11},
		{"avg pool 67600", func(b *serialization.Builder) (Func, []int32) {
			x, y := b.Tensor(f, []uint32{1, 1, 260, 260}, -1), b.Tensor(f, []uint32{1, 1, 1, 1}, -1)
			return opFunc("aten.avg_pool2d.default"), []int32{x, b.IntList(260), b.IntList(), b.IntList(0), b.Bool(false), b.Bool(false), b.Null(), y}
		}, 67600, 5, 7},
	} {
		b := serialization.NewBuilder()
		fn, args := c.build(b)
		r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535}
		if err := fn(r, args); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(r.dispatches) != c.chunks {
			t.Fatalf("%s: %d dispatches, want %d", c.name, len(r.dispatches), c.chunks)
		}
		next := uint32(0)
		for i, d := range r.dispatches {
			begin, end := u32At(d.params, c.begin), u32At(d.params, c.begin+1)
			acc, last := u32At(d.params, c.begin+2), u32At(d.params, c.begin+3)
			if begin != next || end <= begin || end-begin > 16384 || (acc != 0) != (i > 0) || (last != 0) != (i == c.chunks-1) {
				t.Errorf("%s chunk %d: [%d, %d) accumulate %d last %d after %d", c.name, i, begin, end, acc, last, next)
			}
			next = end
		}
		if next != c.trips {
			t.Errorf("%s: chunks end at %d, want %d", c.name, next, c.trips)
		}
	}
}

// opFunc returns the op registered under name, or nil.
func opFunc(name string) Func {
	fn, _ := Lookup(name)
	return fn
}

// TestConvPoolSpatialLiveShapes: every op of these families derives its output shape
// from the live input dims, below the serialized ones, and sizes its grid
// from them.
func TestConvPoolSpatialLiveShapes(t *testing.T) {
	f := serialization.Float32
	for _, c := range []struct {
		name  string
		build func(b *serialization.Builder) (op string, x int32, args []int32)
		live  []int64 // x's live dims
		want  []int64 // out's live dims
		// params is the byte size of the kernel's WGSL Params struct,
		// which the Go packing must match.
		params int
	}{
		{"conv2d", func(b *serialization.Builder) (string, int32, []int32) {
			x, w, y := b.Tensor(f, []uint32{2, 3, 9, 9}, -1), b.Tensor(f, []uint32{4, 3, 3, 3}, -1), b.Tensor(f, []uint32{2, 4, 5, 5}, -1)
			return "aten.convolution.default", x, []int32{x, w, b.Null(), b.IntList(2), b.IntList(1), b.IntList(1), b.Bool(false), b.IntList(0), b.Int(1), y}
		}, []int64{1, 3, 7, 5}, []int64{1, 4, 4, 3}, 128},
		{"conv_transpose2d", func(b *serialization.Builder) (string, int32, []int32) {
			x, w, y := b.Tensor(f, []uint32{1, 4, 5, 7}, -1), b.Tensor(f, []uint32{4, 2, 3, 3}, -1), b.Tensor(f, []uint32{1, 4, 10, 14}, -1)
			return "et_vk.conv_with_clamp.default", x, []int32{x, w, b.Null(), b.IntList(2), b.IntList(1), b.IntList(1), b.Bool(true), b.IntList(1), b.Int(2), b.Double(0), b.Null(), y}
		}, []int64{1, 4, 3, 4}, []int64{1, 4, 6, 8}, 128},
		{"conv1d", func(b *serialization.Builder) (string, int32, []int32) {
			x, w, y := b.Tensor(f, []uint32{2, 3, 17}, -1), b.Tensor(f, []uint32{4, 3, 3}, -1), b.Tensor(f, []uint32{2, 4, 13}, -1)
			return "aten.convolution.default", x, []int32{x, w, b.Null(), b.IntList(1), b.IntList(0), b.IntList(2), b.Bool(false), b.IntList(0), b.Int(1), y}
		}, []int64{2, 3, 6}, []int64{2, 4, 2}, 128},
		{"max_pool2d", func(b *serialization.Builder) (string, int32, []int32) {
			x, y := b.Tensor(f, []uint32{2, 3, 12, 12}, -1), b.Tensor(f, []uint32{2, 3, 7, 7}, -1)
			return "aten.max_pool2d.default", x, []int32{x, b.IntList(3), b.IntList(2), b.IntList(1), b.IntList(1), b.Bool(true), y}
		}, []int64{1, 3, 10, 5}, []int64{1, 3, 6, 3}, 80},
		{"avg_pool2d", func(b *serialization.Builder) (string, int32, []int32) {
			x, y := b.Tensor(f, []uint32{3, 12, 12}, -1), b.Tensor(f, []uint32{3, 6, 6}, -1)
			return "aten.avg_pool2d.default", x, []int32{x, b.IntList(2), b.IntList(), b.IntList(0), b.Bool(false), b.Bool(true), b.Null(), y}
		}, []int64{3, 7, 4}, []int64{3, 3, 2}, 80},
		{"upsample_nearest2d", func(b *serialization.Builder) (string, int32, []int32) {
			x, y := b.Tensor(f, []uint32{1, 2, 8, 8}, -1), b.Tensor(f, []uint32{1, 2, 16, 16}, -1)
			return "aten.upsample_nearest2d.vec", x, []int32{x, b.Null(), b.DoubleList(2, 2), y}
		}, []int64{1, 2, 3, 5}, []int64{1, 2, 6, 10}, 48},
		{"upsample_bilinear2d", func(b *serialization.Builder) (string, int32, []int32) {
			x, y := b.Tensor(f, []uint32{1, 2, 8, 8}, -1), b.Tensor(f, []uint32{1, 2, 12, 12}, -1)
			return "aten.upsample_bilinear2d.vec", x, []int32{x, b.Null(), b.Bool(true), b.DoubleList(1.5, 1.5), y}
		}, []int64{1, 2, 4, 6}, []int64{1, 2, 6, 9}, 48},
		{"pixel_shuffle", func(b *serialization.Builder) (string, int32, []int32) {
			x, y := b.Tensor(f, []uint32{2, 8, 4, 4}, -1), b.Tensor(f, []uint32{2, 2, 8, 8}, -1)
			return "aten.pixel_shuffle.default", x, []int32{x, b.Int(2), y}
		}, []int64{1, 8, 3, 2}, []int64{1, 2, 6, 4}, 32},
		{"constant_pad_nd", func(b *serialization.Builder) (string, int32, []int32) {
			x, y := b.Tensor(f, []uint32{4, 9}, -1), b.Tensor(f, []uint32{6, 10}, -1)
			return "aten.constant_pad_nd.default", x, []int32{x, b.IntList(2, -1, 1, 1), b.Double(0), y}
		}, []int64{2, 5}, []int64{4, 6}, 112},
		{"grid_sampler_2d", func(b *serialization.Builder) (string, int32, []int32) {
			x, g, y := b.Tensor(f, []uint32{2, 3, 8, 8}, -1), b.Tensor(f, []uint32{2, 4, 5, 2}, -1), b.Tensor(f, []uint32{2, 3, 4, 5}, -1)
			return "aten.grid_sampler_2d.default", x, []int32{x, g, b.Int(0), b.Int(1), b.Bool(false), y}
		}, []int64{2, 3, 3, 3}, []int64{2, 3, 4, 5}, 32},
		{"grid_priors", func(b *serialization.Builder) (string, int32, []int32) {
			x, y := b.Tensor(f, []uint32{1, 3, 8, 8}, -1), b.Tensor(f, []uint32{64, 2}, -1)
			return "et_vk.grid_priors.default", x, []int32{x, b.Int(8), b.Double(0.5), y}
		}, []int64{1, 3, 5, 3}, []int64{15, 2}, 16},
	} {
		b := serialization.NewBuilder()
		op, x, args := c.build(b)
		r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535, live: map[int32][]int64{x: c.live}}
		if err := opFunc(op)(r, args); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		out := args[len(args)-1]
		got, _ := r.Tensor(out)
		if !slices.Equal(got.Dims, c.want) {
			t.Errorf("%s: out dims %v, want %v", c.name, got.Dims, c.want)
		}
		for _, d := range r.dispatches {
			if len(d.params) != c.params {
				t.Errorf("%s: params are %d bytes, want %d", c.name, len(d.params), c.params)
			}
			// Params open with the invocation count: one per output
			// element, except for convolutions (a block of channels ×
			// columns each).
			n := int64(u32At(d.params, 0))
			want := got.Numel
			if strings.HasPrefix(d.k.Name, "conv.wgsl") {
				oc, oh, ow := int64(u32At(d.params, 1)), int64(u32At(d.params, 2)), int64(u32At(d.params, 3))
				want = got.Numel / (oc * oh * ow) * int64(u32At(d.params, 27)) * oh * int64(u32At(d.params, 26))
			}
			if n != want {
				t.Errorf("%s: dispatch over %d invocations, want %d", c.name, n, want)
			}
			if uint64(d.groups[0])*uint64(d.groups[1])*uint64(d.k.WorkgroupSize) < uint64(n) {
				t.Errorf("%s: grid %v does not cover %d invocations", c.name, d.groups, n)
			}
		}
		if len(r.dispatches) == 0 {
			t.Errorf("%s: no dispatch", c.name)
		}
	}
}
