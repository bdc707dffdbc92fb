package llm

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Runner generates tokens with a Llama-style decoder: it holds the model,
// its calling convention and one sequence, the tokens its KV cache holds.
// It is not safe for concurrent use. It owns the model's KV cache
// (wgdelegate.Model.ClaimState) from New to Close, so a second Runner (or
// a Pool) on the same model fails with ErrCacheOwned until the first is
// closed. A Runner is one Session of a Pool of one: for several
// sequences on one model, use a Pool.
type Runner struct {
	p *Pool
	s *Session
	// closed: Close was called; Forward and Generate refuse to run.
	closed bool
	// pending are the tokens of the sequence not in the cache yet: the
	// last one a Generate returned, which the next call feeds before its
	// prompt.
	pending []int32
}

// Open loads the decoder at path (a .pte program, or a raw VH00 blob) with
// opts (WithDataFiles for a .ptd, WithDevice, ...) and detects its calling
// convention; the runner closes the model on Close.
func Open(ctx context.Context, path string, opts ...wgdelegate.Option) (*Runner, error) {
	mf, err := serialization.MapFile(path)
	if err != nil {
		return nil, err
	}
	info, err := InspectProgram(mf.Bytes())
	mf.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, err := wgdelegate.Open(ctx, path, opts...)
	if err != nil {
		return nil, err
	}
	r, err := New(m, info)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.p.own = true
	return r, nil
}

// Load is Open for a program already in memory.
func Load(ctx context.Context, program []byte, opts ...wgdelegate.Option) (*Runner, error) {
	info, err := InspectProgram(program)
	if err != nil {
		return nil, err
	}
	m, err := wgdelegate.Load(ctx, program, opts...)
	if err != nil {
		return nil, err
	}
	r, err := New(m, info)
	if err != nil {
		m.Close()
		return nil, err
	}
	r.p.own = true
	return r, nil
}

// New makes a runner for an already loaded model, with what InspectProgram
// read from its file (or a ProgramInfo filled in by hand: MaxSeqLen is
// required, since the model's I/O does not say it). The caller keeps
// ownership of m: Close does not close it. The KV cache is assumed empty
// (a freshly loaded model).
//
// The model's KV cache holds one sequence, so the runner claims it
// (wgdelegate.Model.ClaimState) until Close: New on a model another
// Runner holds fails with an error wrapping ErrCacheOwned (a
// *wgdelegate.StateClaimedError).
func New(m *wgdelegate.Model, info ProgramInfo) (*Runner, error) {
	p, err := newPool(m, info, SessionOptions{MaxSessions: 1}, "an llm.Runner", "llm: a second runner on one model (close the first)")
	if err != nil {
		return nil, err
	}
	s, err := p.New()
	if err != nil {
		p.Close()
		return nil, err
	}
	return &Runner{p: p, s: s}, nil
}

// Convention returns the calling convention the runner detected.
func (r *Runner) Convention() Convention { return r.p.conv }

// Model returns the underlying model.
func (r *Runner) Model() *wgdelegate.Model { return r.p.m }

// Pos returns the position the next token goes to: how many the KV cache
// holds.
func (r *Runner) Pos() int64 { return r.s.Pos() }

// Reset starts a new sequence at position 0. The cache is not cleared:
// positions are overwritten before attention reads them.
func (r *Runner) Reset() {
	r.s.Reset()
	r.pending = nil
}

// Close closes the model if the runner opened it (Open, Load), and the
// runner's device head either way, and releases the model's KV cache, so
// that another Runner may be made on it. Forward and Generate on a closed
// runner fail with an error wrapping wgdelegate.ErrClosed. Close is
// idempotent.
func (r *Runner) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.p.Close()
}

// errClosed is the error of Forward and Generate on a closed runner.
var errClosed = fmt.Errorf("llm: the runner is closed: %w", wgdelegate.ErrClosed)

