package opstest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// newGPUKernels are the linear-family table entries of issue 33's GPU
// kernels; skipping them (ops.Config.SkipKernels) selects the kernels they
// replaced, which stay in the table so that one GPU run measures both.
const newGPUKernels = "gpu/q4gemv,gpu/qcgemv,gpu/tiled128,gpu/skinny"

// linearKernelFiles returns the shader files of g's dispatches recorded
// for ops whose name contains op.
func linearKernelFiles(g *graph.WebGPUGraph, op string) []string {
	var files []string
	for _, d := range g.Dispatches() {
		if strings.Contains(d.OpName, op) {
			files = append(files, d.Kernel[:strings.Index(d.Kernel, ".wgsl")+5])
		}
	}
	return files
}

// TestGPUKernelChoice checks which kernel the gpu family picks for the
// linear family's calls at each M, and that ops.Config.SkipKernels of the
// new entries picks the previous kernel again: float32 linears of 9 to 16
// rows (K % 4 == 0) run the skinny linear (gemv_skinny.wgsl), calls of
// more than 64 rows the 128×128 tiled matmul (matmul_tiled128.wgsl); 4-bit linear_q4gsw and the
// per-channel linear_qcs4w and _weight_int8pack_mm run the weight-word
// GEMV (gemv_quant.wgsl) up to 8 rows; from 9 to 16 rows the 4-bit and
// int8 GEMV of 16-byte units (gemv_gpu.wgsl) and linear_qcs4w the tiled
// "q" form (matmul_gpu.wgsl); past 16 rows the tiled one. A group size
// not a multiple of 8 (a word spanning two groups) keeps the one before.
func TestGPUKernelChoice(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	type choice struct {
		c         Case
		op        string
		want, old string // kernel files by default and with newGPUKernels skipped
	}
	var cs []choice
	for _, m := range []int64{1, 2, 3, 4, 5, 8, 9, 16, 17} {
		want, old := "gemv_quant.wgsl", "gemv_gpu.wgsl"
		switch {
		case m > 16:
			want, old = "matmul_gpu.wgsl", "matmul_gpu.wgsl"
		case m > 8:
			want = old
		}
		cs = append(cs,
			choice{q4gswCase([]int64{m, 64}, 9, 32, true, false), "q4gsw", want, old},
			choice{dq8caCase([]int64{m, 64}, 9, 32, false, 11), "dq8ca", want, old},
			choice{perChannelCase([]int64{m, 32}, 9, true, false), "int8pack", want, old})
		qcWant := "matmul_gpu.wgsl"
		if m <= 8 {
			qcWant = "gemv_quant.wgsl"
		}
		cs = append(cs, choice{perChannelCase([]int64{m, 64}, 9, false, false), "qcs4w", qcWant, "matmul_gpu.wgsl"})
	}
	// float32: the GEMV to 8 rows, the skinny linear from 9 to 16 (the
	// GEMV again with it skipped), the 64×64 tiled matmul to 64, the
	// 128×128 one from 65 (64×64 again with it skipped).
	for _, m := range []int64{1, 8, 9, 16, 17, 64, 65, 300} {
		want, old := "gemv_gpu.wgsl", "gemv_gpu.wgsl"
		switch {
		case m > 64:
			want, old = "matmul_tiled128.wgsl", "matmul_gpu.wgsl"
		case m > 16:
			want, old = "matmul_gpu.wgsl", "matmul_gpu.wgsl"
		case m > 8:
			want = "gemv_skinny.wgsl"
		}
		cs = append(cs, choice{linearCase([]int64{m, 36}, 9, true, weightNamed), "linear", want, old})
		if m > 16 {
			cs = append(cs, choice{mmCase(m, 20, 7, weightInput), "mm", want, old})
		}
	}
	cs = append(cs,
		// The skinny linear needs K % 4 == 0.
		choice{linearCase([]int64{12, 37}, 9, true, weightNamed), "linear", "gemv_gpu.wgsl", "gemv_gpu.wgsl"},
		// A group of 48 (6 words) on the weight-word GEMV; of 12 (a word
		// spans two groups), K = 36 (not whole words), linear_qcs4w with
		// K = 36: the kernels before.
		choice{q4gswCase([]int64{1, 96}, 9, 48, true, false), "q4gsw", "gemv_quant.wgsl", "matmul_gpu.wgsl"},
		choice{q4gswCase([]int64{2, 36}, 8, 12, false, false), "q4gsw", "matmul_gpu.wgsl", "matmul_gpu.wgsl"},
		choice{perChannelCase([]int64{3, 36}, 7, false, false), "qcs4w", "matmul_gpu.wgsl", "matmul_gpu.wgsl"},
	)
	for _, c := range cs {
		t.Run(c.c.Name, func(t *testing.T) {
			for _, v := range []struct {
				skip, want string
			}{{"", c.want}, {newGPUKernels, c.old}} {
				g := buildMatmulCase(t, dev, c.c, ops.Config{Family: ops.FamilyGPU, SkipKernels: v.skip})
				files := linearKernelFiles(g, c.op)
				g.Close()
				if len(files) == 0 || files[0] != v.want {
					t.Errorf("SkipKernels %q: kernels %v, want %s first", v.skip, files, v.want)
				}
			}
		})
	}
}

