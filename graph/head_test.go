package graph_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
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
				cfg := models.DefaultDecoder
				cfg.SplitCache = split
				d, err := models.NewDecoder(cfg)
				if err != nil {
					t.Fatal(err)
				}
				models.ApplyPlan(d.B, plan)
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
					return hostArgmax(v[len(v)-int(cfg.Vocab):])
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
					p, err := h.Submit(ctx, d.Inputs(prompt, 0), false)
					if err != nil {
						t.Fatal(err)
					}
					queue := []graph.HeadStep{p}
					pos = int64(len(prompt))
					var got []int32
					for len(got) < steps {
						// Step pos is submitted before the token it eats is read.
						next, err := h.Submit(ctx, d.Inputs([]int32{-1}, pos), true)
						if err != nil {
							t.Fatalf("step at %d: %v", pos, err)
						}
						pos++
						queue = append(queue, next)
						tok, err := h.Wait(ctx, queue[0])
						if err != nil {
							t.Fatal(err)
						}
						queue = queue[1:]
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
			b := serialization.NewBuilder()
			x := b.Tensor(serialization.Float32, []uint32{1, uint32(rows), uint32(vocab)}, -1)
			y := b.Tensor(serialization.Float32, []uint32{1, uint32(rows), uint32(vocab)}, -1)
			b.Op("aten.clone.default", x, b.Null(), y)
			b.Inputs(x)
			b.Outputs(y)
			blob, err := b.Blob()
			if err != nil {
				t.Fatal(err)
			}
			g, err := graph.Load(ctx, graph.OpenTestDevice(t), blob, graph.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			h, err := g.NewHead(graph.HeadOptions{Logits: 0, Token: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			var flat []float32
			for _, r := range tc.rows {
				flat = append(flat, r...)
			}
			p, err := h.Submit(ctx, []graph.Tensor{graph.Float32Tensor([]int64{1, int64(rows), int64(vocab)}, flat)}, false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := h.Wait(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if want := hostArgmax(tc.rows[rows-1]); got != want {
				t.Errorf("head picked %d, host %d", got, want)
			}
		})
	}
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
	if _, err := h.Submit(ctx, d.Inputs([]int32{1}, 0), true); !errors.Is(err, graph.ErrUnsupported) {
		t.Errorf("fed step without a token input: %v", err)
	}
	h.Close()
	h, err = g.NewHead(graph.HeadOptions{Logits: 1, Token: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var ie *graph.InputError
	if _, err := h.Submit(ctx, d.Inputs([]int32{1, 2}, 0), true); !errors.As(err, &ie) {
		t.Errorf("fed step of two tokens: %v, want an InputError", err)
	}
	if _, err := h.Wait(ctx, graph.HeadStep{}); err == nil {
		t.Error("Wait for nothing: no error")
	}
	var ps []graph.HeadStep
	for i := 0; i < 2; i++ {
		p, err := h.Submit(ctx, d.Inputs([]int32{1}, int64(i)), false)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if _, err := h.Submit(ctx, d.Inputs([]int32{1}, 2), false); err == nil {
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
	if _, err := h.Submit(ctx, d.Inputs([]int32{1}, 0), false); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("Submit after Close: %v", err)
	}
}