// Forward feeds tokens at the current position, in one Execute or in
// chunks of up to Convention().MaxTokens, advances the position past them
// and returns the logits of the last one ([Vocab], valid until the next
// call). Like Generate, it first feeds the last token a previous Generate
// returned, which is not in the cache yet. Tokens that do not fit in the
// cache are a *CacheError (ErrPromptTooLong when there are several, else
// ErrPositionPastEnd), an id outside the vocabulary a *TokenError; neither
// runs anything.
func (r *Runner) Forward(ctx context.Context, tokens []int32) ([]float32, error) {
	if r.closed {
		return nil, errClosed
	}
	if len(tokens)+len(r.pending) == 0 {
		return nil, fmt.Errorf("%w: no tokens to feed", ErrOption)
	}
	cached := r.s.Tokens()
	full := slices.Concat(cached, r.pending, tokens)
	logits, err := r.s.forward(ctx, full)
	r.settle(len(cached), full)
	return logits, err
}

// settle sets the tokens still to feed after a call on the sequence all,
// when it fed anything (the cache holds more than before, cached tokens).
func (r *Runner) settle(cached int, all []int32) {
	if pos := int(r.s.Pos()); pos > cached {
		r.pending = slices.Clone(all[pos:])
	}
}

type GenerateOptions struct {
	// MaxNewTokens is how many tokens to generate; 0 generates until the
	// cache is full (or a stop token). More than fit is a *CacheError
	// (ErrPositionPastEnd).
	MaxNewTokens int
	// Temperature 0 samples greedily (the most likely token, the first of
	// equals); above 0 it divides the logits before the softmax.
	Temperature float64
	// TopP, in (0, 1), samples from the smallest set of most likely
	// tokens whose probabilities sum past it (nucleus sampling); 0 or 1
	// samples from all.
	TopP float64
	// TopK, above 0, samples from the TopK most likely tokens only (the
	// first of equals first); 0 samples from all.
	TopK int
	// MinP, in (0, 1], samples only from the tokens at least MinP times
	// as likely as the most likely one; 0 turns it off.
	MinP float64
	// RepeatPenalty penalises every token among the last RepeatLastN: a
	// positive logit is divided by it, a negative one multiplied
	// (llama.cpp's --repeat-penalty, CTRL's repetition penalty with the
	// usual fix for negative logits); above 1 makes repeats less likely.
	// 0 or 1 turns it off.
	RepeatPenalty float64
	// FrequencyPenalty is subtracted from a token's logit once for each
	// time it occurs among the last RepeatLastN, PresencePenalty once if
	// it occurs at all (after RepeatPenalty; llama.cpp's and OpenAI's
	// frequency and presence penalties); 0 turns each off.
	FrequencyPenalty, PresencePenalty float64
	// RepeatLastN is how many of the latest tokens the three penalties
	// look at: those of this call's prompt (with the last token a
	// previous call generated), then those it generates. 0 means
	// DefaultRepeatLastN (64, llama.cpp's default), RepeatLastNAll (-1)
	// all of them, and RepeatLastNOff (-2) none: the penalties are off.
	// (llama.cpp's --repeat-last-n 0, off, is RepeatLastNOff here; the
	// CLI's --repeat-last-n takes these same values.)
	//
	// The penalties change the logits greedy decoding picks from too.
	// The sampler's chain, in order: penalties, greedy (at temperature
	// 0, then nothing else runs), top-k, temperature and softmax, top-p,
	// min-p, the draw (see the package documentation).
	RepeatLastN int
	// Seed seeds the sampler: the same seed, model and prompt give the
	// same tokens.
	Seed uint64
	// StopTokens end the generation when sampled; the stop token is not
	// returned or streamed.
	StopTokens []int32
	// PrefillChunk caps the tokens per Execute while prefilling; 0 uses
	// Convention().MaxTokens (all at once when the prompt fits).
	PrefillChunk int
	// HostGreedy makes greedy decoding read every step's logits back and
	// pick on the host, as before the device head; by default a greedy
	// generation without penalties picks on the device (4 bytes read
	// back a step) and submits each step before the previous token is
	// read (see the package documentation). The tokens are the same.
	HostGreedy bool
	// DeviceTopK is how many of the largest logits a sampled step (above
	// temperature 0, without penalties) reads back from the device's head
	// instead of the whole row: 0 means DefaultDeviceTopK, or TopK when
	// that is set and larger; -1 reads every step's logits. When what the
	// sampler keeps (top-k, the nucleus, the min-p floor) does not lie in
	// them, the step reads the row after all (Stats.LogitReads).
	DeviceTopK int
	// OnToken, when set, receives each generated token as soon as it is
	// sampled; an error it returns ends the generation and is returned.
	OnToken func(token int32) error
}

