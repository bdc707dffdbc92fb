package ops

import (
	"strings"
	"testing"
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
			if got := kernelFile(t, recordLinear(t, c.m, 64, 33, 65535, c.cfg)); got != c.want {
				t.Errorf("linear M%d %+v: %s, want %s", c.m, c.cfg, got, c.want)
			}
		}
	}
}
