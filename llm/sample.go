package llm

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/wgdelegate/wgdelegate"
)

// DefaultRepeatLastN is how many of the latest tokens the repetition,
// frequency and presence penalties look at when GenerateOptions.RepeatLastN
// is 0: llama.cpp's default (--repeat-last-n 64).
const DefaultRepeatLastN = 64

// GenerateOptions.RepeatLastN values other than a count: RepeatLastNAll
// makes the penalties look at every token (llama.cpp's -1), RepeatLastNOff
// at none, which turns them off (llama.cpp's 0; here 0 is the default, as
// the zero GenerateOptions is the default).
const (
	RepeatLastNAll = -1
	RepeatLastNOff = -2
)

// sampler picks the next token from logits. Its chain, in order:
//
//  1. penalties: every token among the last lastN of the history (the
//     prompt, then the tokens generated) has its logit divided by the
//     repetition penalty when positive, multiplied when not, then lowered
//     by count·frequency + presence (llama.cpp's penalties sampler);
//  2. greedy at temperature 0: the largest (penalised) logit, the first of
//     equals, and nothing below runs;
//  3. top-k: only the k largest logits stay (the first of equals first);
//  4. temperature and softmax over what stays;
//  5. top-p: the smallest set of most likely tokens whose probabilities
//     sum past topP (run.c's cut: strictly past);
//  6. min-p: of those, the tokens at least minP times as likely as the
//     most likely one;
//  7. a draw from what is left, renormalised.
//
// llama.cpp's default chain runs the temperature after top-p and min-p;
// here it comes before them, as in run.c and Hugging Face transformers, so
// that top-p keeps the meaning it has always had in this package (at
// temperature 1 the two orders agree, and top-k does not depend on it).
type sampler struct {
	temp, topP, minP       float64
	topK                   int
	repeat, freq, presence float32
	lastN                  int // RepeatLastNAll: the whole history
	penalize               bool
	rng                    *rand.Rand
	history                []int32
	counts                 map[int32]int
	work                   []float32
	probs                  []float64
	order                  []int32
	keep                   []bool
}

func newSampler(o GenerateOptions) (*sampler, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &sampler{temp: o.Temperature, topP: o.TopP, topK: o.TopK, minP: o.MinP,
		repeat: float32(o.RepeatPenalty), freq: float32(o.FrequencyPenalty), presence: float32(o.PresencePenalty),
		lastN: o.RepeatLastN, rng: rand.New(rand.NewPCG(o.Seed, 0x6c6c6d73616d706c))}
	if s.repeat == 0 {
		s.repeat = 1
	}
	if s.lastN == 0 {
		s.lastN = DefaultRepeatLastN
	}
	s.penalize = (s.repeat != 1 || s.freq != 0 || s.presence != 0) && s.lastN != RepeatLastNOff
	if s.penalize {
		s.counts = map[int32]int{}
	}
	return s, nil
}

