package ops

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// recorder is a device-free Builder that records dispatches, with a
// settable per-dimension workgroup limit.
type recorder struct {
	Values
	cfg        Config
	maxPerDim  uint32
	dispatches []recorded
	live       map[int32][]int64
	syms       map[int32]int64
}

// Config is the recorder's kernel choices; it describes no device, holds
// no weights packed, in chunks or as half caches, and reads no values on
// the host.
func (r *recorder) Config() Config               { return r.cfg }
func (r *recorder) DeviceProfile() DeviceProfile { return DeviceProfile{} }
func (r *recorder) HostElement(id int32, flat int64) (float64, error) {
	return 0, Errorf(-1, "value %d: no host values", id)
}
func (r *recorder) PackWeight(id int32, spec PackSpec) (Tensor, error) { return Tensor{}, ErrNotPacked }
func (r *recorder) Persistent(id int32) (Tensor, error)                { return r.Tensor(id) }
func (r *recorder) OnRefresh(update func(Builder) error)               {}
func (r *recorder) HalfCache(id int32) (Tensor, bool, error)           { return Tensor{}, false, nil }
func (r *recorder) ChunkedWeight(id int32) bool                        { return false }
func (r *recorder) ChunkBytes() int64                                  { return 0 }
func (r *recorder) SliceWeight(id int32, dim int, begin, end int64) (Tensor, error) {
	return Tensor{}, ErrNotPacked
}
func (r *recorder) Scratch(key int, dt serialization.DataType, dims []int64) (Tensor, error) {
	return Tensor{}, ErrNotPacked
}

type recorded struct {
	k      *shaders.Kernel
	in     []int32
	out    []int32
	params []byte
	groups [3]uint32
}

func (r *recorder) Tensor(id int32) (Tensor, error) {
	if r.Kind(id) != serialization.KindTensor {
		return Tensor{}, Errorf(-1, "value %d is %v, want a tensor", id, r.Kind(id))
	}
	v := r.G.Values[id].Tensor
	t := Tensor{ID: id, DType: v.DataType, Constant: v.ConstantID >= 0}
	for _, d := range v.Dims {
		t.MaxDims = append(t.MaxDims, int64(d))
	}
	t.MaxNumel = NumelOf(t.MaxDims)
	t.Dims = append([]int64(nil), t.MaxDims...)
	if d, ok := r.live[id]; ok {
		t.Dims = append([]int64(nil), d...)
	}
	t.Numel = NumelOf(t.Dims)
	t.NBytes = t.Numel * int64(v.DataType.Size())
	return t, nil
}

func (r *recorder) SetDims(id int32, dims []int64) error {
	t, err := r.Tensor(id)
	if err != nil {
		return err
	}
	if n := NumelOf(dims); n < 0 || n > t.MaxNumel {
		return Errorf(-1, "value %d: shape %v exceeds %v", id, dims, t.MaxDims)
	}
	if r.live == nil {
		r.live = map[int32][]int64{}
	}
	r.live[id] = append([]int64(nil), dims...)
	return nil
}

func (r *recorder) SetInt(id int32, v int64) error {
	if r.syms == nil {
		r.syms = map[int32]int64{}
	}
	r.syms[id] = v
	return nil
}

func (r *recorder) Dispatch(k *shaders.Kernel, in, out []int32, params []byte, groups [3]uint32) error {
	r.dispatches = append(r.dispatches, recorded{k, in, out, params, groups})
	return nil
}

func (r *recorder) MaterializeConstant(src, dst int32) error { return nil }
func (r *recorder) MaxWorkgroupsPerDim() uint32              { return r.maxPerDim }

// recordMM records aten.mm on an M×K by K×N graph without a device.
func recordMM(t *testing.T, m, k, n uint32, maxPerDim uint32, cfg ...Config) (*recorder, error) {
	t.Helper()
	b := serialization.NewBuilder()
	f := serialization.Float32
	x, y, out := b.Tensor(f, []uint32{m, k}, -1), b.Tensor(f, []uint32{k, n}, -1), b.Tensor(f, []uint32{m, n}, -1)
	r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: maxPerDim}
	if len(cfg) > 0 {
		r.cfg = cfg[0]
	}
	return r, runOp(r, "aten.mm.default", x, y, out)
}

func u32At(p []byte, i int) uint32 { return binary.LittleEndian.Uint32(p[4*i:]) }