// TestConformanceSkippedKernels runs the linear family's cases under the
// gpu family with the new kernels skipped (ops.Config.SkipKernels
// newGPUKernels): the kernels they replaced stay selectable for the GPU
// run that compares them, so they must stay correct. (TestConformance runs
// the same cases on the new ones.) On a CPU adapter outside the long
// sweeps a case runs under the plan it has in TestConformance's gpu
// family (coverFamilies).
func TestConformanceSkippedKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("the gpu family's cases a second time")
	}
	t.Parallel()
	dev := testDevice(t)
	be := GPU{Dev: dev, Kernels: ops.Config{Family: ops.FamilyGPU, SkipKernels: newGPUKernels}}
	_, cases := coverFamilies(be, Cases) // FamilyCases, one plan each on a CPU adapter
	Run(t, be, cases)
}

// TestSkipKernelsUnknown: a SkipKernels name that is no table entry fails
// the load with ops.ErrConfig, naming it.
func TestSkipKernelsUnknown(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	b := serialization.NewBuilder()
	q4gswCase([]int64{1, 64}, 9, 32, true, false).Build(b, rand.New(rand.NewPCG(1, 2)))
	g, _, err := Load(dev, b, graph.Options{Kernels: ops.Config{SkipKernels: "gpu/q4gemv, gpu/nosuch"}})
	if err == nil {
		g.Close()
		t.Fatal("loaded")
	}
	if !errors.Is(err, ops.ErrConfig) || !strings.Contains(err.Error(), `"gpu/nosuch"`) {
		t.Fatalf("err %v, want ops.ErrConfig naming gpu/nosuch", err)
	}
	for _, name := range strings.Split(newGPUKernels, ",") {
		found := false
		for _, n := range ops.LinearKernelNames() {
			found = found || n == name
		}
		if !found {
			t.Errorf("%s is not a table entry", name)
		}
	}
}

