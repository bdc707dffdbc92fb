package ops

import (
	"errors"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestGPUTiled128ChunksAndGrid: the 128×128 tiled kernel's K chunks are
// whole tiles of 8 (the last clipped to K), none more than
// gpuTiled128MaxTrips tiles, each marked accumulate but the first and last
// only on the final one, and the grid covers M and N in 128×128 tiles.
func TestGPUTiled128ChunksAndGrid(t *testing.T) {
	gpu := Config{Family: FamilyGPU}
	k := uint32(gpuTiled128MaxTrips*gpuTiled128BK*2 + 5)
	r, err := recordMM(t, 257, k, 130, 65535, gpu)
	if err != nil {
		t.Fatal(err)
	}
	next := uint32(0)
	for i, d := range r.dispatches {
		if !strings.HasPrefix(d.k.Name, "matmul_tiled128.wgsl") {
			t.Fatalf("dispatch %d runs %.30s", i, d.k.Name)
		}
		begin, end := u32At(d.params, 3), u32At(d.params, 4)
		if begin != next || (end-begin)%gpuTiled128BK != 0 && end != k || end-begin > gpuTiled128MaxTrips*gpuTiled128BK {
			t.Errorf("chunk %d [%d, %d) after %d", i, begin, end, next)
		}
		if acc, last := u32At(d.params, 5), u32At(d.params, 14); (acc == 1) != (i > 0) || (last == 1) != (i == len(r.dispatches)-1) {
			t.Errorf("chunk %d: accumulate %d last %d", i, acc, last)
		}
		if d.groups != [3]uint32{2, 3, 1} {
			t.Errorf("grid %v, want [2 3 1]", d.groups)
		}
		next = end
	}
	if next != k || len(r.dispatches) != 3 {
		t.Errorf("chunks end at %d after %d dispatches, want %d after 3", next, len(r.dispatches), k)
	}
}

// TestGPUTiled128Choice: the gpu family's float32 calls of 65 rows a
// batch and more take the 128×128 kernel, 64 and fewer (past the GEMV's
// 16) the 64×64 one, which SkipKernels "gpu/tiled128" restores for every
// M; the cpu family is unchanged.
func TestGPUTiled128Choice(t *testing.T) {
	for _, c := range []struct {
		m         uint32
		cfg       Config
		want      string
		linearToo bool
	}{
		{64, Config{Family: FamilyGPU}, "matmul_gpu.wgsl", true},
		{65, Config{Family: FamilyGPU}, "matmul_tiled128.wgsl", true},
		{1000, Config{Family: FamilyGPU}, "matmul_tiled128.wgsl", true},
		{1000, Config{Family: FamilyGPU, SkipKernels: gpuTiled128Name}, "matmul_gpu.wgsl", true},
		{1, Config{Family: FamilyGPU}, "matmul_gpu.wgsl", false}, // mm: no GEMV
		{1000, Config{Family: FamilyCPU}, "matmul.wgsl", true},
	} {
		r, err := recordMM(t, c.m, 64, 32, 65535, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := kernelFile(t, r); got != c.want {
			t.Errorf("mm M%d %+v: %s, want %s", c.m, c.cfg, got, c.want)
		}
		if c.linearToo {
			if got := kernelFile(t, recordOneLinear(t, c.m, 64, 33, 65535, c.cfg)); got != c.want {
				t.Errorf("linear M%d %+v: %s, want %s", c.m, c.cfg, got, c.want)
			}
		}
	}
}

// TestGPUSkinnyChunksAndGrid: the skinny linear's K chunks cover every
// vec4 unit once, none longer than its lanes' trip cap, and its grid
// covers every column block of 16, folded into 2-D past the
// per-dimension limit; it takes 9 to 16 rows with K % 4 == 0 only, and
// not under the Matmul overrides.
func TestGPUSkinnyChunksAndGrid(t *testing.T) {
	gpu := Config{Family: FamilyGPU}
	for _, c := range []struct {
		m, k, n, maxPerDim uint32
	}{
		{9, 64, 33, 65535},
		{16, 4 * gpuGEMVMaxTrips * 32 * 2, 5, 65535}, // two chunks and a bit
		{12, 60, 1000, 8},                            // 63 column blocks, folded
	} {
		if c.k == 4*gpuGEMVMaxTrips*32*2 {
			c.k += 4
		}
		r := recordOneLinear(t, c.m, c.k, c.n, c.maxPerDim, gpu)
		units := c.k / 4
		next := uint32(0)
		for i, d := range r.dispatches {
			if !strings.HasPrefix(d.k.Name, "gemv_skinny.wgsl") {
				t.Fatalf("%v: dispatch %d runs %.30s", c, i, d.k.Name)
			}
			begin, end := u32At(d.params, 3), u32At(d.params, 4)
			if begin != next || int64(end-begin) > gpuGEMVMaxTrips*32 {
				t.Errorf("%v: chunk %d [%d, %d) after %d", c, i, begin, end, next)
			}
			next = end
			g := d.groups
			if g[0] > c.maxPerDim || g[1] > c.maxPerDim || int64(g[0])*int64(g[1])*gpuSkinnyWarps*gpuSkinnyCols < int64(c.n) || g[2] != 1 {
				t.Errorf("%v: grid %v", c, g)
			}
		}
		if next != units {
			t.Errorf("%v: chunks end at %d, want %d", c, next, units)
		}
	}
	for _, c := range []struct {
		m, k uint32
		cfg  Config
		want string
	}{
		{8, 64, gpu, "gemv_gpu.wgsl"},
		{17, 64, gpu, "matmul_gpu.wgsl"},
		{12, 63, gpu, "gemv_gpu.wgsl"},
		{12, 64, Config{Family: FamilyGPU, Matmul: MatmulGEMV}, "gemv_gpu.wgsl"},
		{12, 64, Config{Family: FamilyGPU, Matmul: MatmulNoGEMV}, "matmul_gpu.wgsl"},
		{12, 64, Config{Family: FamilyGPU, SkipKernels: gpuSkinnyName}, "gemv_gpu.wgsl"},
		{12, 64, Config{Family: FamilyCPU}, "matmul.wgsl"},
	} {
		if got := kernelFile(t, recordOneLinear(t, c.m, c.k, 32, 65535, c.cfg)); got != c.want {
			t.Errorf("linear M%d K%d %+v: %s, want %s", c.m, c.k, c.cfg, got, c.want)
		}
	}
}

// TestGPUKernelWarpsByProfile: the GPU-family kernels that take warps a
// workgroup as template data get fewer on a device that allows fewer
// invocations a workgroup, and their grids still cover every column
// block; unknown (0) is WebGPU's 256.
func TestGPUKernelWarpsByProfile(t *testing.T) {
	for _, c := range []struct {
		inv, want, wantSkinny uint32
	}{{0, 256, 128}, {256, 256, 128}, {1024, 256, 128}, {128, 128, 128}, {64, 64, 64}, {32, 32, 32}} {
		gpu := Config{Family: FamilyGPU}
		prof := DeviceProfile{Class: ClassDiscrete, MaxInvocations: c.inv}
		// A 12-row linear on the skinny kernel, N = 100.
		b := serialization.NewBuilder()
		f := serialization.Float32
		x, w, out := b.Tensor(f, []uint32{12, 64}, -1), b.Tensor(f, []uint32{100, 64}, -1), b.Tensor(f, []uint32{12, 100}, -1)
		r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535, cfg: gpu}
		if err := runOp(&profiled{r, prof}, "aten.linear.default", x, w, b.Null(), out); err != nil {
			t.Fatal(err)
		}
		d := r.dispatches[0]
		if d.k.WorkgroupSize != c.wantSkinny || int64(d.groups[0])*int64(d.k.WorkgroupSize/32)*gpuSkinnyCols < 100 {
			t.Errorf("skinny, %d invocations: workgroup %d, grid %v", c.inv, d.k.WorkgroupSize, d.groups)
		}
		// A one-row int8 linear on the weight-word GEMV, N = 100.
		b = serialization.NewBuilder()
		x, out = b.Tensor(f, []uint32{1, 64}, -1), b.Tensor(f, []uint32{1, 100}, -1)
		w = b.Tensor(serialization.Int8, []uint32{100, 64}, -1)
		s := b.Tensor(f, []uint32{100}, -1)
		r = &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535, cfg: gpu}
		if err := runOp(&profiled{r, prof}, "aten._weight_int8pack_mm.default", x, w, s, out); err != nil {
			t.Fatal(err)
		}
		d = r.dispatches[0]
		if d.k.WorkgroupSize != c.want || int64(d.groups[0])*int64(d.k.WorkgroupSize/32)*4 < 100 {
			t.Errorf("weight-word GEMV, %d invocations: workgroup %d, grid %v", c.inv, d.k.WorkgroupSize, d.groups)
		}
	}
}