// TestMatmulChunks: K past the loop budget becomes consecutive accumulating
// dispatches that cover every K step exactly once.
func TestMatmulChunks(t *testing.T) {
	for _, c := range []struct {
		k, n   uint32
		vec4   bool
		trips  uint32
		chunks int
	}{
		{300000, 4, true, 75000, 5},
		{70001, 3, false, 70001, 5},
		{65536, 4, true, 16384, 1},
		{16384, 3, false, 16384, 1},
		{16385, 3, false, 16385, 2},
		{0, 4, false, 0, 1}, // K = 0 still writes (zeros or bias)
	} {
		r, err := recordMM(t, 3, c.k, c.n, 65535)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.dispatches) != c.chunks {
			t.Fatalf("K=%d: %d dispatches, want %d", c.k, len(r.dispatches), c.chunks)
		}
		next := uint32(0)
		for i, d := range r.dispatches {
			// The WGSL Params struct is 16 u32s and three vec4 pairs.
			if len(d.params) != 4*matmulParamsWords {
				t.Fatalf("K=%d: params are %d bytes, want %d", c.k, len(d.params), 4*matmulParamsWords)
			}
			if got := strings.Contains(d.k.Name, "Vec4:true"); got != c.vec4 {
				t.Errorf("K=%d: kernel %s, want vec4 %v", c.k, d.k.Name, c.vec4)
			}
			begin, end, acc := u32At(d.params, 3), u32At(d.params, 4), u32At(d.params, 5)
			if begin != next || end < begin || end-begin > matmulMaxTrips || (acc != 0) != (i > 0) {
				t.Errorf("K=%d chunk %d: [%d, %d) accumulate %d after %d", c.k, i, begin, end, acc, next)
			}
			next = end
		}
		if next != c.trips {
			t.Errorf("K=%d: chunks end at %d, want %d", c.k, next, c.trips)
		}
	}
}

// TestMatmulGridLimit: a grid over the per-dimension limit is an ErrArg,
// not a dispatch the device would reject at submit.
func TestMatmulGridLimit(t *testing.T) {
	r, err := recordMM(t, 4096, 8, 8, 16)
	if !errors.Is(err, ErrArg) || len(r.dispatches) != 0 {
		t.Fatalf("got %v with %d dispatches, want an ErrArg and none", err, len(r.dispatches))
	}
	// The same shape fits a realistic limit.
	if _, err := recordMM(t, 4096, 8, 8, 65535); err != nil {
		t.Fatal(err)
	}
}

// TestMatmulTiles checks the kernel each shape gets and that the grid covers
// the output.
func TestMatmulTiles(t *testing.T) {
	for _, c := range []struct {
		m, k, n uint32
		want    string
		scalar  bool // force MatmulScalar
	}{
		// One row block (M <= 16): at most 2 vec4 columns (matmulVec4ColsSmallM).
		{1, 64, 64, "Vec4:true TransB:false Bias:false Rows:[0] Cols:[0 1] WGX:16 WGY:1", false},
		{16, 64, 64, "Vec4:true TransB:false Bias:false Rows:[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] Cols:[0 1] WGX:16 WGY:1", false},
		{17, 64, 64, "Vec4:true TransB:false Bias:false Rows:[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] Cols:[0 1 2 3] WGX:8 WGY:2", false},
		{3, 64, 4, "Vec4:true TransB:false Bias:false Rows:[0 1 2 3] Cols:[0] WGX:16 WGY:1", false},
		{512, 512, 512, "Vec4:true TransB:false Bias:false Rows:[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] Cols:[0 1 2 3] WGX:8 WGY:2", false},
		{512, 512, 512, "Vec4:false TransB:false Bias:false Rows:[0 1 2 3 4 5 6 7] Cols:[0 1 2 3 4 5 6 7] WGX:8 WGY:2", true},
		{7, 33, 129, "Vec4:false TransB:false Bias:false Rows:[0 1 2 3 4 5 6 7] Cols:[0 1 2 3 4 5 6 7] WGX:16 WGY:1", false},
		{7, 6, 8, "Vec4:false", false},
		{7, 8, 6, "Vec4:false", false},
	} {
		path := MatmulAuto
		if c.scalar {
			path = MatmulScalar
		}
		r, err := recordMM(t, c.m, c.k, c.n, 65535, Config{Matmul: path})
		if err != nil {
			t.Fatal(err)
		}
		d := r.dispatches[0]
		if !strings.Contains(d.k.Name, c.want) {
			t.Errorf("%dx%dx%d: kernel %s, want %s", c.m, c.k, c.n, d.k.Name, c.want)
		}
		// Grid × workgroup × tile must cover M and N.
		rows, cols := 16, 4*4
		if strings.Contains(d.k.Name, "Vec4:false") {
			rows, cols = 8, 8
		}
		if c.m < uint32(rows) {
			rows = 1
			for uint32(rows) < c.m {
				rows *= 2
			}
		}
		wgx, wgy := 8, 2
		if strings.Contains(d.k.Name, "WGX:16 WGY:1") {
			wgx, wgy = 16, 1
		}
		if int(d.groups[0])*wgx*cols < int(c.n) || int(d.groups[1])*wgy*rows < int(c.m) {
			t.Errorf("%dx%dx%d: grid %v does not cover the output", c.m, c.k, c.n, d.groups)
		}
	}
}

