package llm

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate"
)

// hostTopOf is what a device head reads back for logits: the k largest
// (largest first, ties by token, NaN as the smallest) and the normalizer
// at temp, here summed in float64 in token order as sample sums.
func hostTopOf(logits []float32, k int, temp float64) ([]wgdelegate.TopLogit, float64) {
	top := make([]wgdelegate.TopLogit, len(logits))
	for i, v := range logits {
		top[i] = wgdelegate.TopLogit{Token: int32(i), Logit: v}
	}
	ord := func(v float32) float64 {
		if v != v {
			return math.Inf(-1)
		}
		return float64(v)
	}
	slices.SortStableFunc(top, func(a, b wgdelegate.TopLogit) int { return cmp.Compare(ord(b.Logit), ord(a.Logit)) })
	mx := float64(logits[argmax(logits)])
	var z float64
	for _, v := range logits {
		if p := math.Exp((float64(v) - mx) / temp); p == p {
			z += p
		}
	}
	return top[:min(k, len(top))], z
}

// TestSampleTop: a sampler fed the largest logits (sampleTop, falling back
// to sample when it reports false) draws exactly the tokens, in the same
// random sequence, as one fed every logit (sample), over many steps and
// chains: top-k alone, top-k with top-p and min-p, top-p alone (the
// normalizer exact here), min-p alone, and chains that keep tokens past
// the top (which must fall back). The logits are peaked, flat, with ties
// and with NaNs.
func TestSampleTop(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	rows := map[string][]float32{}
	for _, scale := range []float64{0.3, 3, 12} {
		row := make([]float32, 300)
		for i := range row {
			row[i] = float32(r.NormFloat64() * scale)
		}
		rows[fmt.Sprintf("normal %v", scale)] = row
	}
	ties := make([]float32, 300)
	for i := range ties {
		ties[i] = float32(i % 7)
	}
	rows["ties"] = ties
	nan := slices.Clone(rows["normal 3"])
	nan[5], nan[77] = float32(math.NaN()), float32(math.NaN())
	rows["nan"] = nan
	for _, o := range []GenerateOptions{
		{Temperature: 1, TopK: 10},
		{Temperature: 0.7, TopK: 40, TopP: 0.9},
		{Temperature: 1.3, TopK: 64, MinP: 0.05},
		{Temperature: 0.8, TopP: 0.9},
		{Temperature: 1, TopP: 0.5, MinP: 0.1},
		{Temperature: 1, MinP: 0.2},
		{Temperature: 1},            // every token: always falls back
		{Temperature: 1, TopK: 100}, // past a 64-entry top: falls back
	} {
		for name, row := range rows {
			t.Run(fmt.Sprintf("%+v/%s", o, name), func(t *testing.T) {
				o.Seed = 9
				a, err := newSampler(o)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := newSampler(o)
				top, z := hostTopOf(row, max(64, min(o.TopK, 64)), o.Temperature)
				fallbacks := 0
				for step := range 200 {
					want := a.sample(row)
					got, ok := b.sampleTop(top, z)
					if !ok {
						fallbacks++
						got = b.sample(row)
					}
					if got != want {
						t.Fatalf("step %d: %d from the top, %d from the row (fell back %d times)", step, got, want, fallbacks)
					}
				}
				mustFall := o.TopK > 64 || (o.TopK == 0 && o.TopP == 0 && o.MinP == 0)
				if mustFall && fallbacks != 200 {
					t.Errorf("%d of 200 steps picked from a top that cannot hold the chain's tokens", 200-fallbacks)
				}
				if name == "normal 12" && !mustFall && fallbacks != 0 {
					t.Errorf("a peaked row fell back %d times", fallbacks)
				}
				if o.TopK > 0 && o.TopK <= 64 && fallbacks != 0 {
					t.Errorf("top-k %d within the top fell back %d times", o.TopK, fallbacks)
				}
			})
		}
	}
}
