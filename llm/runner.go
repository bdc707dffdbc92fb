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
// its calling convention and the position the KV cache is filled up to.
// A Runner is one sequence: it is not safe for concurrent use. It owns
// the model's KV cache (wgdelegate.Model.ClaimState) from New to Close,
// so a second Runner on the same model fails with ErrCacheOwned until
// the first is closed.
type Runner struct {
	m     *wgdelegate.Model
	own   bool
	claim *wgdelegate.StateClaim
	// closed: Close was called; Forward and Generate refuse to run.
	closed bool
	conv   Convention
	pos    int64
	// pending is the last generated token, not yet fed to the model; the
	// next Generate feeds it before its prompt. -1 when none.
	pending int32
	logits  []float32
	tok32   []int32
	tok64   []int64
	last    Stats
	// head picks greedy tokens on the device (nil until the first greedy
	// Generate; noHead once NewHead refused this model).
	head   *wgdelegate.Head
	noHead bool
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
	r.own = true
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
	r.own = true
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
	c, err := Detect(m, info.MaxSeqLen, info.TokenType)
	if err != nil {
		return nil, err
	}
	claim, err := m.ClaimState("an llm.Runner")
	if err != nil {
		return nil, fmt.Errorf("llm: a second runner on one model (close the first): %w", err)
	}
	return &Runner{m: m, claim: claim, conv: c, pending: -1}, nil
}

// Convention returns the calling convention the runner detected.
func (r *Runner) Convention() Convention { return r.conv }

// Model returns the underlying model.
func (r *Runner) Model() *wgdelegate.Model { return r.m }

// Pos returns the position the next token goes to: how many the KV cache
// holds.
func (r *Runner) Pos() int64 { return r.pos }

// Reset starts a new sequence at position 0. The cache is not cleared:
// positions are overwritten before attention reads them.
func (r *Runner) Reset() {
	r.pos, r.pending = 0, -1
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
	if r.head != nil {
		r.head.Close()
		r.head = nil
	}
	r.claim.Release()
	if r.own {
		return r.m.Close()
	}
	return nil
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
	if r.pending >= 0 {
		tokens = append([]int32{r.pending}, tokens...)
	}
	logits, err := r.forward(ctx, tokens, 0)
	if err == nil {
		r.pending = -1
	}
	return logits, err
}

func (r *Runner) forward(ctx context.Context, tokens []int32, chunk int64) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: no tokens to feed", ErrOption)
	}
	if err := r.fits(int64(len(tokens))); err != nil {
		return nil, err
	}
	for _, t := range tokens {
		if t < 0 || int64(t) >= r.conv.Vocab {
			return nil, &TokenError{Token: t, Vocab: r.conv.Vocab}
		}
	}
	if chunk <= 0 || chunk > r.conv.MaxTokens {
		chunk = r.conv.MaxTokens
	}
	for len(tokens) > 0 {
		n := min(int64(len(tokens)), chunk)
		if err := r.execute(ctx, tokens[:n]); err != nil {
			return nil, err
		}
		tokens = tokens[n:]
	}
	return r.logits, nil
}

// fits checks that n more tokens fit in the cache.
func (r *Runner) fits(n int64) error {
	if r.pos+n <= r.conv.MaxSeqLen {
		return nil
	}
	if n > 1 {
		return &CacheError{Pos: r.pos, Tokens: n, MaxSeqLen: r.conv.MaxSeqLen, Err: ErrPromptTooLong}
	}
	return &CacheError{Pos: r.pos, Tokens: n, MaxSeqLen: r.conv.MaxSeqLen, Err: ErrPositionPastEnd}
}

