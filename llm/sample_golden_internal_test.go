package llm

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// goldenLogits are vocab-sized logits that repeat run to run: a few large
// values over a spread, as a model's last layer gives.
func goldenLogits(step int) []float32 {
	r := rand.New(rand.NewPCG(uint64(step), 99))
	l := make([]float32, 512)
	for i := range l {
		l[i] = float32(r.NormFloat64() * 2)
	}
	return l
}

// TestSamplerUnchanged pins the tokens the sampler drew before top-k,
// min-p and the penalties existed, for the options it had then (greedy,
// temperature, top-p, seeds): with the new options at their zero values
// it must draw exactly the same tokens.
func TestSamplerUnchanged(t *testing.T) {
	for _, tc := range []struct {
		o    GenerateOptions
		want []int32
	}{
		{GenerateOptions{}, []int32{383, 7, 100, 444, 197, 452, 354, 488, 445, 15, 61, 477, 157, 434, 356, 262, 162, 279, 91, 464, 237, 416, 371, 338}},
		{GenerateOptions{Temperature: 0.8, TopP: 0.9, Seed: 1}, []int32{399, 244, 100, 7, 442, 477, 354, 252, 166, 322, 395, 477, 412, 443, 356, 26, 488, 447, 292, 464, 485, 109, 371, 54}},
		{GenerateOptions{Temperature: 1, Seed: 7}, []int32{384, 30, 100, 273, 476, 452, 354, 394, 123, 59, 358, 208, 496, 99, 175, 262, 211, 413, 347, 425, 476, 221, 188, 402}},
		{GenerateOptions{Temperature: 1.5, TopP: 0.95, Seed: 42}, []int32{282, 65, 121, 432, 470, 156, 330, 148, 279, 8, 320, 113, 412, 271, 255, 350, 269, 279, 292, 223, 309, 282, 137, 32}},
		{GenerateOptions{Temperature: 2, TopP: 0.7, Seed: 11}, []int32{271, 221, 435, 444, 395, 340, 380, 313, 32, 30, 424, 355, 4, 393, 24, 16, 341, 4, 460, 233, 247, 183, 371, 493}},
		{GenerateOptions{Temperature: 0.3, TopP: 0.5, Seed: 3}, []int32{383, 7, 100, 444, 197, 452, 354, 488, 445, 15, 61, 477, 157, 434, 356, 262, 162, 279, 91, 464, 237, 416, 371, 338}},
	} {
		s, err := newSampler(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		var got []int32
		for step := range 24 {
			got = append(got, s.sample(goldenLogits(step)))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %#v, want %#v", tc.o, got, tc.want)
		}
	}
}