// accept adds tokens to the history the penalties look at.
func (s *sampler) accept(tokens ...int32) {
	if !s.penalize {
		return
	}
	s.history = append(s.history, tokens...)
	// Keep the history from growing without bound: only the last lastN
	// are ever looked at.
	if s.lastN > 0 && len(s.history) > 2*s.lastN+1024 {
		s.history = append(s.history[:0], s.history[len(s.history)-s.lastN:]...)
	}
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

// penalized returns a copy of logits with the penalties applied to the
// tokens of the window, in float32 as llama.cpp does.
func (s *sampler) penalized(logits []float32) []float32 {
	s.work = append(s.work[:0], logits...)
	window := s.history
	if s.lastN > 0 && len(window) > s.lastN {
		window = window[len(window)-s.lastN:]
	}
	clear(s.counts)
	for _, t := range window {
		s.counts[t]++
	}
	for t, n := range s.counts {
		if t < 0 || int(t) >= len(s.work) {
			continue
		}
		l := s.work[t]
		if l <= 0 {
			l *= s.repeat
		} else {
			l /= s.repeat
		}
		s.work[t] = l - float32(n)*s.freq - s.presence
	}
	return s.work
}

// topKMask marks the k largest logits (the first of equals first; NaN
// counts as the smallest), or returns nil when top-k keeps every token.
func (s *sampler) topKMask(logits []float32) []bool {
	if s.topK <= 0 || s.topK >= len(logits) {
		return nil
	}
	s.order = s.order[:0]
	for i := range logits {
		s.order = append(s.order, int32(i))
	}
	key := func(v float32) float64 {
		if v != v {
			return math.Inf(-1)
		}
		return float64(v)
	}
	slices.SortStableFunc(s.order, func(a, b int32) int { return cmp.Compare(key(logits[b]), key(logits[a])) })
	s.keep = slices.Grow(s.keep[:0], len(logits))[:len(logits)]
	clear(s.keep)
	for _, t := range s.order[:s.topK] {
		s.keep[t] = true
	}
	return s.keep
}

func (s *sampler) sample(logits []float32) int32 {
	if s.penalize {
		logits = s.penalized(logits)
	}
	if s.temp == 0 {
		return argmax(logits)
	}
	keep := s.topKMask(logits)
	mx := float64(logits[argmax(logits)]) // always kept by top-k
	s.probs = s.probs[:0]
	var sum float64
	for i, v := range logits {
		var p float64
		if keep == nil || keep[i] {
			p = math.Exp((float64(v) - mx) / s.temp)
			if p != p {
				p = 0
			}
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
	nucleus := s.topP > 0 && s.topP < 1
	if !nucleus && s.minP <= 0 {
		var c float64
		last := 0
		for i, p := range s.probs {
			c += p
			if u < c {
				return int32(i)
			}
			if p > 0 {
				last = i
			}
		}
		return int32(last) // rounding left u at the total: the last possible token
	}
	// Most likely first (ties by index); the nucleus is cut after the
	// cumulative probability first exceeds topP, then min-p drops the
	// tail below minP times the most likely.
	s.order = s.order[:0]
	for i := range s.probs {
		s.order = append(s.order, int32(i))
	}
	slices.SortStableFunc(s.order, func(a, b int32) int { return cmp.Compare(s.probs[b], s.probs[a]) })
	var c float64
	last := len(s.order) - 1
	if nucleus {
		for i, t := range s.order {
			c += s.probs[t]
			if c > s.topP {
				last = i
				break
			}
		}
	}
	if trimmed := s.trim(last); trimmed != last || !nucleus {
		last = trimmed
		c = 0
		for _, t := range s.order[:last+1] {
			c += s.probs[t]
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

// trim returns last lowered past the tokens of s.order that min-p drops
// and those of probability 0 (which top-k excluded), keeping at least the
// most likely token.
func (s *sampler) trim(last int) int {
	floor := s.minP * s.probs[s.order[0]]
	for last > 0 && (s.probs[s.order[last]] == 0 || s.probs[s.order[last]] < floor) {
		last--
	}
	return last
}

// sampleTop is sample for a step whose device head read back the largest
// logits top (largest first, ties by token) and the normalizer z, the sum
// over the whole row of exp((logit-max)/temperature): it picks as sample
// would from the whole row whenever what the chain keeps lies in top, and
// reports false, having drawn nothing, otherwise (the caller then reads
// the logits and calls sample). With top-k (at most len(top)) the
// probabilities are those sample computes, bit for bit; without it top-p
// and min-p cut with z, computed in float32 on the device, so a cut that
// falls within about 1e-6 of topP may land one token off the host's.
func (s *sampler) sampleTop(top []wgdelegate.TopLogit, z float64) (int32, bool) {
	if s.penalize || s.temp == 0 || len(top) == 0 {
		return -1, false
	}
	nucleus := s.topP > 0 && s.topP < 1
	k := len(top)
	switch {
	case s.topK > 0 && s.topK <= len(top):
		k = s.topK
	case s.topK > 0 || (!nucleus && s.minP <= 0):
		return -1, false // the chain keeps tokens beyond top
	}
	kept := top[:k]
	mx := float64(kept[0].Logit)
	s.probs = s.probs[:0]
	for _, t := range kept {
		p := math.Exp((float64(t.Logit) - mx) / s.temp)
		if p != p {
			p = 0
		}
		s.probs = append(s.probs, p)
	}
	// s.order: indices into kept in token order, for the sums and the
	// draw that sample makes in token order.
	s.order = s.order[:0]
	for i := range kept {
		s.order = append(s.order, int32(i))
	}
	slices.SortFunc(s.order, func(a, b int32) int { return cmp.Compare(kept[a].Token, kept[b].Token) })
	sum := z
	if s.topK > 0 {
		sum = 0
		for _, i := range s.order {
			sum += s.probs[i]
		}
	}
	if sum == 0 || math.IsInf(sum, 0) || math.IsNaN(sum) {
		return -1, false
	}
	for i := range s.probs {
		s.probs[i] /= sum
	}
	if !nucleus && s.minP <= 0 {
		// Top-k alone: sample's draw over the kept tokens in token order.
		u := s.rng.Float64()
		var c float64
		last := s.order[0]
		for _, i := range s.order {
			c += s.probs[i]
			if u < c {
				return kept[i].Token, true
			}
			if s.probs[i] > 0 {
				last = i
			}
		}
		return kept[last].Token, true
	}
	// Most likely first, ties by token, as sample sorts the whole row.
	slices.SortStableFunc(s.order, func(a, b int32) int { return cmp.Compare(s.probs[b], s.probs[a]) })
	var c float64
	last := -1
	if nucleus {
		for j, i := range s.order {
			c += s.probs[i]
			if c > s.topP {
				last = j
				break
			}
		}
	}
	if last < 0 {
		if s.topK == 0 {
			// The nucleus (or, without one, the min-p floor) must close
			// inside top: the rest of the row is no more likely than its
			// last entry.
			if nucleus || s.probs[s.order[len(s.order)-1]] >= s.minP*s.probs[s.order[0]] {
				return -1, false
			}
		}
		last = len(s.order) - 1
	}
	floor := s.minP * s.probs[s.order[0]]
	trimmed := last
	for trimmed > 0 && (s.probs[s.order[trimmed]] == 0 || s.probs[s.order[trimmed]] < floor) {
		trimmed--
	}
	if trimmed != last || !nucleus {
		last = trimmed
		c = 0
		for _, i := range s.order[:last+1] {
			c += s.probs[i]
		}
	}
	u := s.rng.Float64() * c
	var acc float64
	for _, i := range s.order[:last+1] {
		acc += s.probs[i]
		if u < acc {
			return kept[i].Token, true
		}
	}
	return kept[s.order[last]].Token, true
}
