package ops

import (
	"math"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// recordOneLinear records an m-row aten.linear ([m, K] · [N, K]ᵀ, no
// bias) without a device.
func recordOneLinear(t *testing.T, m, k, n uint32, maxPerDim uint32, cfg Config) *recorder {
	t.Helper()
	b := serialization.NewBuilder()
	f := serialization.Float32
	x, w, out := b.Tensor(f, []uint32{m, k}, -1), b.Tensor(f, []uint32{n, k}, -1), b.Tensor(f, []uint32{m, n}, -1)
	r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: maxPerDim, cfg: cfg}
	if err := runOp(r, "aten.linear.default", x, w, b.Null(), out); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGEMVChoiceAndChunks: a one-row linear uses the GEMV kernel (any K
// and N), so does one of at most gemvMaxRows rows with K%4 == 0 and
// N%4 != 0, others the tiled kernel unless MatmulGEMV forces it; the GEMV kernel's K chunks cover every loop step
// exactly once with none longer than matmulMaxTrips, only the last chunk
// is marked last, and the grid covers every output column and row.
func TestGEMVChoiceAndChunks(t *testing.T) {
	for _, c := range []struct {
		m, k, n uint32
		path    MatmulPath
		gemv    bool
		vec4    bool
		chunks  int
	}{
		{1, 1024, 1024, MatmulAuto, true, true, 1},
		{1, 2050, 2048, MatmulAuto, true, false, 1},
		{16, 64, 9, MatmulAuto, true, true, 1},
		{2, 64, 9, MatmulAuto, true, true, 1},
		{17, 64, 9, MatmulAuto, false, true, 1},
		{2, 64, 8, MatmulAuto, false, true, 1},
		{16, 13, 9, MatmulAuto, false, false, 1},
		{17, 64, 8, MatmulAuto, false, true, 1},
		{17, 64, 8, MatmulGEMV, true, true, 1},
		{40, 13, 5, MatmulGEMV, true, false, 1},
		{8, 64, 8, MatmulNoGEMV, false, true, 1},
		{1, 600000, 14, MatmulAuto, true, true, 10},
		{3, 70001, 5, MatmulGEMV, true, false, 5},
		{1, 4, 2100000, MatmulAuto, true, true, 1},
	} {
		r := recordOneLinear(t, c.m, c.k, c.n, 65535, Config{Matmul: c.path})
		if len(r.dispatches) != c.chunks {
			t.Fatalf("M=%d K=%d N=%d: %d dispatches, want %d", c.m, c.k, c.n, len(r.dispatches), c.chunks)
		}
		if got := strings.HasPrefix(r.dispatches[0].k.Name, "gemv.wgsl"); got != c.gemv {
			t.Fatalf("M=%d K=%d N=%d: kernel %s, want GEMV %v", c.m, c.k, c.n, r.dispatches[0].k.Name, c.gemv)
		}
		if !c.gemv {
			continue
		}
		if got := strings.Contains(r.dispatches[0].k.Name, "Vec4:true"); got != c.vec4 {
			t.Errorf("M=%d K=%d N=%d: kernel %s, want Vec4 %v", c.m, c.k, c.n, r.dispatches[0].k.Name, c.vec4)
		}
		trips := c.k
		if c.vec4 {
			trips /= 4
		}
		next := uint32(0)
		for i, d := range r.dispatches {
			begin, end, acc, last := u32At(d.params, 3), u32At(d.params, 4), u32At(d.params, 5), u32At(d.params, 6)
			if begin != next || end <= begin || end-begin > matmulMaxTrips ||
				(acc != 0) != (i > 0) || (last != 0) != (i == len(r.dispatches)-1) {
				t.Errorf("K=%d chunk %d: [%d, %d) accumulate %d last %d after %d", c.k, i, begin, end, acc, last, next)
			}
			next = end
		}
		if next != trips {
			t.Errorf("K=%d: chunks end at %d, want %d", c.k, next, trips)
		}
		sh := gemvShader{Rows: matmulTile(int64(c.m), gemvMaxRows)}
		cols := uint64(gemvCols(len(sh.Rows), Config{}))
		g := r.dispatches[0].groups
		if uint64(g[0])*gemvWG*cols < uint64(c.n) || uint64(g[1])*uint64(len(sh.Rows)) < uint64(c.m) || g[2] != 1 {
			t.Errorf("M=%d N=%d: grid %v", c.m, c.n, g)
		}
	}
}

// runOp records op name's registered function on r.
func runOp(r Builder, name string, args ...int32) error {
	fn, ok := Lookup(name)
	if !ok {
		return Errorf(-1, "no op %s", name)
	}
	return fn(r, args)
}

// TestEpilogueKernel: the activations a linear-family kernel applies
// (fusedLinearEpilogue), with their parameters, writing the activation's
// output; an activation it cannot apply records nothing (the group's
// fallback then records). Which ops form the group is package lower's.
func TestEpilogueKernel(t *testing.T) {
	for _, c := range []struct {
		name   string
		act    func(b *serialization.Builder, h, y int32)
		want   string
		lo, hi float32
	}{
		{"relu", func(b *serialization.Builder, h, y int32) { b.Op("aten.relu.default", h, y) }, "relu", 0, 0},
		{"relu6", func(b *serialization.Builder, h, y int32) { b.Op("aten.relu6.default", h, y) }, "clamp", 0, 6},
		{"clamp", func(b *serialization.Builder, h, y int32) {
			b.Op("aten.clamp.default", h, b.Int(-2), b.Null(), y)
		}, "clamp", -2, float32(math.Inf(1))},
		{"hardtanh", func(b *serialization.Builder, h, y int32) {
			b.Op("aten.hardtanh.default", h, b.Double(-0.5), b.Double(0.5), y)
		}, "clamp", -0.5, 0.5},
		{"hardtanh_null", func(b *serialization.Builder, h, y int32) {
			b.Op("aten.hardtanh.default", h, b.Null(), b.Double(0.5), y)
		}, "", 0, 0},
		{"gelu_tanh", func(b *serialization.Builder, h, y int32) {
			b.Op("aten.gelu.default", h, b.String("tanh"), y)
		}, "gelu_tanh", 0, 0},
		{"gelu_bad", func(b *serialization.Builder, h, y int32) {
			b.Op("aten.gelu.default", h, b.String("cubic"), y)
		}, "", 0, 0},
		{"tanh", func(b *serialization.Builder, h, y int32) { b.Op("aten.tanh.default", h, y) }, "", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := serialization.NewBuilder()
			f := serialization.Float32
			x, w := b.Tensor(f, []uint32{8, 16}, -1), b.Tensor(f, []uint32{16, 8}, -1)
			h, y := b.Tensor(f, []uint32{8, 8}, -1), b.Tensor(f, []uint32{8, 8}, -1)
			b.Op("aten.mm.default", x, w, h)
			c.act(b, h, y)
			r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535}
			g := &Group{Kind: FusedLinearEpilogue, Act: 1}
			for i, op := range b.Graph().Chain {
				g.Calls = append(g.Calls, Call{Index: i, Name: op.Name, Args: op.Args})
			}
			n, err := fusedLinearEpilogue(r, g)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if n != 0 || len(r.dispatches) != 0 {
					t.Fatalf("recorded %d ops in %d dispatches, want none", n, len(r.dispatches))
				}
				return
			}
			if n != 2 || len(r.dispatches) != 1 {
				t.Fatalf("recorded %d ops in %d dispatches, want 2 in 1", n, len(r.dispatches))
			}
			d := r.dispatches[0]
			if !strings.Contains(d.k.Name, "Act:"+c.want+" ") {
				t.Fatalf("kernel %s, want the %s epilogue", d.k.Name, c.want)
			}
			lo, hi := math.Float32frombits(u32At(d.params, 12)), math.Float32frombits(u32At(d.params, 13))
			if c.want == "clamp" && (lo != c.lo || hi != c.hi) {
				t.Errorf("bounds %v %v, want %v %v", lo, hi, c.lo, c.hi)
			}
			if len(d.out) != 1 || d.out[0] != y {
				t.Errorf("matmul writes %v, want the activation's output %d", d.out, y)
			}
			if got, _ := r.Tensor(y); len(got.Dims) != 2 || got.Dims[0] != 8 || got.Dims[1] != 8 {
				t.Errorf("activation output dims %v", got.Dims)
			}
		})
	}
}
