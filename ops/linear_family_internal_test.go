package ops

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// profiled is a recorder that describes a device (Profiler).
type profiled struct {
	*recorder
	p DeviceProfile
}

func (p *profiled) DeviceProfile() DeviceProfile { return p.p }

// recordQ4 records an m-row et_vk.linear_q4gsw (group g, no bias) without
// a device, on builder r (nil: a new recorder with cfg).
func recordQ4(t *testing.T, m, k, n, g uint32, cfg Config) *recorder {
	t.Helper()
	b := serialization.NewBuilder()
	f := serialization.Float32
	x := b.Tensor(f, []uint32{m, k}, -1)
	w := b.Tensor(serialization.Uint8, []uint32{n, (k + 7) / 8 * 4}, -1)
	s := b.Tensor(f, []uint32{(k + g - 1) / g, n}, -1)
	out := b.Tensor(f, []uint32{m, n}, -1)
	r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535, cfg: cfg}
	if err := runOp(r, "et_vk.linear_q4gsw.default", x, w, s, b.Int(int64(g)), b.Null(), out); err != nil {
		t.Fatal(err)
	}
	return r
}

// recordInt8 records an m-row aten._weight_int8pack_mm without a device.
func recordInt8(t *testing.T, m, k, n uint32, cfg Config) *recorder {
	t.Helper()
	b := serialization.NewBuilder()
	f := serialization.Float32
	x := b.Tensor(f, []uint32{m, k}, -1)
	w := b.Tensor(serialization.Int8, []uint32{n, k}, -1)
	s := b.Tensor(f, []uint32{n}, -1)
	out := b.Tensor(f, []uint32{m, n}, -1)
	r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535, cfg: cfg}
	if err := runOp(r, "aten._weight_int8pack_mm.default", x, w, s, out); err != nil {
		t.Fatal(err)
	}
	return r
}

// kernelFile is the shader file of r's first dispatch.
func kernelFile(t *testing.T, r *recorder) string {
	t.Helper()
	if len(r.dispatches) == 0 {
		t.Fatal("no dispatch")
	}
	name := r.dispatches[0].k.Name
	return name[:strings.Index(name, ".wgsl")+5]
}