// execute runs one Execute of tokens at r.pos and keeps the last logits.
func (r *Runner) execute(ctx context.Context, tokens []int32) error {
	n := int64(len(tokens))
	outs, err := r.m.Execute(ctx, r.inputs(tokens)...)
	if err != nil {
		return err
	}
	if len(outs) == 0 {
		return &NotDecoderError{Reason: "Execute returned no outputs"}
	}
	v, err := outs[0].Float32s()
	if err != nil {
		return err
	}
	if int64(len(v)) < r.conv.Vocab || int64(len(v))%r.conv.Vocab != 0 {
		return &NotDecoderError{Reason: fmt.Sprintf("logits of shape %v for a vocabulary of %d", outs[0].Shape, r.conv.Vocab)}
	}
	r.logits = append(r.logits[:0], v[int64(len(v))-r.conv.Vocab:]...)
	r.pos += n
	return nil
}

// inputs returns the model's inputs for tokens at r.pos, in buffers the
// runner reuses.
func (r *Runner) inputs(tokens []int32) []wgdelegate.Tensor {
	n := int64(len(tokens))
	var tok wgdelegate.Tensor
	if r.conv.TokenType == wgdelegate.Int64 {
		r.tok64 = r.tok64[:0]
		for _, t := range tokens {
			r.tok64 = append(r.tok64, int64(t))
		}
		tok = wgdelegate.FromInt64([]int64{1, n}, r.tok64)
	} else {
		r.tok32 = append(r.tok32[:0], tokens...)
		tok = wgdelegate.FromInt32([]int64{1, n}, r.tok32)
	}
	posShape := []int64{1}
	if r.conv.PosSymInt {
		posShape = []int64{}
	}
	var pos wgdelegate.Tensor
	if r.conv.PosType == wgdelegate.Int32 {
		pos = wgdelegate.FromInt32(posShape, []int32{int32(r.pos)})
	} else {
		pos = wgdelegate.FromInt64(posShape, []int64{r.pos})
	}
	return []wgdelegate.Tensor{tok, pos}
}

// GenerateOptions configure Generate and Stream.
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
// the sequence is in an unknown state: Reset before the next one.
func (r *Runner) Generate(ctx context.Context, prompt []int32, opts GenerateOptions) (Result, error) {
	res := Result{Stop: -1}
	if r.closed {
		return res, errClosed
	}
	start := time.Now()
	s, err := newSampler(opts)
	if err != nil {
		return res, err
	}
	feed := prompt
	if r.pending >= 0 {
		feed = append([]int32{r.pending}, prompt...)
	}
	if len(feed) == 0 {
		return res, fmt.Errorf("%w: an empty prompt with nothing generated before", ErrOption)
	}
	for _, t := range opts.StopTokens {
		if int64(t) >= r.conv.Vocab {
			return res, fmt.Errorf("%w: stop token %d is outside the model's vocabulary of %d tokens", ErrOption, t, r.conv.Vocab)
		}
	}
	if err := r.fits(int64(len(feed))); err != nil {
		return res, err
	}
	n := int64(opts.MaxNewTokens)
	room := r.conv.MaxSeqLen - r.pos - int64(len(feed)) + 1 // the last token is not fed
	if n == 0 {
		n = room
	} else if n > room {
		return res, &CacheError{Pos: r.pos + int64(len(feed)) + n - 1, Tokens: 1, MaxSeqLen: r.conv.MaxSeqLen, Err: ErrPositionPastEnd}
	}
	stats := &res.Stats
	stats.PromptTokens = len(feed)
	if h := r.greedyHead(s, opts); h != nil {
		err := r.generateOnDevice(ctx, h, feed, n, opts, &res, start)
		r.last = *stats
		return res, err
	}
	s.accept(feed...)
	pick := r.picker(ctx, s, opts, stats)
	tok, err := pick(feed, int64(opts.PrefillChunk))
	if err != nil {
		return res, err
	}
	r.pending = -1
	stats.Prefill = time.Since(start)
	var decodeStart time.Time
	for i := int64(0); i < n; i++ {
		if i > 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if tok, err = pick([]int32{r.pending}, 1); err != nil {
				r.last = *stats
				return res, err
			}
			r.pending = -1
			stats.DecodeSteps++
			stats.Decode = time.Since(decodeStart)
		}
		if i == 0 {
			stats.TimeToFirstToken = time.Since(start)
			decodeStart = time.Now()
		}
		if slices.Contains(opts.StopTokens, tok) {
			res.Stop = tok
			break
		}
		r.pending = tok
		s.accept(tok)
		res.Tokens = append(res.Tokens, tok)
		stats.GeneratedTokens++
		if opts.OnToken != nil {
			if err := opts.OnToken(tok); err != nil {
				r.last = *stats
				return res, err
			}
		}
	}
	r.last = *stats
	return res, nil
}

