package graph_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// hostArgmax is llm's greedy pick: the first largest, NaN never picked
// unless all are.
func hostArgmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] || (v[best] != v[best] && x == x) {
			best = i
		}
	}
	return int32(best)
}

// TestHeadGreedyPipelined decodes greedily with a Head, submitting each
// step before the previous one's token is read (fed from the device), and
// with Execute plus a host argmax on a second graph: the tokens must be
// the same at every step. The prompt's own pick, a re-record (a new
// token count), a second prompt after the first sequence and a step
// submitted past the last read token (abandoned, as after a stop token)
// are all on the way. Both cache styles, both memory plans.
func TestHeadGreedyPipelined(t *testing.T) {
	ctx := context.Background()
	for _, split := range []bool{false, true} {
		for _, plan := range models.Plans {
			t.Run(fmt.Sprintf("split=%v/plan=%s", split, plan), func(t *testing.T) {
				d := newPlannedDecoder(t, split, plan)
				g, host := loadDecoder(t, d), loadDecoder(t, d)
				// Outputs: h, then the logits.
				h, err := g.NewHead(graph.HeadOptions{Logits: 1, Token: 0})
				if err != nil {
					t.Fatal(err)
				}
				defer h.Close()
				hostStep := func(tokens []int32, pos int64) int32 {
					outs, err := host.Execute(ctx, d.Inputs(tokens, pos))
					if err != nil {
						t.Fatal(err)
					}
					v, err := outs[1].Float32s()
					if err != nil {
						t.Fatal(err)
					}
					return hostArgmax(v[len(v)-int(d.Cfg.Vocab):])
				}
				for _, prompt := range [][]int32{{5, 17, 42}, {3}, {9, 4}} {
					// The host's sequence.
					const steps = 12
					var want []int32
					pos := int64(0)
					tok := hostStep(prompt, pos)
					pos += int64(len(prompt))
					for len(want) < steps {
						want = append(want, tok)
						tok = hostStep([]int32{tok}, pos)
						pos++
					}
					// The head's, pipelined two deep.
					p, err := h.Submit(ctx, d.Inputs(prompt, 0), graph.StepOptions{})
					if err != nil {
						t.Fatal(err)
					}
					queue := []graph.HeadStep{p}
					pos = int64(len(prompt))
					var got []int32
					for len(got) < steps {
						// Step pos is submitted before the token it eats is read.
						next, err := h.Submit(ctx, d.Inputs([]int32{-1}, pos), graph.StepOptions{Fed: true})
						if err != nil {
							t.Fatalf("step at %d: %v", pos, err)
						}
						pos++
						var tok int32
						tok, queue = waitOldest(ctx, t, h, append(queue, next))
						got = append(got, tok)
					}
					// One step is still in flight, as after a stop token:
					// it is read and dropped before the next prompt.
					if _, err := h.Wait(ctx, queue[0]); err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("prompt %v: head tokens %v, host tokens %v", prompt, got, want)
					}
				}
			})
		}
	}
}