// TestSkipKernelsParse: Config.SkipKernels is a comma-separated list of
// table entry names, blanks around them and empty items ignored; a name
// that is no entry is an ErrConfig naming it, before anything records.
func TestSkipKernelsParse(t *testing.T) {
	for _, c := range []struct {
		skip    string
		skipped []string
		bad     string
	}{
		{"", nil, ""},
		{"gpu/tiled128", []string{"gpu/tiled128"}, ""},
		{" gpu/q4gemv , ,gpu/skinny,", []string{"gpu/q4gemv", "gpu/skinny"}, ""},
		{"gpu/q4gemv,gpu/nosuch", []string{"gpu/q4gemv", "gpu/nosuch"}, "gpu/nosuch"},
		{"GPU/Q4GEMV", []string{"GPU/Q4GEMV"}, "GPU/Q4GEMV"},
	} {
		cfg := Config{SkipKernels: c.skip}
		got := cfg.skipped()
		if strings.Join(got, "|") != strings.Join(c.skipped, "|") {
			t.Errorf("%q: skipped %q, want %q", c.skip, got, c.skipped)
		}
		for _, name := range c.skipped {
			if !cfg.skipsKernel(name) {
				t.Errorf("%q does not skip %q", c.skip, name)
			}
		}
		if cfg.skipsKernel("gpu/tiled") {
			t.Errorf("%q skips gpu/tiled", c.skip)
		}
		err := checkSkipKernels(cfg)
		if (err != nil) != (c.bad != "") || err != nil && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `"`+c.bad+`"`)) {
			t.Errorf("%q: err %v, want ErrConfig naming %q", c.skip, err, c.bad)
		}
		// Recording fails with it, and records nothing.
		if c.bad != "" {
			b := serialization.NewBuilder()
			f := serialization.Float32
			x, w, out := b.Tensor(f, []uint32{1, 8}, -1), b.Tensor(f, []uint32{4, 8}, -1), b.Tensor(f, []uint32{1, 4}, -1)
			r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535, cfg: cfg}
			if err := runOp(r, "aten.linear.default", x, w, b.Null(), out); !errors.Is(err, ErrConfig) || len(r.dispatches) != 0 {
				t.Errorf("%q: linear recorded %d dispatches, err %v", c.skip, len(r.dispatches), err)
			}
		}
	}
}