// TestMatmulEmptyOutput: M = 0 or N = 0 records nothing.
func TestMatmulEmptyOutput(t *testing.T) {
	for _, s := range [][3]uint32{{0, 4, 4}, {4, 4, 0}} {
		r, err := recordMM(t, s[0], s[1], s[2], 65535)
		if err != nil || len(r.dispatches) != 0 {
			t.Errorf("%v: %v, %d dispatches", s, err, len(r.dispatches))
		}
	}
}

// TestLiveShapes: ops size outputs, grids and uniforms from the live input
// dims and the live SymInt values, not from the serialized ones, and give
// the same record for the same state (they are re-run on every change).
func TestLiveShapes(t *testing.T) {
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{8, 16}, -1)
	w := b.InlineConst(f, []uint32{4, 16}, make([]byte, 4*64))
	y := b.Tensor(f, []uint32{8, 4}, -1)
	q := b.Tensor(f, []uint32{1, 4, 4, 8}, -1)
	k := b.Tensor(f, []uint32{1, 4, 2, 8}, -1)
	v := b.Tensor(f, []uint32{1, 4, 2, 8}, -1)
	kc := b.Tensor(f, []uint32{1, 16, 2, 8}, -1)
	vc := b.Tensor(f, []uint32{1, 16, 2, 8}, -1)
	pos := b.SymInt(0)
	out := b.Tensor(f, []uint32{1, 4, 4, 8}, -1)
	kvArgs := []int32{q, k, v, kc, vc, pos, b.Int(4), b.Null(), b.Double(0), b.Bool(true), b.Null(), out}
	r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535}
	r.Values.Sym = func(id int32) (int64, bool) { v, ok := r.syms[id]; return v, ok }

	// linear on 3 live rows of an 8-row input.
	r.live = map[int32][]int64{x: {3, 16}}
	if err := runOp(r, "aten.linear.default", x, w, b.Null(), y); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Tensor(y); !slices.Equal(got.Dims, []int64{3, 4}) {
		t.Errorf("linear out dims %v, want [3 4]", got.Dims)
	}
	if m := u32At(r.dispatches[0].params, 0); m != 3 {
		t.Errorf("linear records M=%d, want 3", m)
	}

	// A decode step: one live query row at input_pos 5, then 9.
	for _, p := range []int64{5, 9} {
		r.dispatches = nil
		r.live = map[int32][]int64{q: {1, 1, 4, 8}, k: {1, 1, 2, 8}, v: {1, 1, 2, 8}}
		r.syms = map[int32]int64{pos: p}
		if err := sdpaWithKVCacheOp(r, kvArgs); err != nil {
			t.Fatal(err)
		}
		if got, _ := r.Tensor(out); !slices.Equal(got.Dims, []int64{1, 1, 4, 8}) {
			t.Errorf("pos %d: out dims %v, want [1 1 4 8]", p, got.Dims)
		}
		if len(r.dispatches) != 2 {
			t.Fatalf("pos %d: %d dispatches, want 2 (both cache updates, one attention)", p, len(r.dispatches))
		}
		// Update params: n, block, dst0 = pos·H·D for k, then the same
		// for v; attention: nkeys = pos+1.
		for i, at := range []int{0, 4} {
			if n, dst := u32At(r.dispatches[0].params, at), u32At(r.dispatches[0].params, at+2); n != 16 || dst != uint32(p*16) {
				t.Errorf("pos %d: update %d n=%d dst0=%d, want 16 and %d", p, i, n, dst, p*16)
			}
		}
		if nk := u32At(r.dispatches[1].params, 4); nk != uint32(p+1) {
			t.Errorf("pos %d: attention over %d keys, want %d", p, nk, p+1)
		}
	}
	// input_pos past the cache is an ErrArg.
	r.syms = map[int32]int64{pos: 16}
	if err := sdpaWithKVCacheOp(r, kvArgs); !errors.Is(err, ErrArg) {
		t.Errorf("input_pos 16 of 16 rows: got %v, want an ErrArg", err)
	}
}