// TestLinearKernelTable checks the kernel each family's table entry gives
// representative calls: the lavapipe kernels under FamilyCPU, the GPU ones
// under FamilyGPU (the 4-bit ones on gemv_gpu.wgsl: this builder packs no
// weights, so the weight-word GEMV, which reads its scales packed per
// row, gives way), the tiled quantized kernel where the GPU GEMV cannot
// read the weight or M is large, and the Matmul overrides in both.
func TestLinearKernelTable(t *testing.T) {
	cpu, gpu := Config{Family: FamilyCPU}, Config{Family: FamilyGPU}
	for _, c := range []struct {
		name string
		rec  func(cfg Config) *recorder
		cpu  string // kernel file under FamilyCPU
		gpu  string // under FamilyGPU
	}{
		{"linear M1", func(cfg Config) *recorder { return recordOneLinear(t, 1, 64, 33, 65535, cfg) }, "gemv.wgsl", "gemv_gpu.wgsl"},
		{"linear M1 K%4", func(cfg Config) *recorder { return recordOneLinear(t, 1, 63, 32, 65535, cfg) }, "gemv.wgsl", "gemv_gpu.wgsl"},
		{"linear M16 N%4==0", func(cfg Config) *recorder { return recordOneLinear(t, 16, 64, 32, 65535, cfg) }, "matmul.wgsl", "gemv_skinny.wgsl"},
		{"linear M8 N%4==0", func(cfg Config) *recorder { return recordOneLinear(t, 8, 64, 32, 65535, cfg) }, "matmul.wgsl", "gemv_gpu.wgsl"},
		{"linear M17", func(cfg Config) *recorder { return recordOneLinear(t, 17, 64, 33, 65535, cfg) }, "matmul.wgsl", "matmul_gpu.wgsl"},
		{"mm M1", func(cfg Config) *recorder {
			r, err := recordMM(t, 1, 64, 32, 65535, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}, "matmul.wgsl", "matmul_gpu.wgsl"},
		{"q4 M1 g32", func(cfg Config) *recorder { return recordQ4(t, 1, 64, 8, 32, cfg) }, "qgemv.wgsl", "gemv_gpu.wgsl"},
		{"q4 M16 g64", func(cfg Config) *recorder { return recordQ4(t, 16, 128, 8, 64, cfg) }, "qlinear.wgsl", "gemv_gpu.wgsl"},
		{"q4 M17", func(cfg Config) *recorder { return recordQ4(t, 17, 64, 8, 32, cfg) }, "qlinear.wgsl", "matmul_gpu.wgsl"},
		{"q4 g16", func(cfg Config) *recorder { return recordQ4(t, 1, 64, 8, 16, cfg) }, "qlinear.wgsl", "matmul_gpu.wgsl"},
		{"int8 M1 K%16", func(cfg Config) *recorder { return recordInt8(t, 1, 64, 8, cfg) }, "qlinear.wgsl", "gemv_quant.wgsl"},
		{"int8 M3 K%4", func(cfg Config) *recorder { return recordInt8(t, 3, 20, 8, cfg) }, "qlinear.wgsl", "gemv_quant.wgsl"},
		{"int8 M9", func(cfg Config) *recorder { return recordInt8(t, 9, 20, 8, cfg) }, "qlinear.wgsl", "gemv_gpu.wgsl"},
	} {
		if got := kernelFile(t, c.rec(cpu)); got != c.cpu {
			t.Errorf("%s, cpu: %s, want %s", c.name, got, c.cpu)
		}
		if got := kernelFile(t, c.rec(gpu)); got != c.gpu {
			t.Errorf("%s, gpu: %s, want %s", c.name, got, c.gpu)
		}
	}
	// The Matmul overrides hold in the gpu family too.
	if got := kernelFile(t, recordOneLinear(t, 1, 64, 33, 65535, Config{Family: FamilyGPU, Matmul: MatmulNoGEMV})); got != "matmul_gpu.wgsl" {
		t.Errorf("gpu, MatmulNoGEMV, M1: %s", got)
	}
	if got := kernelFile(t, recordOneLinear(t, 40, 64, 33, 65535, Config{Family: FamilyGPU, Matmul: MatmulGEMV})); got != "gemv_gpu.wgsl" {
		t.Errorf("gpu, MatmulGEMV, M40: %s", got)
	}
	if got := kernelFile(t, recordQ4(t, 1, 64, 8, 32, Config{Family: FamilyGPU, NoQGEMV: true})); got != "matmul_gpu.wgsl" {
		t.Errorf("gpu, NoQGEMV, q4 M1: %s", got)
	}
}

// TestAutoFamilyByClass: FamilyAuto picks the cpu family for a CPU adapter
// and for a builder that describes no device, the gpu family for GPUs and
// adapters of unknown type; a forced family wins over the class.
func TestAutoFamilyByClass(t *testing.T) {
	for _, c := range []struct {
		class DeviceClass
		fam   Family
		want  string
	}{
		{ClassNone, FamilyAuto, "gemv.wgsl"},
		{ClassCPU, FamilyAuto, "gemv.wgsl"},
		{ClassDiscrete, FamilyAuto, "gemv_gpu.wgsl"},
		{ClassIntegrated, FamilyAuto, "gemv_gpu.wgsl"},
		{ClassOther, FamilyAuto, "gemv_gpu.wgsl"},
		{ClassDiscrete, FamilyCPU, "gemv.wgsl"},
		{ClassCPU, FamilyGPU, "gemv_gpu.wgsl"},
	} {
		b := serialization.NewBuilder()
		f := serialization.Float32
		x, w, out := b.Tensor(f, []uint32{1, 64}, -1), b.Tensor(f, []uint32{32, 64}, -1), b.Tensor(f, []uint32{1, 32}, -1)
		r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535, cfg: Config{Family: c.fam}}
		fn, _ := Lookup("aten.linear.default")
		if err := fn(&profiled{r, DeviceProfile{Class: c.class}}, []int32{x, w, b.Null(), out}); err != nil {
			t.Fatal(err)
		}
		if got := kernelFile(t, r); got != c.want {
			t.Errorf("%v, %v: %s, want %s", c.class, c.fam, got, c.want)
		}
	}
}