// Validate checks the options that do not depend on the model: the
// sampler's ranges, DeviceTopK, MaxNewTokens, PrefillChunk and that no
// stop token is negative. A bad option is an error wrapping ErrOption.
// Generate validates its options before running anything; call Validate
// to check them before a model is loaded. Stop tokens past the model's
// vocabulary are Generate's to reject.
func (o GenerateOptions) Validate() error {
	if o.Temperature < 0 || math.IsNaN(o.Temperature) || math.IsInf(o.Temperature, 0) {
		return fmt.Errorf("%w: temperature %v, want 0 (greedy) or more", ErrOption, o.Temperature)
	}
	if o.TopP < 0 || o.TopP > 1 || math.IsNaN(o.TopP) {
		return fmt.Errorf("%w: top-p %v, want 0..1", ErrOption, o.TopP)
	}
	if o.TopK < 0 {
		return fmt.Errorf("%w: top-k %d, want 0 (off) or more", ErrOption, o.TopK)
	}
	if o.MinP < 0 || o.MinP > 1 || math.IsNaN(o.MinP) {
		return fmt.Errorf("%w: min-p %v, want 0..1", ErrOption, o.MinP)
	}
	if o.RepeatPenalty < 0 || math.IsNaN(o.RepeatPenalty) || math.IsInf(o.RepeatPenalty, 0) {
		return fmt.Errorf("%w: repeat penalty %v, want 0 or 1 (off) or another positive number", ErrOption, o.RepeatPenalty)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"frequency", o.FrequencyPenalty}, {"presence", o.PresencePenalty}} {
		if math.IsNaN(p.v) || math.IsInf(p.v, 0) {
			return fmt.Errorf("%w: %s penalty %v, want a finite number", ErrOption, p.name, p.v)
		}
	}
	if o.RepeatLastN < RepeatLastNOff {
		return fmt.Errorf("%w: repeat-last-n %d, want a token count, 0 (the default, %d), %d (every token) or %d (off)",
			ErrOption, o.RepeatLastN, DefaultRepeatLastN, RepeatLastNAll, RepeatLastNOff)
	}
	if o.DeviceTopK < -1 || o.DeviceTopK > wgdelegate.MaxTopK {
		return fmt.Errorf("%w: device top-k %d, want -1, 0 or up to %d", ErrOption, o.DeviceTopK, wgdelegate.MaxTopK)
	}
	if o.MaxNewTokens < 0 || o.PrefillChunk < 0 {
		return fmt.Errorf("%w: MaxNewTokens %d and PrefillChunk %d must not be negative", ErrOption, o.MaxNewTokens, o.PrefillChunk)
	}
	for _, t := range o.StopTokens {
		if t < 0 {
			return fmt.Errorf("%w: stop token %d is negative", ErrOption, t)
		}
	}
	return nil
}

// Result is what Generate produced.
type Result struct {
	Tokens []int32
	// Stop is the stop token that ended the generation, -1 when none did.
	Stop  int32
	Stats Stats
}

