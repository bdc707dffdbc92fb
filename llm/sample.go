package llm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// sampler picks the next token from logits: greedily at temperature 0,
// else from the softmax of logits/temperature, restricted to the top-p
// nucleus when 0 < topP < 1.
type sampler struct {
	temp, topP float64
	rng        *rand.Rand
	probs      []float64
	order      []int32
}

func newSampler(o GenerateOptions) (*sampler, error) {
	if o.Temperature < 0 || math.IsNaN(o.Temperature) || math.IsInf(o.Temperature, 0) {
		return nil, fmt.Errorf("%w: temperature %v, want 0 (greedy) or more", ErrOption, o.Temperature)
	}
	if o.TopP < 0 || o.TopP > 1 || math.IsNaN(o.TopP) {
		return nil, fmt.Errorf("%w: top-p %v, want 0..1", ErrOption, o.TopP)
	}
	return &sampler{temp: o.Temperature, topP: o.TopP, rng: rand.New(rand.NewPCG(o.Seed, 0x6c6c6d73616d706c))}, nil
}

// argmax returns the index of the largest logit, the first of equals
// (NaNs are never picked unless all are NaN).
func argmax(logits []float32) int32 {
	best := 0
	for i, v := range logits {
		if v > logits[best] || (logits[best] != logits[best] && v == v) {
			best = i
		}
	}
	return int32(best)
}

func (s *sampler) sample(logits []float32) int32 {
	if s.temp == 0 {
		return argmax(logits)
	}
	mx := float64(logits[argmax(logits)])
	s.probs = s.probs[:0]
	var sum float64
	for _, v := range logits {
		p := math.Exp((float64(v) - mx) / s.temp)
		if p != p {
			p = 0
		}
		s.probs = append(s.probs, p)
		sum += p
	}
	if sum == 0 || math.IsInf(sum, 0) {
		return argmax(logits)
	}
	for i := range s.probs {
		s.probs[i] /= sum
	}
	u := s.rng.Float64()
	if s.topP <= 0 || s.topP >= 1 {
		var c float64
		for i, p := range s.probs {
			c += p
			if u < c {
				return int32(i)
			}
		}
		return int32(len(s.probs) - 1)
	}
	// The nucleus: most likely first (ties by index), cut after the
	// cumulative probability first exceeds topP.
	s.order = s.order[:0]
	for i := range s.probs {
		s.order = append(s.order, int32(i))
	}
	slices.SortStableFunc(s.order, func(a, b int32) int {
		switch pa, pb := s.probs[a], s.probs[b]; {
		case pa > pb:
			return -1
		case pa < pb:
			return 1
		}
		return 0
	})
	var c float64
	last := len(s.order) - 1
	for i, t := range s.order {
		c += s.probs[t]
		if c > s.topP {
			last = i
			break
		}
	}
	u *= c
	var acc float64
	for _, t := range s.order[:last+1] {
		acc += s.probs[t]
		if u < acc {
			return t
		}
	}
	return s.order[last]
}
