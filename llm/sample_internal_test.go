package llm

import (
	"errors"
	"math"
	"testing"
)

// logitsOf returns logits whose softmax is p.
func logitsOf(p ...float64) []float32 {
	l := make([]float32, len(p))
	for i, v := range p {
		l[i] = float32(math.Log(v))
	}
	return l
}

// TestSampler draws many tokens and checks greedy picks, the nucleus cut
// and the frequencies against the probabilities.
func TestSampler(t *testing.T) {
	probs := []float64{0.15, 0.5, 0.05, 0.3} // sorted: 1, 3, 0, 2
	const n = 20000
	for _, tc := range []struct {
		name string
		o    GenerateOptions
		want []float64 // expected frequency per token
	}{
		{"greedy", GenerateOptions{}, []float64{0, 1, 0, 0}},
		// 0.5 + 0.3 passes 0.7: tokens 1 and 3, renormalised.
		{"top-p 0.7", GenerateOptions{Temperature: 1, TopP: 0.7, Seed: 1}, []float64{0, 0.5 / 0.8, 0, 0.3 / 0.8}},
		{"top-p 0.79", GenerateOptions{Temperature: 1, TopP: 0.79, Seed: 2}, []float64{0, 0.5 / 0.8, 0, 0.3 / 0.8}},
		// 0.95 needs token 0 too.
		{"top-p 0.9", GenerateOptions{Temperature: 1, TopP: 0.9, Seed: 5}, []float64{0.15 / 0.95, 0.5 / 0.95, 0, 0.3 / 0.95}},
		{"top-p 0.4", GenerateOptions{Temperature: 1, TopP: 0.4, Seed: 2}, []float64{0, 1, 0, 0}},
		{"top-p off", GenerateOptions{Temperature: 1, TopP: 1, Seed: 3}, probs},
		// Temperature 2 flattens: p^(1/2), normalised.
		{"temperature 2", GenerateOptions{Temperature: 2, Seed: 4}, func() []float64 {
			var s float64
			w := make([]float64, len(probs))
			for i, p := range probs {
				w[i] = math.Sqrt(p)
				s += w[i]
			}
			for i := range w {
				w[i] /= s
			}
			return w
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newSampler(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			counts := make([]int, len(probs))
			logits := logitsOf(probs...)
			for range n {
				counts[s.sample(logits)]++
			}
			for i, want := range tc.want {
				got := float64(counts[i]) / n
				// 5 standard deviations of a binomial frequency, and
				// exactly 0 where the token is excluded.
				tol := 5 * math.Sqrt(want*(1-want)/n)
				if (want == 0 && counts[i] != 0) || math.Abs(got-want) > tol+1e-12 {
					t.Errorf("token %d: frequency %.4f, want %.4f ± %.4f", i, got, want, tol)
				}
			}
		})
	}
}

func TestArgmax(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		l    []float32
		want int32
	}{
		{[]float32{1, 3, 3, 2}, 1},    // the first of equals, as run.c
		{[]float32{nan, 1, 2}, 2},     // NaN never wins
		{[]float32{-1, nan, -0.5}, 2}, // ...anywhere
		{[]float32{float32(math.Inf(-1)), -3}, 1},
	} {
		if got := argmax(tc.l); got != tc.want {
			t.Errorf("argmax(%v) = %d, want %d", tc.l, got, tc.want)
		}
	}
}

func TestSamplerOptions(t *testing.T) {
	for _, o := range []GenerateOptions{{Temperature: -1}, {Temperature: math.NaN()}, {Temperature: math.Inf(1)}, {TopP: -0.1}, {TopP: 1.01}, {TopP: math.NaN()}} {
		if _, err := newSampler(o); !errors.Is(err, ErrOption) {
			t.Errorf("%+v: %v, want ErrOption", o, err)
		}
	}
}