// LastStats returns the Stats of the last Generate or Stream.
func (r *Runner) LastStats() Stats { return r.last }

// errStopped ends a Stream whose consumer stopped early.
var errStopped = errors.New("llm: stream stopped")

// Stream is Generate as an iterator: it yields each token as it is
// sampled, and a final (-1, err) if generation fails. Breaking out of the
// loop stops the generation. LastStats has its timings afterwards.
func (r *Runner) Stream(ctx context.Context, prompt []int32, opts GenerateOptions) iter.Seq2[int32, error] {
	return func(yield func(int32, error) bool) {
		o := opts
		user := opts.OnToken
		o.OnToken = func(tok int32) error {
			if user != nil {
				if err := user(tok); err != nil {
					return err
				}
			}
			if !yield(tok, nil) {
				return errStopped
			}
			return nil
		}
		if _, err := r.Generate(ctx, prompt, o); err != nil && !errors.Is(err, errStopped) {
			yield(-1, err)
		}
	}
}

// greedyHead returns the device head for a generation that can use it
// (greedy, no penalties, not HostGreedy), making it on first use; nil
// otherwise or when the model has no head (a program of several
// delegates, logits or tokens a head cannot serve).
func (r *Runner) greedyHead(s *sampler, opts GenerateOptions) *wgdelegate.Head {
	if s.temp != 0 || s.penalize || opts.HostGreedy {
		return nil
	}
	return r.deviceHead()
}

// deviceHead returns the model's Head, making it on first use; nil when
// the model has none (a program of several delegates, logits or tokens a
// head cannot serve).
func (r *Runner) deviceHead() *wgdelegate.Head {
	if r.head == nil && !r.noHead {
		h, err := r.m.NewHead(wgdelegate.HeadOptions{Logits: 0, Token: 0})
		if err != nil {
			r.noHead = true
			return nil
		}
		r.head = h
	}
	return r.head
}

// generateOnDevice is Generate's greedy loop with the device head: the
// prompt's last chunk and every decode step are submitted through h, and
// step t+1 (fed the token step t picks, on the device) is submitted
// before step t's token is read, so the GPU runs one step while the host
// reads the previous one's 4 bytes and encodes the next. A stop token
// ends the loop when it is read; the step already submitted behind it
// wrote only the cache row at the stop's position, which the runner does
// not count as filled (the next sequence or Generate overwrites it).
func (r *Runner) generateOnDevice(ctx context.Context, h *wgdelegate.Head, feed []int32, n int64, opts GenerateOptions, res *Result, start time.Time) error {
	stats := &res.Stats
	feed, err := r.feedChunks(ctx, feed, int64(opts.PrefillChunk))
	if err != nil {
		return err
	}
	var inflight []wgdelegate.HeadStep
	// drain waits for the steps still submitted (their picks unused),
	// so that the head's ring is free for the next generation.
	drain := func() {
		for _, p := range inflight {
			h.Wait(context.WithoutCancel(ctx), p)
		}
		inflight = nil
	}
	stats.OnDevice = true
	submit := func(tokens []int32, fed bool) (wgdelegate.HeadStep, error) {
		t0 := time.Now()
		p, err := h.Submit(ctx, r.inputs(tokens), wgdelegate.StepOptions{Fed: fed})
		stats.Submit += time.Since(t0)
		return p, err
	}
	p, err := submit(feed, false)
	if err != nil {
		return err
	}
	r.pending = -1
	r.pos += int64(len(feed))
	inflight = append(inflight, p)
	var decodeStart time.Time
	for i := int64(0); i < n; i++ {
		if i+1 < n {
			// The step that eats token i, submitted before token i is read.
			next, err := submit([]int32{0}, true)
			if err != nil {
				drain()
				return err
			}
			inflight = append(inflight, next)
		}
		t0 := time.Now()
		hr, err := h.Wait(ctx, inflight[0])
		stats.Wait += time.Since(t0)
		if err != nil {
			drain()
			return err
		}
		tok := hr.Token
		inflight = inflight[1:]
		if i == 0 {
			stats.Prefill = time.Since(start)
			stats.TimeToFirstToken = stats.Prefill
			decodeStart = time.Now()
		} else {
			stats.DecodeSteps++
			stats.Decode = time.Since(decodeStart)
		}
		if slices.Contains(opts.StopTokens, tok) {
			res.Stop = tok
			drain()
			return nil
		}
		res.Tokens = append(res.Tokens, tok)
		stats.GeneratedTokens++
		if i+1 < n {
			r.pos++ // token i is in the cache: its step was submitted
		} else {
			r.pending = tok
		}
		if opts.OnToken != nil {
			if err := opts.OnToken(tok); err != nil {
				drain()
				return err
			}
		}
	}
	drain()
	return nil
}