// TestParseFamily round-trips the CLI's spellings and rejects others.
func TestParseFamily(t *testing.T) {
	for _, f := range []Family{FamilyAuto, FamilyCPU, FamilyGPU} {
		if g, err := ParseFamily(f.String()); err != nil || g != f {
			t.Errorf("ParseFamily(%q) = %v, %v", f.String(), g, err)
		}
	}
	if f, err := ParseFamily(""); err != nil || f != FamilyAuto {
		t.Errorf(`ParseFamily("") = %v, %v`, f, err)
	}
	if _, err := ParseFamily("tpu"); err == nil {
		t.Error(`ParseFamily("tpu") did not fail`)
	}
}

// TestLinearPacks: the packings the table asks of a weight: halves for a
// FLOAT16 weight in both families (their kernels read halves at every M),
// the [K, N] transpose only for the cpu family's tiled kernel under
// PackLinear, none otherwise.
func TestLinearPacks(t *testing.T) {
	call := func(half, transpose bool) *linearCall {
		return &linearCall{format: formatF32, f: matmulCall{m: 1, n: 32, k: 64, transB: true, alpha: 1, beta: 1, bias: -1},
			canHalf: half, canTranspose: transpose, half: -1, transposed: -1}
	}
	for _, c := range []struct {
		fam             Family
		half, transpose bool
		want            []weightPack
	}{
		{FamilyCPU, false, false, nil},
		{FamilyGPU, false, false, nil},
		{FamilyCPU, true, false, []weightPack{packHalf}},
		{FamilyGPU, true, false, []weightPack{packHalf}},
		{FamilyCPU, false, true, []weightPack{packTranspose}},
		{FamilyGPU, false, true, nil},
	} {
		if got := linearPacks(c.fam, call(c.half, c.transpose), Config{}); !slices.Equal(got, c.want) {
			t.Errorf("%v half %v transpose %v: %v, want %v", c.fam, c.half, c.transpose, got, c.want)
		}
	}
}

// TestKChunks: chunks cover [0, trips) once each, none longer than the
// cap, accumulate on all but the first, last on the final one only; zero
// trips is one [0, 0) chunk.
func TestKChunks(t *testing.T) {
	for _, c := range []struct{ trips, max int64 }{{0, 4}, {1, 4}, {4, 4}, {5, 4}, {17, 4}, {100, 7}} {
		next, n := int64(0), 0
		err := kChunks(c.trips, c.max, func(begin, end int64, accumulate, last uint32) error {
			if begin != next || end-begin > c.max || (end <= begin && c.trips > 0) {
				t.Errorf("trips %d max %d: chunk [%d, %d) after %d", c.trips, c.max, begin, end, next)
			}
			if (accumulate == 1) != (n > 0) || (last == 1) != (end == c.trips) {
				t.Errorf("trips %d max %d: chunk %d accumulate %d last %d", c.trips, c.max, n, accumulate, last)
			}
			next, n = end, n+1
			return nil
		})
		if err != nil || next != c.trips || n == 0 {
			t.Errorf("trips %d max %d: ended at %d after %d chunks, %v", c.trips, c.max, next, n, err)
		}
	}
}

// TestGPUGEMVParamsSize: the Go twin of gemv_gpu.wgsl's Params is its
// 16 4-byte fields, 64 bytes.
func TestGPUGEMVParamsSize(t *testing.T) {
	if n := binary.Size(gpuGEMVParams{}); n != 64 {
		t.Fatalf("gpuGEMVParams is %d bytes, want 64", n)
	}
	p := gpuGEMVParams{M: 1, N: 2, K: 3, KBegin: 4, KEnd: 5, Accumulate: 6, Last: 7, BiasSM: 8, BiasSN: 9,
		Alpha: 10, Beta: 11, ActLo: 12, ActHi: 13, GW: 14, LdS: 15}
	b := p.bytes()
	for i, want := range []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9} {
		if got := binary.LittleEndian.Uint32(b[4*i:]); got != want {
			t.Errorf("word %d = %d, want %d", i, got, want)
		}
	}
	if got := binary.LittleEndian.Uint32(b[4*14:]); got != 15 {
		t.Errorf("ld_s = %d, want 15", got)
	}
}