// TestGPUQuantFoldedGrid: the weight-word GEMV over more column blocks
// than one grid dimension allows, where ops.Grid folds the dispatch into
// 2-D and the kernel must find its block from both: a 5-row
// linear_q4gsw (input rows 8, so 1 row a warp, 8 a workgroup) of
// N = 65535·8 + 12 columns (65537 blocks; its scales packed per row), and
// a one-row _weight_int8pack_mm (4 rows a warp, 32 a workgroup) of
// N = 65535·32 + 40. K is one word (group 8), activations and codes are
// integers and the scales 1 or 2: every output is an exact integer, so a
// skipped or misplaced block shows.
func TestGPUQuantFoldedGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("65537 workgroups of 256 invocations")
	}
	t.Parallel()
	dev := testDevice(t)
	for _, c := range []struct {
		op      string
		m, n, k int
	}{
		{"q4gsw", 5, 65535*8 + 12, 8},
		{"int8pack", 1, 65535*32 + 40, 4},
	} {
		t.Run(c.op, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			f := serialization.Float32
			q4 := c.op == "q4gsw"
			rowBytes := c.k
			if q4 {
				rowBytes = c.k / 2
			}
			codes := make([]byte, c.n*rowBytes)
			for i := range codes {
				codes[i] = byte(r.IntN(256))
			}
			scales := make([]float64, c.n)
			for i := range scales {
				scales[i] = float64(1 + i%2)
			}
			xs := make([]float64, c.m*c.k)
			for i := range xs {
				xs[i] = float64(r.IntN(17) - 8)
			}
			b := serialization.NewBuilder()
			x := b.Tensor(f, []uint32{uint32(c.m), uint32(c.k)}, -1)
			out := b.Tensor(f, []uint32{uint32(c.m), uint32(c.n)}, -1)
			if q4 {
				w, _ := b.NamedConst(serialization.Uint8, []uint32{uint32(c.n), uint32(rowBytes)}, codes)
				s, _ := b.NamedConst(f, []uint32{1, uint32(c.n)}, f32Bytes(scales))
				b.Op("et_vk.linear_q4gsw.default", x, w, s, b.Int(int64(c.k)), b.Null(), out)
			} else {
				w, _ := b.NamedConst(serialization.Int8, []uint32{uint32(c.n), uint32(rowBytes)}, codes)
				s, _ := b.NamedConst(f, []uint32{uint32(c.n)}, f32Bytes(scales))
				b.Op("aten._weight_int8pack_mm.default", x, w, s, out)
			}
			b.Inputs(x)
			b.Outputs(out)
			got := runFoldedLinear(t, dev, b, c.op, "gemv_quant.wgsl", c.m, c.k, xs)
			bad := 0
			for i := 0; i < c.m; i++ {
				for j := 0; j < c.n; j++ {
					want := 0.0
					for p := 0; p < c.k; p++ {
						var v int
						if q4 {
							v = int(codes[j*rowBytes+p/2]>>(4*(p%2))&15) - 8
						} else {
							v = int(int8(codes[j*rowBytes+p]))
						}
						want += xs[i*c.k+p] * float64(v)
					}
					want *= scales[j]
					if float64(got[i*c.n+j]) != want {
						if bad++; bad <= 5 {
							t.Errorf("out[%d][%d] = %v, want %v", i, j, got[i*c.n+j], want)
						}
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d outputs wrong", bad, c.m*c.n)
			}
		})
	}
}

