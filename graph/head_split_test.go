package graph_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// headRows are adversarial rows of n logits for the head's pick and
// top-k: random, the largest tied across chunks (the first must win) and
// within one, in the last (partial) chunk, NaNs (at 0 too), all NaN,
// infinities, all equal, both zeros.
func headRows(n int, r *rand.Rand) map[string][]float32 {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	fill := func(f func(i int) float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}
	random := fill(func(int) float32 { return float32(r.NormFloat64() * 3) })
	rows := map[string][]float32{"random": random}
	ties := slices.Clone(random)
	for _, i := range []int{n - 1, n / 2, 1537, 700, 699} { // 699 and 700: one chunk; 699 first
		if i < n {
			ties[i] = 50
		}
	}
	rows["ties across chunks"] = ties
	last := slices.Clone(random)
	last[n-1] = 99
	rows["largest last"] = last
	nans := fill(func(i int) float32 {
		if i%7 == 0 {
			return nan
		}
		return float32(r.Float64())
	})
	nans[n-2] = 5
	rows["nans"] = nans
	rows["all nan"] = fill(func(int) float32 { return nan })
	infs := slices.Clone(random)
	infs[3], infs[n-5], infs[n/3] = -inf, inf, inf
	rows["infinities"] = infs
	rows["all -inf"] = fill(func(int) float32 { return -inf })
	rows["all equal"] = fill(func(int) float32 { return 0.25 })
	zeros := fill(func(i int) float32 {
		if i%2 == 0 {
			return float32(math.Copysign(0, -1))
		}
		return -1
	})
	zeros[n-3] = 0
	rows["zeros"] = zeros
	return rows
}

// TestHeadSplitArgmax checks the head's pick against the host argmax at
// lengths around where the gpu family's two-level kernel starts (32,768
// and 32,769) and its chunks' edges, and at Llama 3's 128,256, in both
// families (the cpu family's is one workgroup at every length) and with
// the two-level kernel skipped (ops.Config.SkipKernels), on the rows of
// headRows; each load's kernel is the one the table gives.
func TestHeadSplitArgmax(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 9))
	for _, n := range []int{32768, 32769, 32768 + 513, 49152, 128256} {
		rows := headRows(n, r)
		for _, k := range []ops.Config{{Family: ops.FamilyCPU}, {Family: ops.FamilyGPU}, {Family: ops.FamilyGPU, SkipKernels: "gpu/argmax-split"}} {
			t.Run(fmt.Sprintf("n=%d/family=%v/skip=%q", n, k.Family, k.SkipKernels), func(t *testing.T) {
				h := cloneHeadWith(ctx, t, 2, n, k)
				am, _ := h.Kernels()
				split := k.Family == ops.FamilyGPU && n > 32768 && k.SkipKernels == ""
				if want := map[bool]string{false: "any/argmax", true: k.Family.String() + "/argmax-split"}[split]; am != want {
					t.Fatalf("argmax kernel %s, want %s", am, want)
				}
				if want := map[bool]int{false: 1, true: 2}[split]; h.Dispatches() != want {
					t.Errorf("%d dispatches, want %d", h.Dispatches(), want)
				}
				names := slices.Sorted(func(yield func(string) bool) {
					for name := range rows {
						if !yield(name) {
							return
						}
					}
				})
				for _, name := range names {
					row := rows[name]
					in := append(slices.Clone(rows["random"]), row...) // the head reads the last row
					st, err := h.Submit(ctx, []graph.Tensor{graph.Float32Tensor([]int64{1, 2, int64(n)}, in)}, graph.StepOptions{})
					if err != nil {
						t.Fatal(err)
					}
					res, err := h.Wait(ctx, st)
					if err != nil {
						t.Fatal(err)
					}
					if want := hostArgmax(row); res.Token != want {
						t.Errorf("%s: picked %d, the host %d", name, res.Token, want)
					}
				}
			})
		}
	}
}

