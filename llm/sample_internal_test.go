package llm

import (
	"errors"
	"math"
	"slices"
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

// normalized returns w scaled to sum to 1.
func normalized(w ...float64) []float64 {
	var s float64
	for _, v := range w {
		s += v
	}
	out := make([]float64, len(w))
	for i, v := range w {
		out[i] = v / s
	}
	return out
}

// TestSampler draws many tokens and checks greedy picks, the nucleus cut,
// top-k, min-p, the penalties and the frequencies against distributions
// computed by hand.
func TestSampler(t *testing.T) {
	probs := []float64{0.15, 0.5, 0.05, 0.3} // sorted: 1, 3, 0, 2
	sqrtP := []float64{math.Sqrt(0.15), math.Sqrt(0.5), math.Sqrt(0.05), math.Sqrt(0.3)}
	const n = 20000
	for _, tc := range []struct {
		name    string
		o       GenerateOptions
		history []int32   // tokens the penalties see
		want    []float64 // expected frequency per token
	}{
		{"greedy", GenerateOptions{}, nil, []float64{0, 1, 0, 0}},
		// 0.5 + 0.3 passes 0.7: tokens 1 and 3, renormalised.
		{"top-p 0.7", GenerateOptions{Temperature: 1, TopP: 0.7, Seed: 1}, nil, []float64{0, 0.5 / 0.8, 0, 0.3 / 0.8}},
		{"top-p 0.79", GenerateOptions{Temperature: 1, TopP: 0.79, Seed: 2}, nil, []float64{0, 0.5 / 0.8, 0, 0.3 / 0.8}},
		// 0.95 needs token 0 too.
		{"top-p 0.9", GenerateOptions{Temperature: 1, TopP: 0.9, Seed: 5}, nil, []float64{0.15 / 0.95, 0.5 / 0.95, 0, 0.3 / 0.95}},
		{"top-p 0.4", GenerateOptions{Temperature: 1, TopP: 0.4, Seed: 2}, nil, []float64{0, 1, 0, 0}},
		{"top-p off", GenerateOptions{Temperature: 1, TopP: 1, Seed: 3}, nil, probs},

		// top-k keeps the k largest logits, renormalised.
		{"top-k 1", GenerateOptions{Temperature: 1, TopK: 1, Seed: 6}, nil, []float64{0, 1, 0, 0}},
		{"top-k 2", GenerateOptions{Temperature: 1, TopK: 2, Seed: 7}, nil, []float64{0, 0.5 / 0.8, 0, 0.3 / 0.8}},
		{"top-k 3", GenerateOptions{Temperature: 1, TopK: 3, Seed: 8}, nil, []float64{0.15 / 0.95, 0.5 / 0.95, 0, 0.3 / 0.95}},
		{"top-k 4 of 4", GenerateOptions{Temperature: 1, TopK: 4, Seed: 9}, nil, probs},
		// Top-p after top-k sees the renormalised survivors: 0.5/0.8 =
		// 0.625 is past 0.6 alone (on the full distribution, 0.5 is not).
		{"top-k 2, top-p 0.6", GenerateOptions{Temperature: 1, TopK: 2, TopP: 0.6, Seed: 10}, nil, []float64{0, 1, 0, 0}},
		// Top-k then temperature 2: sqrt(p) over tokens 1 and 3.
		{"top-k 2, temperature 2", GenerateOptions{Temperature: 2, TopK: 2, Seed: 11}, nil, normalized(0, sqrtP[1], 0, sqrtP[3])},

		// min-p keeps p >= minP * p_max (p_max = 0.5).
		{"min-p 0.5", GenerateOptions{Temperature: 1, MinP: 0.5, Seed: 12}, nil, []float64{0, 0.5 / 0.8, 0, 0.3 / 0.8}},
		{"min-p 0.2", GenerateOptions{Temperature: 1, MinP: 0.2, Seed: 13}, nil, []float64{0.15 / 0.95, 0.5 / 0.95, 0, 0.3 / 0.95}},
		{"min-p 1", GenerateOptions{Temperature: 1, MinP: 1, Seed: 14}, nil, []float64{0, 1, 0, 0}},
		// After the temperature: at T = 2 the weights are sqrt(p), and
		// 0.5 * sqrt(0.5) = 0.354 keeps token 0 (0.387), which min-p 0.5
		// drops at T = 1.
		{"min-p 0.5, temperature 2", GenerateOptions{Temperature: 2, MinP: 0.5, Seed: 15}, nil, normalized(sqrtP[0], sqrtP[1], 0, sqrtP[3])},
		// After top-p: the nucleus 1, 3, 0 (0.95 > 0.9), then min-p
		// 0.4 (0.2) drops token 0.
		{"top-p 0.9, min-p 0.4", GenerateOptions{Temperature: 1, TopP: 0.9, MinP: 0.4, Seed: 16}, nil, []float64{0, 0.5 / 0.8, 0, 0.3 / 0.8}},

		// The logits are log(p), all negative: a repeat penalty of 2
		// multiplies token 1's, log(0.5)*2 = log(0.25), so its weight
		// becomes 0.25.
		{"repeat penalty, negative logit", GenerateOptions{Temperature: 1, RepeatPenalty: 2, Seed: 17}, []int32{1}, normalized(0.15, 0.25, 0.05, 0.3)},
		// Frequency 0.5 on a token seen twice: weight * e^-1; presence
		// ln 2 on another: weight / 2.
		{"frequency and presence", GenerateOptions{Temperature: 1, FrequencyPenalty: 0.5, Seed: 18}, []int32{1, 1}, normalized(0.15, 0.5*math.Exp(-1), 0.05, 0.3)},
		{"presence", GenerateOptions{Temperature: 1, PresencePenalty: math.Ln2, Seed: 19}, []int32{3, 3, 3}, normalized(0.15, 0.5, 0.05, 0.15)},
		// Only the last RepeatLastN count: token 1 then token 3 with a
		// window of 1 penalises token 3 alone.
		{"repeat-last-n 1", GenerateOptions{Temperature: 1, PresencePenalty: math.Ln2, RepeatLastN: 1, Seed: 20}, []int32{1, 3}, normalized(0.15, 0.5, 0.05, 0.15)},
		// Token 1, then 100 of token 2: the whole history (-1) reaches
		// back to token 1, the default window of 64 would not.
		{"repeat-last-n -1", GenerateOptions{Temperature: 1, PresencePenalty: math.Ln2, RepeatLastN: -1, Seed: 21}, append([]int32{1}, slices.Repeat([]int32{2}, 100)...), normalized(0.15, 0.25, 0.025, 0.3)},
		// RepeatLastNOff: no window, so no penalty at all.
		{"repeat-last-n off", GenerateOptions{Temperature: 1, PresencePenalty: math.Ln2, RepeatPenalty: 2, RepeatLastN: RepeatLastNOff, Seed: 22}, []int32{1, 3}, normalized(0.15, 0.5, 0.05, 0.3)},
		// Greedy picks from the penalised logits: token 1 drops to 0.25,
		// below token 3's 0.3.
		{"greedy, repeat penalty", GenerateOptions{RepeatPenalty: 2}, []int32{1}, []float64{0, 0, 0, 1}},
		// Temperature 2 flattens: p^(1/2), normalised.
		{"temperature 2", GenerateOptions{Temperature: 2, Seed: 4}, nil, func() []float64 {
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
			s.accept(tc.history...)
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
	for _, o := range []GenerateOptions{{Temperature: -1}, {Temperature: math.NaN()}, {Temperature: math.Inf(1)}, {TopP: -0.1}, {TopP: 1.01}, {TopP: math.NaN()},
		{TopK: -1}, {MinP: -0.1}, {MinP: 1.5}, {MinP: math.NaN()}, {RepeatPenalty: -1}, {RepeatPenalty: math.NaN()}, {RepeatPenalty: math.Inf(1)},
		{FrequencyPenalty: math.NaN()}, {PresencePenalty: math.Inf(-1)}, {RepeatLastN: -3},
		{DeviceTopK: -2}, {MaxNewTokens: -1}, {PrefillChunk: -1}, {StopTokens: []int32{2, -1}}} {
		if _, err := newSampler(o); !errors.Is(err, ErrOption) {
			t.Errorf("%+v: %v, want ErrOption", o, err)
		}
		if err := o.Validate(); !errors.Is(err, ErrOption) {
			t.Errorf("Validate(%+v): %v, want ErrOption", o, err)
		}
	}
}

// TestRepeatLastNOff: penalties with RepeatLastNOff are off, so the
// sampler takes the unpenalised paths (the device head among them); the
// zero value is the default window.
func TestRepeatLastNOff(t *testing.T) {
	s, err := newSampler(GenerateOptions{RepeatPenalty: 1.3, FrequencyPenalty: 1, RepeatLastN: RepeatLastNOff})
	if err != nil {
		t.Fatal(err)
	}
	if s.penalize {
		t.Error("RepeatLastNOff still penalises")
	}
	if s, _ := newSampler(GenerateOptions{RepeatPenalty: 1.3}); !s.penalize || s.lastN != DefaultRepeatLastN {
		t.Errorf("RepeatLastN 0: penalize %v, window %d, want the default %d", s.penalize, s.lastN, DefaultRepeatLastN)
	}
}

// TestPenalized checks the penalised logits value by value against
// llama.cpp's rule: for each token among the last RepeatLastN, a positive
// logit is divided by the repeat penalty and a negative (or zero) one
// multiplied, then count*frequency + presence is subtracted; other tokens
// keep theirs.
func TestPenalized(t *testing.T) {
	logits := []float32{2, -1, 0, 3, 0.5}
	for _, tc := range []struct {
		name    string
		o       GenerateOptions
		history []int32
		want    []float32
	}{
		{"repeat 2", GenerateOptions{RepeatPenalty: 2}, []int32{0, 1, 2}, []float32{1, -2, 0, 3, 0.5}},
		{"repeat 0.5 (encourages)", GenerateOptions{RepeatPenalty: 0.5}, []int32{0, 1}, []float32{4, -0.5, 0, 3, 0.5}},
		{"frequency", GenerateOptions{FrequencyPenalty: 0.25}, []int32{3, 3, 4, 3}, []float32{2, -1, 0, 2.25, 0.25}},
		{"presence", GenerateOptions{PresencePenalty: 1}, []int32{3, 3, 4}, []float32{2, -1, 0, 2, -0.5}},
		{"all three", GenerateOptions{RepeatPenalty: 2, FrequencyPenalty: 0.5, PresencePenalty: 0.25}, []int32{0, 0, 1}, []float32{2.0/2 - 1 - 0.25, -1*2 - 0.5 - 0.25, 0, 3, 0.5}},
		{"window of 2", GenerateOptions{PresencePenalty: 1, RepeatLastN: 2}, []int32{0, 1, 2, 3}, []float32{2, -1, -1, 2, 0.5}},
		{"default window is 64", GenerateOptions{PresencePenalty: 1}, append([]int32{0}, make([]int32, 64)...), []float32{1, -1, 0, 3, 0.5}},
		{"default window drops the 65th", GenerateOptions{PresencePenalty: 1}, append([]int32{4}, make([]int32, 64)...), []float32{1, -1, 0, 3, 0.5}},
		{"ids outside the vocabulary are ignored", GenerateOptions{PresencePenalty: 1}, []int32{9, -1}, []float32{2, -1, 0, 3, 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newSampler(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			s.accept(tc.history...)
			got := s.penalized(logits)
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("penalised %v, want %v", got, tc.want)
				}
			}
			if logits[0] != 2 || logits[3] != 3 {
				t.Fatalf("the model's logits were changed: %v", logits)
			}
		})
	}
}