// Stats are the timings of one generation. Prompt tokens are fed in the
// prefill; the first generated token comes from the prefill's logits and
// every further one from one decode step.
type Stats struct {
	PromptTokens    int
	GeneratedTokens int
	DecodeSteps     int
	// Prefill is the time the prompt took (its Executes).
	Prefill time.Duration
	// TimeToFirstToken runs from the call to the first generated token.
	TimeToFirstToken time.Duration
	// Decode is the time of the decode steps.
	Decode time.Duration
	// OnDevice is true when the tokens were picked on the device (greedy
	// decoding through the model's Head, steps pipelined); then Submit is
	// the host's time preparing and submitting steps (inputs, records,
	// encoding) and Wait its time blocked on the tokens, both over every
	// step including the prompt's.
	OnDevice     bool
	Submit, Wait time.Duration
	// LogitReads counts the sampled steps on the device whose pick needed
	// the whole row of logits read back.
	LogitReads int
	// ReusedTokens counts the prompt tokens the cache already held from
	// an earlier call (a Session's prefix reuse; a Runner's sequence so
	// far): they were not prefilled and are not in PromptTokens.
	ReusedTokens int
	// Queued is the time the generation waited for the device while other
	// sessions of its Pool ran (within Prefill and Decode), Yields how
	// many times it gave the device to a waiting session between steps.
	Queued time.Duration
	Yields int
}

// DefaultDeviceTopK is GenerateOptions.DeviceTopK's default: the largest
// logits a sampled step reads back from the device.
const DefaultDeviceTopK = 64

// PromptTokensPerSecond is the prefill rate.
func (s Stats) PromptTokensPerSecond() float64 { return rate(s.PromptTokens, s.Prefill) }

// DecodeTokensPerSecond is the decode rate: steps over their time.
func (s Stats) DecodeTokensPerSecond() float64 { return rate(s.DecodeSteps, s.Decode) }

func rate(n int, d time.Duration) float64 {
	if n == 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Generate feeds prompt from the current position (after the last
// generated token of a previous Generate, if any: a sequence continues
// until Reset), then samples and feeds tokens one at a time. ctx cancels
// between and during Executes. After an error other than a rejected
// request (a *CacheError, *TokenError or ErrOption, which run nothing),

// Generate feeds prompt from the current position (after the last
// generated token of a previous Generate, if any: a sequence continues
// until Reset), then samples and feeds tokens one at a time. ctx cancels
// between and during Executes. A rejected request (a *CacheError,
// *TokenError or ErrOption) runs nothing. After another error the
// sequence holds what was fed before it: the next call goes on after that
// (Reset starts over).
func (r *Runner) Generate(ctx context.Context, prompt []int32, opts GenerateOptions) (Result, error) {
	if r.closed {
		return Result{Stop: -1}, errClosed
	}
	if len(prompt)+len(r.pending) == 0 {
		return Result{Stop: -1}, fmt.Errorf("%w: an empty prompt with nothing generated before", ErrOption)
	}
	cached := r.s.Tokens()
	feed := slices.Concat(r.pending, prompt)
	full := slices.Concat(cached, feed)
	res, err := r.s.generate(ctx, full, feed, opts)
	r.s.last = res.Stats
	if err == nil || int(r.s.Pos()) > len(cached) || len(res.Tokens) > 0 {
		all := append(full, res.Tokens...)
		if pos := int(r.s.Pos()); pos >= len(cached) && pos <= len(all) {
			r.pending = slices.Clone(all[pos:])
		}
	}
	return res, err
}

// LastStats returns the Stats of the last Generate or Stream.
func (r *Runner) LastStats() Stats { return r.s.LastStats() }

// errStopped ends a Stream whose consumer stopped early.
var errStopped = errors.New("llm: stream stopped")

// Stream is Generate as an iterator: it yields each token as it is
// sampled, and a final (-1, err) if generation fails. Breaking out of the
// loop stops the generation. LastStats has its timings afterwards.
func (r *Runner) Stream(ctx context.Context, prompt []int32, opts GenerateOptions) iter.Seq2[int32, error] {
	return stream(opts, func(o GenerateOptions) error {
		_, err := r.Generate(ctx, prompt, o)
		return err
	})
}