// TestGPUSkinnyFoldedGrid: the skinny linear over more column blocks than
// one grid dimension allows (9 rows, N = 65535·16 + 20 weight rows of K =
// 4: 65537 blocks of 16), folded into 2-D by ops.Grid. Integer
// activations and weights: every output is exact, so a skipped or
// misplaced block shows.
// runFoldedLinear loads b, one linear op (the linearKernelFiles name), in
// the GPU family, checks that it records the linear with kernel file on a
// folded grid, and returns its output for the [m, k] float32 input x.
func runFoldedLinear(t *testing.T, dev *gpu.Device, b *serialization.Builder, op, file string, m, k int, x []float64) []float32 {
	t.Helper()
	g, _, err := Load(dev, b, graph.Options{Kernels: ops.Config{Family: ops.FamilyGPU}, SkipWarmup: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if files := linearKernelFiles(g, op); len(files) != 1 || files[0] != file {
		t.Fatalf("kernels %v, want %s", files, file)
	}
	if gr := g.Dispatches()[0].Groups; gr[1] < 2 {
		t.Fatalf("grid %v is not folded", gr)
	}
	outs, err := g.Execute(context.Background(), []graph.Tensor{{DType: serialization.Float32, Shape: []int64{int64(m), int64(k)}, Data: f32Bytes(x)}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := outs[0].Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestGPUSkinnyFoldedGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("65537 workgroups, 38 MB of output")
	}
	const m, n, k = 9, 65535*16 + 20, 4
	t.Parallel()
	dev := testDevice(t)
	r := rand.New(rand.NewPCG(5, 6))
	f := serialization.Float32
	wv := make([]float64, n*k)
	for i := range wv {
		wv[i] = float64(r.IntN(9) - 4)
	}
	xv := make([]float64, m*k)
	for i := range xv {
		xv[i] = float64(r.IntN(9) - 4)
	}
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{m, k}, -1)
	w, _ := b.NamedConst(f, []uint32{n, k}, f32Bytes(wv))
	out := b.Tensor(f, []uint32{m, n}, -1)
	b.Op("aten.linear.default", x, w, b.Null(), out)
	b.Inputs(x)
	b.Outputs(out)
	got := runFoldedLinear(t, dev, b, "linear", "gemv_skinny.wgsl", m, k, xv)
	bad := 0
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			want := 0.0
			for p := 0; p < k; p++ {
				want += xv[i*k+p] * wv[j*k+p]
			}
			if float64(got[i*n+j]) != want {
				if bad++; bad <= 5 {
					t.Errorf("out[%d][%d] = %v, want %v", i, j, got[i*n+j], want)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d outputs wrong", bad, m*n)
	}
}

// TestRowScalesPackedCache: the weight-word GEMV's scales packed per
// output row (a one-row linear_q4gsw, K = 64 in groups of 32, N = 9:
// scales [2, 12] packed to [12, 2]) go through the packed-weight cache
// like the other packings: the first gpu-family load packs them on the
// device (a miss), the later ones (both memory plans, twice) take them
// from the cache file (hits), all match the reference, and the cpu family
// packs nothing.
func TestRowScalesPackedCache(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	c := q4gswCase([]int64{1, 64}, 9, 32, true, false)
	path := filepath.Join(t.TempDir(), "packed.cache")
	const bytes = 12 * 2 * 4
	var got []graph.PackedCacheStats
	be := cachedGPU{dev: dev, cfg: ops.Config{Family: ops.FamilyGPU}, path: path, inspect: func(g *graph.WebGPUGraph) error {
		got = append(got, g.PackedCacheStats())
		if files := linearKernelFiles(g, "q4gsw"); len(files) != 1 || files[0] != "gemv_quant.wgsl" {
			return fmt.Errorf("kernels %v", files)
		}
		return nil
	}}
	for range 2 {
		if err := RunCase(be, c, 1); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 4 {
		t.Fatalf("%d loads, want 4", len(got))
	}
	for i, s := range got {
		want := graph.PackedCacheStats{Hits: 1, Bytes: bytes}
		if i == 0 {
			want = graph.PackedCacheStats{Misses: 1, Bytes: bytes}
		}
		if s != want {
			t.Errorf("load %d: %+v, want %+v", i, s, want)
		}
	}
	got = nil
	be.cfg = ops.Config{Family: ops.FamilyCPU}
	be.inspect = func(g *graph.WebGPUGraph) error {
		got = append(got, g.PackedCacheStats())
		return nil
	}
	if err := RunCase(be, c, 1); err != nil {
		t.Fatal(err)
	}
	for i, s := range got {
		if s != (graph.PackedCacheStats{}) {
			t.Errorf("cpu family, load %d: %+v, want nothing packed", i, s)
		}
	}
}

// cachedGPU is the GPU backend loading with a packed-weight cache file and
// calling inspect with each loaded graph.
type cachedGPU struct {
	dev     *gpu.Device
	cfg     ops.Config
	path    string
	inspect func(*graph.WebGPUGraph) error
}

// Run implements Backend.
func (b cachedGPU) Run(ctx context.Context, raw []byte, named []serialization.NamedBlob, inputs []*reference.Tensor) ([]*reference.Tensor, int, error) {
	blob, nd, err := decode(raw, named)
	if err != nil {
		return nil, 0, err
	}
	g, err := graph.Build(ctx, b.dev, blob, graph.Options{NamedData: nd, Kernels: b.cfg, PackedCache: b.path})
	if err != nil {
		return nil, 0, err
	}
	defer g.Close()
	if err := b.inspect(g); err != nil {
		return nil, 0, err
	}
	in := make([]graph.Tensor, len(inputs))
	for i, t := range inputs {
		in[i] = graph.Tensor{DType: t.DType, Shape: t.Shape, Data: t.Encode()}
	}
	got, err := g.Execute(ctx, in)
	if err != nil {
		return nil, 0, err
	}
	outs := make([]*reference.Tensor, len(got))
	for i, o := range got {
		if outs[i], err = reference.Decode(o.DType, o.Shape, o.Data); err != nil {
			return nil, 0, err
		}
	}
	return outs, len(g.Dispatches()), nil
}