// TestHeadSplitTopK checks the two-level top-k against the host (and
// against the one-workgroup kernel, on the same rows) around where it
// starts (past 32,768 in the gpu family, 65,536 in the cpu family) and
// at 128,256: the k largest exactly, the maximum exactly, the normalizer
// within 1e-5 (NaN where the host's is), ties at the k-th largest that
// overflow the read-back giving no Top, in both families.
func TestHeadSplitTopK(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(4, 2))
	for _, n := range []int{32768, 32769, 40000, 65536, 65537, 128256} {
		rows := headRows(n, r)
		ties := make([]float32, n) // 400 values of 7 in different chunks, below 2 larger, above the rest
		for i := range ties {
			ties[i] = float32(r.Float64())
		}
		for i := range 400 {
			ties[(i*7919)%n] = 7
		}
		ties[5], ties[n-1] = 8, 9
		rows["ties at the k-th"] = ties
		for _, fam := range []ops.Family{ops.FamilyCPU, ops.FamilyGPU} {
			t.Run(fmt.Sprintf("n=%d/family=%v", n, fam), func(t *testing.T) {
				h := cloneHeadWith(ctx, t, 2, n, ops.Config{Family: fam})
				one := cloneHeadWith(ctx, t, 2, n, ops.Config{Family: fam, SkipKernels: fam.String() + "/topk-split"})
				_, tk := h.Kernels()
				split := n > map[ops.Family]int{ops.FamilyCPU: 65536, ops.FamilyGPU: 32768}[fam]
				if want := map[bool]string{false: "any/topk", true: fam.String() + "/topk-split"}[split]; tk != want {
					t.Fatalf("top-k kernel %s, want %s", tk, want)
				}
				if want := map[bool]int{false: 1, true: 9}[split]; h.TopKDispatches() != want {
					t.Errorf("%d top-k dispatches, want %d", h.TopKDispatches(), want)
				}
				for _, c := range []struct {
					row      string
					k        int
					temp     float64
					overflow bool
				}{
					{"random", 1, 1, false}, {"random", 40, 0.7, false}, {"random", 256, 1.5, false},
					{"ties across chunks", 3, 1, false}, {"nans", 20, 1, false}, {"infinities", 10, 0.9, false},
					{"zeros", 4, 1, true}, {"all equal", 5, 1, true}, {"all nan", 5, 1, true}, {"all -inf", 2, 1, true},
					{"ties at the k-th", 2, 1, false}, {"ties at the k-th", 100, 1.2, true},
				} {
					row := rows[c.row]
					in := append(slices.Clone(rows["random"]), row...)
					var res [2]graph.HeadResult
					for j, hh := range []*graph.Head{h, one} {
						st, err := hh.Submit(ctx, []graph.Tensor{graph.Float32Tensor([]int64{1, 2, int64(n)}, in)}, graph.StepOptions{TopK: c.k, Temperature: c.temp})
						if err != nil {
							t.Fatal(err)
						}
						if res[j], err = hh.Wait(ctx, st); err != nil {
							t.Fatal(err)
						}
					}
					what := fmt.Sprintf("%s, k %d", c.row, c.k)
					want, mx, z := hostTop(row, c.k, c.temp)
					got := res[0]
					if got.Max != mx && !(got.Max != got.Max && mx != mx) { // +0 stands for both zeros
						t.Errorf("%s: max %v, want %v", what, got.Max, mx)
					}
					if (z != z) != (got.SumExp != got.SumExp) || math.Abs(got.SumExp-z) > 1e-5*z {
						t.Errorf("%s: sum %v, want %v", what, got.SumExp, z)
					}
					if (got.SumExp != got.SumExp) != (res[1].SumExp != res[1].SumExp) || math.Abs(got.SumExp-res[1].SumExp) > 1e-5*res[1].SumExp {
						t.Errorf("%s: sum %v, the one-workgroup kernel's %v", what, got.SumExp, res[1].SumExp)
					}
					if got.Token != hostArgmax(row) {
						t.Errorf("%s: token %d, want %d", what, got.Token, hostArgmax(row))
					}
					for j, g := range res {
						if c.overflow {
							if g.Top != nil {
								t.Errorf("%s: kernel %d: %d of the largest, want none (ties overflow)", what, j, len(g.Top))
							}
							continue
						}
						if len(g.Top) != len(want) {
							t.Fatalf("%s: kernel %d: %d of the largest, want %d", what, j, len(g.Top), len(want))
						}
						for i := range want {
							if w := want[i]; w.Token != g.Top[i].Token || math.Float32bits(w.Logit) != math.Float32bits(g.Top[i].Logit) {
								t.Fatalf("%s: kernel %d: largest %d: %+v, want %+v", what, j, i, g.Top[i], w)
							}
						}
					}
				}
			})
		}
	}
}

// BenchmarkHeadKernels times a step of a one-op graph (a copy of the
// logits) with the head's argmax, or argmax and top-k (k 40), at 128,256
// logits: the table's kernels and the one-workgroup kernels (their
// two-level entries skipped), alternating step by step so that the
// machine's noise falls on both. It reports the median µs per step of
// each. Run it with
//
//	go test ./graph -run '^$' -bench HeadKernels -benchtime 20x
func BenchmarkHeadKernels(b *testing.B) {
	ctx := context.Background()
	const n = 128256
	row := make([]float32, n)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range row {
		row[i] = float32(r.NormFloat64())
	}
	in := []graph.Tensor{graph.Float32Tensor([]int64{1, 1, n}, row)}
	for _, fam := range []ops.Family{ops.FamilyCPU, ops.FamilyGPU} {
		for _, topk := range []int{0, 40} {
			b.Run(fmt.Sprintf("family=%v/topk=%d", fam, topk), func(b *testing.B) {
				heads := []*graph.Head{
					cloneHeadB(ctx, b, n, ops.Config{Family: fam}),
					cloneHeadB(ctx, b, n, ops.Config{Family: fam, SkipKernels: map[ops.Family]string{ops.FamilyCPU: "cpu/topk-split", ops.FamilyGPU: "gpu/argmax-split,gpu/topk-split"}[fam]}),
				}
				times := make([][]float64, len(heads))
				o := graph.StepOptions{TopK: topk, Temperature: 1}
				for i := 0; i < b.N; i++ {
					for k, h := range heads {
						t0 := time.Now()
						st, err := h.Submit(ctx, in, o)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := h.Wait(ctx, st); err != nil {
							b.Fatal(err)
						}
						times[k] = append(times[k], float64(time.Since(t0).Microseconds()))
					}
				}
				for k, name := range []string{"table-µs/step", "one-workgroup-µs/step"} {
					slices.Sort(times[k])
					b.ReportMetric(times[k][len(times[k])/2], name)
				}
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// cloneHeadB is cloneHeadWith for a benchmark, on one row.
func cloneHeadB(ctx context.Context, b *testing.B, vocab int, k ops.Config) *graph.Head {
	sb := serialization.NewBuilder()
	x := sb.Tensor(serialization.Float32, []uint32{1, 1, uint32(vocab)}, -1)
	y := sb.Tensor(serialization.Float32, []uint32{1, 1, uint32(vocab)}, -1)
	sb.Op("aten.clone.default", x, sb.Null(), y)
	sb.Inputs(x)
	sb.Outputs(y)
	g := loadBuilder(b, sb, graph.Options{Kernels: k})
	h, err := g.NewHead(graph.HeadOptions{Logits: 0, Token: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return h
}