// TestGPUGEMVChunksAndGrid: the GPU GEMV's K chunks cover every unit once,
// none longer than its lanes' trip cap, and the grid covers every column
// and row block, folded into 2-D past the per-dimension limit (the skinny
// linear, which takes 9 to 16 rows by default, skipped;
// TestGPUSkinnyChunksAndGrid has its own).
func TestGPUGEMVChunksAndGrid(t *testing.T) {
	gpu := Config{Family: FamilyGPU, SkipKernels: gpuSkinnyName}
	for _, c := range []struct {
		m, k, n, maxPerDim uint32
	}{
		{1, 64, 33, 65535},
		{3, 4 * gpuGEMVMaxTrips * gpuGEMVLanes * 2, 5, 65535}, // two chunks and a bit
		{16, 60, 1000, 16}, // 125 column blocks, folded
	} {
		r := recordOneLinear(t, c.m, c.k, c.n, c.maxPerDim, gpu)
		units := int64(c.k / 4)
		next := uint32(0)
		for i, d := range r.dispatches {
			begin, end := u32At(d.params, 3), u32At(d.params, 4)
			if begin != next || int64(end-begin) > gpuGEMVMaxTrips*gpuGEMVLanes {
				t.Errorf("%v: chunk %d [%d, %d) after %d", c, i, begin, end, next)
			}
			next = end
			g := d.groups
			if g[0] > c.maxPerDim || g[1] > c.maxPerDim || int64(g[0])*int64(g[1])*gpuGEMVCols < int64(c.n) || g[2] != 1 {
				t.Errorf("%v: grid %v", c, g)
			}
		}
		if int64(next) != units {
			t.Errorf("%v: chunks end at %d, want %d", c, next, units)
		}
	}
	// Forced for 40 rows: three row blocks of 16 along z.
	r := recordOneLinear(t, 40, 64, 8, 65535, Config{Family: FamilyGPU, Matmul: MatmulGEMV})
	if g := r.dispatches[0].groups; g[2] != 3 {
		t.Errorf("40 rows: grid %v, want 3 row blocks", g)
	}
}

// TestGPUTiledChunksAndGrid: the tiled kernel's K chunks are whole tiles
// (the last clipped to K), none more than gpuTiledMaxTrips tiles, and the
// grid covers M and N in 64×64 tiles (the 128×128 kernel, which takes
// M = 65 by default, skipped; TestGPUTiled128ChunksAndGrid has its own).
func TestGPUTiledChunksAndGrid(t *testing.T) {
	gpu := Config{Family: FamilyGPU, SkipKernels: gpuTiled128Name}
	k := uint32(gpuTiledMaxTrips*gpuTiledBK*2 + 5)
	r, err := recordMM(t, 65, k, 130, 65535, gpu)
	if err != nil {
		t.Fatal(err)
	}
	next := uint32(0)
	for i, d := range r.dispatches {
		begin, end := u32At(d.params, 3), u32At(d.params, 4)
		if begin != next || (end-begin)%gpuTiledBK != 0 && end != k || end-begin > gpuTiledMaxTrips*gpuTiledBK {
			t.Errorf("chunk %d [%d, %d) after %d", i, begin, end, next)
		}
		if d.groups != [3]uint32{3, 2, 1} {
			t.Errorf("grid %v, want [3 2 1]", d.groups)
		}
		next = end
	}
	if next != k || len(r.dispatches) != 3 {
		t.Errorf("chunks end at %d after %d dispatches, want %d after 3", next, len(r.dispatches), k)
	}
}
