package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestRunKernels runs a linear + relu graph with --kernels cpu, gpu and
// auto: the same outputs (within float32 rounding of a 64-term dot
// product), the family named on run -v's adapter line (auto: cpu on a CPU
// adapter, gpu otherwise), and a value other than auto, cpu or gpu
// rejected before anything loads.
func TestRunKernels(t *testing.T) {
	dir := t.TempDir()
	const m, k, n = 3, 64, 20
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{m, k}, -1)
	wv := make([]float32, n*k)
	for i := range wv {
		wv[i] = float32(i%13)/8 - 0.75
	}
	w := b.InlineConst(f, []uint32{n, k}, graph.Float32Tensor([]int64{n, k}, wv).Data)
	h := b.Tensor(f, []uint32{m, n}, -1)
	y := b.Tensor(f, []uint32{m, n}, -1)
	b.Op("aten.linear.default", x, w, b.Null(), h)
	b.Op("aten.relu.default", h, y)
	b.Inputs(x)
	b.Outputs(y)
	model := write(t, dir, "linear.bin", mustBlob(t, b))
	xv := make([]float32, m*k)
	for i := range xv {
		xv[i] = float32(i%7)/4 - 0.5
	}
	in := writeNPY(t, dir, "x.npy", graph.Float32Tensor([]int64{m, k}, xv))
	want := make([]float32, m*n)
	for r := range m {
		for c := range n {
			var s float64
			for j := range k {
				s += float64(xv[r*k+j]) * float64(wv[c*k+j])
			}
			want[r*n+c] = float32(max(s, 0))
		}
	}
	for _, fam := range []string{"cpu", "gpu", "auto"} {
		out := filepath.Join(dir, fam)
		code, stdout, stderr := invoke(t, "run", "-v", "--kernels", fam, "--input", in, "--output-dir", out, model)
		if code != 0 || !strings.Contains(stdout, "adapter:") {
			t.Fatalf("--kernels %s: exit %d, stdout %q, stderr %q", fam, code, stdout, stderr)
		}
		line := stdout[strings.Index(stdout, "adapter:"):]
		line = line[:strings.Index(line, "\n")]
		wantFam := fam
		if fam == "auto" {
			wantFam = "gpu"
			if strings.Contains(line, "llvmpipe") {
				wantFam = "cpu"
			}
		}
		if !strings.Contains(line, ", "+wantFam+" kernels") {
			t.Errorf("--kernels %s: adapter line %q does not name %s kernels", fam, line, wantFam)
		}
		got := float32s(t, readNPY(t, filepath.Join(out, "output_0.npy")))
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-5 {
				t.Errorf("--kernels %s: y[%d] = %v, want %v", fam, i, got[i], want[i])
				break
			}
		}
	}
	code, _, stderr := invoke(t, "run", "--kernels", "tpu", "--input", in, "--output-dir", dir, model)
	if code != 1 || !strings.Contains(stderr, `flag --kernels: "tpu" is not auto, cpu or gpu`) {
		t.Errorf("--kernels tpu: exit %d, stderr %q", code, stderr)
	}
}