// TestHeadArgmax checks the head's pick on logits with ties, NaNs, both
// zeros, infinities and subnormals against the host argmax, through a
// one-op graph (the logits are the graph's input copied to its output).
func TestHeadArgmax(t *testing.T) {
	ctx := context.Background()
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	sub := math.Float32frombits(1)
	for _, tc := range []struct {
		name string
		rows [][]float32
	}{
		{"ties", [][]float32{{1, 3, 3, 2}}},
		{"nan first", [][]float32{{nan, -inf, -5, nan}}},
		{"all nan", [][]float32{{nan, nan, nan}}},
		{"zeros", [][]float32{{-0.0, 0, -1}}},
		{"negative zero later", [][]float32{{-1, float32(math.Copysign(0, -1)), 0}}},
		{"inf", [][]float32{{3, inf, inf, nan}}},
		{"-inf", [][]float32{{-inf, -inf}}},
		{"subnormals", [][]float32{{0, sub, 2 * sub, -sub}}},
		{"negative subnormals", [][]float32{{-sub, -2 * sub, -sub}}},
		{"last row", [][]float32{{9, 0, 0}, {0, 0, 1}}},
		{"long", longRow(1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, vocab := len(tc.rows), len(tc.rows[0])
			h := cloneHead(ctx, t, rows, vocab)
			var flat []float32
			for _, r := range tc.rows {
				flat = append(flat, r...)
			}
			p, err := h.Submit(ctx, []graph.Tensor{graph.Float32Tensor([]int64{1, int64(rows), int64(vocab)}, flat)}, graph.StepOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := h.Wait(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := r.Token, hostArgmax(tc.rows[rows-1]); got != want {
				t.Errorf("head picked %d, host %d", got, want)
			}
		})
	}
}

// waitOldest waits for the oldest step of queue, the head's steps in
// submission order, and returns its token and the steps still in flight.
func waitOldest(ctx context.Context, t *testing.T, h *graph.Head, queue []graph.HeadStep) (int32, []graph.HeadStep) {
	t.Helper()
	r, err := h.Wait(ctx, queue[0])
	if err != nil {
		t.Fatal(err)
	}
	return r.Token, queue[1:]
}

// cloneHead loads a graph that copies its [1, rows, vocab] input to its
// output (the logits as given) and returns a head on that output; both
// are closed when t ends.
func cloneHead(ctx context.Context, t *testing.T, rows, vocab int) *graph.Head {
	t.Helper()
	return cloneHeadWith(ctx, t, rows, vocab, ops.Config{})
}

// cloneHeadWith is cloneHead with kernel choices: a head on a graph
// that copies its [1, rows, vocab] input to its output.
func cloneHeadWith(ctx context.Context, t *testing.T, rows, vocab int, k ops.Config) *graph.Head {
	t.Helper()
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, []uint32{1, uint32(rows), uint32(vocab)}, -1)
	y := b.Tensor(serialization.Float32, []uint32{1, uint32(rows), uint32(vocab)}, -1)
	b.Op("aten.clone.default", x, b.Null(), y)
	b.Inputs(x)
	b.Outputs(y)
	g := loadBuilder(t, b, graph.Options{Kernels: k})
	h, err := g.NewHead(graph.HeadOptions{Logits: 0, Token: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// longRow is one row of n values whose maximum is repeated at a few
// places past the kernel's first stride (two of them 256 apart, so one
// lane of the 256-lane kernel meets both), with NaNs about.
func longRow(n int) [][]float32 {
	r := make([]float32, n)
	for i := range r {
		r[i] = float32(math.Sin(float64(i))) // below 1
		if i%97 == 0 {
			r[i] = float32(math.NaN())
		}
	}
	r[556], r[300], r[812], r[901] = 2, 2, 2, 2
	return [][]float32{r}
}

// TestHeadRejects: what a Head refuses, with typed errors.
func TestHeadRejects(t *testing.T) {
	ctx := context.Background()
	d, err := models.NewDecoder(models.DefaultDecoder)
	if err != nil {
		t.Fatal(err)
	}
	g := loadDecoder(t, d)
	for _, o := range []graph.HeadOptions{{Logits: 5, Token: 0}, {Logits: -1, Token: 0}, {Logits: 1, Token: 1}, {Logits: 1, Token: 7}} {
		if _, err := g.NewHead(o); !errors.Is(err, graph.ErrUnsupported) {
			t.Errorf("%+v: %v, want ErrUnsupported", o, err)
		}
	}
	h, err := g.NewHead(graph.HeadOptions{Logits: 1, Token: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Submit(ctx, d.Inputs([]int32{1}, 0), graph.StepOptions{Fed: true}); !errors.Is(err, graph.ErrUnsupported) {
		t.Errorf("fed step without a token input: %v", err)
	}
	h.Close()
	h, err = g.NewHead(graph.HeadOptions{Logits: 1, Token: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var ie *graph.InputError
	if _, err := h.Submit(ctx, d.Inputs([]int32{1, 2}, 0), graph.StepOptions{Fed: true}); !errors.As(err, &ie) {
		t.Errorf("fed step of two tokens: %v, want an InputError", err)
	}
	if _, err := h.Wait(ctx, graph.HeadStep{}); err == nil {
		t.Error("Wait for nothing: no error")
	}
	var ps []graph.HeadStep
	for i := 0; i < 2; i++ {
		p, err := h.Submit(ctx, d.Inputs([]int32{1}, int64(i)), graph.StepOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if _, err := h.Submit(ctx, d.Inputs([]int32{1}, 2), graph.StepOptions{}); err == nil {
		t.Error("a third step in flight: no error")
	}
	for _, p := range ps {
		if _, err := h.Wait(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Wait(ctx, ps[0]); err == nil {
		t.Error("Wait twice: no error")
	}
	h.Close()
	if _, err := h.Submit(ctx, d.Inputs([]int32{1}, 0), graph.StepOptions{}); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("Submit after Close: %v", err)
	}
}

// hostTop is the reference for the head's top-k: the k largest of row,
// largest first, ties by token, NaN as the smallest; the maximum; the sum
// of exp((x-max)/temp) over the non-NaN values, in float64.
func hostTop(row []float32, k int, temp float64) ([]graph.TopLogit, float32, float64) {
	top := make([]graph.TopLogit, len(row))
	for i, v := range row {
		top[i] = graph.TopLogit{Token: int32(i), Logit: v}
	}
	ord := func(v float32) float64 {
		if v != v {
			return math.Inf(-1)
		}
		return float64(v)
	}
	slices.SortStableFunc(top, func(a, b graph.TopLogit) int { return cmp.Compare(ord(b.Logit), ord(a.Logit)) })
	mx := row[hostArgmax(row)]
	var z float64
	for _, v := range row {
		if v == v {
			z += math.Exp((float64(v) - float64(mx)) / temp)
		}
	}
	return top[:min(k, len(row))], mx, z
}

// TestHeadTopK checks the head's top-k, maximum and normalizer against
// the host on rows with ties inside and at the k-th largest value, NaNs,
// infinities, both zeros and negative values, for k from 1 to past the
// row; a row whose ties at the k-th value overflow the read-back gives no
// Top (the caller reads Logits, checked too).
func TestHeadTopK(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 7))
	const vocab = 1000
	random := make([]float32, vocab)
	for i := range random {
		random[i] = float32(r.NormFloat64() * 3)
	}
	ties := make([]float32, vocab) // 500 values of 1.5 around the 40th largest
	for i := range ties {
		ties[i] = float32(r.Float64())
		if i%2 == 0 {
			ties[i] = 1.5
		}
		if i%100 == 1 {
			ties[i] = 2 + float32(i)/1000
		}
	}
	edges := slices.Clone(random)
	edges[3], edges[10], edges[11], edges[500] = float32(math.NaN()), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 0
	edges[12], edges[900] = 9, 9
	h := cloneHead(ctx, t, 2, int(vocab))
	for _, tc := range []struct {
		name     string
		row      []float32
		k        int
		temp     float64
		overflow bool
	}{
		{"random k1", random, 1, 1, false},
		{"random k40", random, 40, 0.8, false},
		{"random k256", random, 256, 1.3, false},
		{"edges k5", edges, 5, 1, false},
		{"edges k200", edges, 200, 0.5, false},
		{"ties inside", ties, 8, 1, false},
		{"ties at the k-th overflow", ties, 40, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Two rows: the head reads the last one.
			in := append(slices.Clone(random), tc.row...)
			p, err := h.Submit(ctx, []graph.Tensor{graph.Float32Tensor([]int64{1, 2, vocab}, in)}, graph.StepOptions{TopK: tc.k, Temperature: tc.temp})
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.Wait(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			want, mx, z := hostTop(tc.row, tc.k, tc.temp)
			if res.Token != hostArgmax(tc.row) || res.Max != mx || math.Abs(res.SumExp-z) > 1e-5*z {
				t.Errorf("token %d max %v sum %v, want %d %v %v", res.Token, res.Max, res.SumExp, hostArgmax(tc.row), mx, z)
			}
			if tc.overflow {
				if res.Top != nil {
					t.Fatalf("%d ties at the k-th value fit the read-back?", len(res.Top))
				}
				row, err := h.Logits(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(row, tc.row) {
					t.Fatal("Logits is not the last row")
				}
				return
			}
			if len(res.Top) != len(want) {
				t.Fatalf("%d of the largest, want %d", len(res.Top), len(want))
			}
			for i := range want {
				w, g := want[i], res.Top[i]
				if w.Token != g.Token || math.Float32bits(w.Logit) != math.Float32bits(g.Logit) {
					t.Fatalf("largest %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
	for _, o := range []graph.StepOptions{{TopK: graph.MaxTopK + 1, Temperature: 1}, {TopK: 5}, {TopK: -1, Temperature: 1}} {
		if _, err := h.Submit(ctx, []graph.Tensor{graph.Float32Tensor([]int64{1, 2, vocab}, make([]float32, 2*vocab))}, o); !errors.Is(err, graph.ErrUnsupported) {
			t.Errorf("%+v: %v, want ErrUnsupported", o, err)
		}
	}
}