// picker returns the function that feeds tokens (in chunks of up to
// chunk) and picks the next token with s: from read-back logits, or, for
// sampling with a device head, from the step's largest logits (reading
// the row only when they do not suffice).
func (r *Runner) picker(ctx context.Context, s *sampler, opts GenerateOptions, stats *Stats) func([]int32, int64) (int32, error) {
	k := opts.DeviceTopK
	if k == 0 {
		k = max(DefaultDeviceTopK, s.topK)
	}
	var h *wgdelegate.Head
	if s.temp > 0 && !s.penalize && k > 0 && k <= wgdelegate.MaxTopK {
		h = r.deviceHead()
	}
	if h == nil {
		return func(tokens []int32, chunk int64) (int32, error) {
			logits, err := r.forward(ctx, tokens, chunk)
			if err != nil {
				return -1, err
			}
			return s.sample(logits), nil
		}
	}
	stats.OnDevice = true
	return func(tokens []int32, chunk int64) (int32, error) {
		last, err := r.feedChunks(ctx, tokens, chunk)
		if err != nil {
			return -1, err
		}
		t0 := time.Now()
		st, err := h.Submit(ctx, r.inputs(last), wgdelegate.StepOptions{TopK: k, Temperature: s.temp})
		stats.Submit += time.Since(t0)
		if err != nil {
			return -1, err
		}
		r.pos += int64(len(last))
		t0 = time.Now()
		hr, err := h.Wait(ctx, st)
		stats.Wait += time.Since(t0)
		if err != nil {
			return -1, err
		}
		if tok, ok := s.sampleTop(hr.Top, hr.SumExp); ok {
			return tok, nil
		}
		stats.LogitReads++
		logits, err := h.Logits(ctx)
		if err != nil {
			return -1, err
		}
		return s.sample(logits), nil
	}
}

// feedChunks checks tokens like forward and feeds all but the last chunk
// of up to chunk tokens (Convention().MaxTokens when 0), returning that
// last chunk for the caller to submit.
func (r *Runner) feedChunks(ctx context.Context, tokens []int32, chunk int64) ([]int32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: no tokens to feed", ErrOption)
	}
	if err := r.fits(int64(len(tokens))); err != nil {
		return nil, err
	}
	for _, t := range tokens {
		if t < 0 || int64(t) >= r.conv.Vocab {
			return nil, &TokenError{Token: t, Vocab: r.conv.Vocab}
		}
	}
	if chunk <= 0 || chunk > r.conv.MaxTokens {
		chunk = r.conv.MaxTokens
	}
	for int64(len(tokens)) > chunk {
		if err := r.execute(ctx, tokens[:chunk]); err != nil {
			return nil, err
		}
		tokens = tokens[chunk:]
	}
	return tokens, nil
}
