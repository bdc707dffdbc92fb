package llm

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/wgdelegate/wgdelegate"
)

// SessionOptions bound a Pool.
type SessionOptions struct {
	// MaxSessions caps the sessions open at once; 0 means
	// DefaultMaxSessions.
	MaxSessions int
	// MemoryBudget caps the device memory of the sessions' saved states,
	// Model.StateBytes each (what a session's cache takes while another
	// session runs); 0 sets no cap beyond MaxSessions.
	MemoryBudget int64
}

// DefaultMaxSessions is SessionOptions.MaxSessions's default.
const DefaultMaxSessions = 8

// ErrSessionsFull: Pool.New (or Session.Fork) when MaxSessions sessions
// are open, or one more would pass the MemoryBudget.
var ErrSessionsFull = errors.New("llm: no room for another session")

// Pool runs several sequences (Sessions) on one loaded model: they share
// its weights on the device and take turns with its KV caches, step by
// step. The model's cache buffers hold the running session's state; when
// another session's turn comes, the pool saves the filled prefix of the
// caches into the outgoing session's store and restores the incoming
// one's (wgdelegate.StateClaim.Save, Restore), device-side copies queued
// in order with the steps. A Pool claims the model's state
// (wgdelegate.Model.ClaimState) from NewPool to Close. Its methods are
// safe for concurrent use.
type Pool struct {
	m          *wgdelegate.Model
	own        bool // Close closes m
	claim      *wgdelegate.StateClaim
	conv       Convention
	opts       SessionOptions
	stateBytes int64

	mu       sync.Mutex // guards the fields below
	sessions map[*Session]struct{}
	closed   bool
	stats    PoolStats

	turn turns

	// Under the turn:
	resident *Session // whose state the model's buffers hold
	head     *wgdelegate.Head
	noHead   bool
	tok32    []int32
	tok64    []int64
}

// PoolStats describe a Pool's sessions and their state switches.
type PoolStats struct {
	// Sessions open, and the most that may be.
	Sessions, MaxSessions int
	// StateBytes is one session's saved state (Model.StateBytes).
	StateBytes int64
	// Stores are the sessions' saved states allocated on the device
	// (each of StateBytes; a session gets one when it is first switched
	// out or forked), StoreBytes their total.
	Stores     int
	StoreBytes int64
	// Switches counts the times a session's saved state was restored
	// into the model (a turn of a session whose cache holds tokens after
	// another session's); SavedBytes and RestoredBytes are what the
	// switches (and forks) copied.
	Switches                  int64
	SavedBytes, RestoredBytes int64
	// Waiting is how many callers wait for the device now.
	Waiting int
}

// NewPool makes a pool of sessions on m, an already loaded model, with
// what InspectProgram read from its file (as New). The caller keeps
// ownership of m. The pool claims the model's state until Close: NewPool
// on a model a Runner or another Pool holds fails with an error wrapping
// ErrCacheOwned.
func NewPool(m *wgdelegate.Model, info ProgramInfo, opts SessionOptions) (*Pool, error) {
	return newPool(m, info, opts, "an llm.Pool", "llm: a pool of sessions on a model whose state is held")
}

func newPool(m *wgdelegate.Model, info ProgramInfo, opts SessionOptions, owner, refused string) (*Pool, error) {
	if opts.MaxSessions < 0 || opts.MemoryBudget < 0 {
		return nil, fmt.Errorf("%w: MaxSessions %d and MemoryBudget %d must not be negative", ErrOption, opts.MaxSessions, opts.MemoryBudget)
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	c, err := Detect(m, info.MaxSeqLen, info.TokenType)
	if err != nil {
		return nil, err
	}
	claim, err := m.ClaimState(owner)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", refused, err)
	}
	p := &Pool{m: m, claim: claim, conv: c, opts: opts, stateBytes: m.StateBytes(), sessions: map[*Session]struct{}{}}
	p.stats.MaxSessions, p.stats.StateBytes = opts.MaxSessions, p.stateBytes
	return p, nil
}

// Convention returns the calling convention the pool detected.
func (p *Pool) Convention() Convention { return p.conv }

// Model returns the underlying model.
func (p *Pool) Model() *wgdelegate.Model { return p.m }

// Stats returns the pool's counters now.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Sessions = len(p.sessions)
	s.Waiting = p.turn.waiting()
	return s
}

// errPoolClosed is the error of a closed pool's (and its sessions')
// methods.
var errPoolClosed = fmt.Errorf("llm: the pool is closed: %w", wgdelegate.ErrClosed)

// New opens a session: an empty sequence. It fails with an error
// wrapping ErrSessionsFull when MaxSessions are open or another would
// pass the MemoryBudget, and with wgdelegate.ErrClosed after Close.
func (p *Pool) New() (*Session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPoolClosed
	}
	if n := len(p.sessions); n >= p.opts.MaxSessions {
		return nil, fmt.Errorf("%w: %d sessions open, at most %d", ErrSessionsFull, n, p.opts.MaxSessions)
	}
	if b := p.opts.MemoryBudget; b > 0 && int64(len(p.sessions)+1)*p.stateBytes > b {
		return nil, fmt.Errorf("%w: %d sessions of %d state bytes each would pass the memory budget of %d bytes", ErrSessionsFull, len(p.sessions)+1, p.stateBytes, b)
	}
	s := &Session{p: p}
	p.sessions[s] = struct{}{}
	return s, nil
}

// Close closes every session and releases the pool's device objects and
// its claim on the model's state (and the model, for a pool a Runner
// opened). It waits for the step running now; calls of the sessions then
// fail with an error wrapping wgdelegate.ErrClosed. Close is idempotent.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	// Once we hold the turn nothing runs: the holder gives it up at its
	// next step, and whoever gets it later finds the pool closed.
	p.turn.acquire(context.Background())
	defer p.turn.release()
	p.mu.Lock()
	sessions := make([]*Session, 0, len(p.sessions))
	for s := range p.sessions {
		sessions = append(sessions, s)
	}
	clear(p.sessions)
	p.mu.Unlock()
	for _, s := range sessions {
		s.mu.Lock()
		s.closed = true
		p.dropStore(s)
		s.mu.Unlock()
	}
	if p.head != nil {
		p.head.Close()
		p.head = nil
	}
	p.resident = nil
	p.claim.Release()
	if p.own {
		return p.m.Close()
	}
	return nil
}

// dropStore releases s's store; the caller holds s.mu.
func (p *Pool) dropStore(s *Session) {
	if s.store == nil {
		return
	}
	b := s.store.Bytes()
	s.store.Release()
	s.store = nil
	p.mu.Lock()
	p.stats.Stores--
	p.stats.StoreBytes -= b
	p.mu.Unlock()
}

// newStore allocates a store for s; the caller holds the turn and s.mu.
func (p *Pool) newStore(s *Session) error {
	st, err := p.claim.NewStore()
	if err != nil {
		return err
	}
	s.store = st
	p.mu.Lock()
	p.stats.Stores++
	p.stats.StoreBytes += st.Bytes()
	p.mu.Unlock()
	return nil
}

// enter makes s's state the model's; the caller holds the turn.
func (p *Pool) enter(s *Session) error {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return errPoolClosed
	}
	if p.resident == s {
		return nil
	}
	if r := p.resident; r != nil {
		p.saveOut(r)
	}
	p.resident = s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errSessionClosed
	}
	s.dirty = false
	n := int64(len(s.tokens))
	if n == 0 {
		return nil
	}
	if s.store == nil {
		// Cannot happen: a session leaves tokens in the cache only while
		// it is resident, and gets a store when it leaves. Start over.
		s.tokens = s.tokens[:0]
		return nil
	}
	b, err := p.claim.Restore(s.store, n)
	p.mu.Lock()
	p.stats.Switches++
	p.stats.RestoredBytes += b
	p.mu.Unlock()
	if err != nil {
		s.tokens = s.tokens[:0]
		return fmt.Errorf("llm: restoring a session's state: %w", err)
	}
	return nil
}

// saveOut saves the state of r, the resident session, into its store
// before another session's is restored. If that fails (no memory for the
// store), r forgets its cache: its next call prefills its whole prompt.
func (p *Pool) saveOut(r *Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || !r.dirty || len(r.tokens) == 0 {
		return
	}
	if r.store == nil {
		if err := p.newStore(r); err != nil {
			r.tokens = r.tokens[:0]
			return
		}
	}
	b, err := p.claim.Save(r.store, int64(len(r.tokens)))
	p.mu.Lock()
	p.stats.SavedBytes += b
	p.mu.Unlock()
	if err != nil {
		r.tokens = r.tokens[:0]
		return
	}
	r.dirty = false
}

// turns hands the device to one caller at a time, first come first
// served.
type turns struct {
	mu    sync.Mutex
	busy  bool
	queue []*turnWaiter
}

type turnWaiter struct {
	ch      chan struct{}
	granted bool
}

// acquire waits for the turn; ctx ending first is its error.
func (t *turns) acquire(ctx context.Context) error {
	t.mu.Lock()
	if !t.busy && len(t.queue) == 0 {
		t.busy = true
		t.mu.Unlock()
		return nil
	}
	w := &turnWaiter{ch: make(chan struct{})}
	t.queue = append(t.queue, w)
	t.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	if w.granted {
		t.mu.Unlock()
		t.release() // granted as ctx ended: pass it on
		return ctx.Err()
	}
	t.queue = slices.DeleteFunc(t.queue, func(x *turnWaiter) bool { return x == w })
	t.mu.Unlock()
	return ctx.Err()
}

// release hands the turn to the first waiter, if any.
func (t *turns) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.queue) > 0 {
		w := t.queue[0]
		t.queue = t.queue[1:]
		w.granted = true
		close(w.ch)
		return
	}
	t.busy = false
}

// waiting is how many callers wait for the turn.
func (t *turns) waiting() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.queue)
}

// Session is one sequence of a Pool: the tokens its share of the KV cache
// holds, kept between calls. Generate takes the whole sequence each time
// (a chat's conversation so far) and prefills only what the cache does
// not hold yet (prefix reuse). A Session is not safe for concurrent use;
// different sessions of a pool may be used at once (they take turns on
// the device).
type Session struct {
	p *Pool
	// mu guards the fields below against the pool's switches, which run
	// on the goroutine of whichever session takes the device.
	mu     sync.Mutex
	tokens []int32 // the tokens the cache holds, at positions [0, len)
	store  *wgdelegate.StateStore
	dirty  bool // stepped since it was last restored or saved
	closed bool

	// Used by the session's own calls only:
	held   bool // holds the pool's turn
	logits []float32
	last   Stats
}

// errSessionClosed is the error of a closed session's calls.
var errSessionClosed = fmt.Errorf("llm: the session is closed: %w", wgdelegate.ErrClosed)

// Pos returns how many tokens the session's cache holds.
func (s *Session) Pos() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.tokens))
}

// Tokens returns the tokens the session's cache holds: the prompt and
// generated tokens of its last call, but for the last generated token
// (which no step has fed yet).
func (s *Session) Tokens() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}

// LastStats returns the Stats of the session's last Generate or Stream.
func (s *Session) LastStats() Stats { return s.last }

// Reset forgets the session's tokens: the next call prefills its whole
// prompt.
func (s *Session) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = s.tokens[:0]
}

// Close closes the session and frees its saved state. It is idempotent.
func (s *Session) Close() error {
	p := s.p
	p.mu.Lock()
	delete(p.sessions, s)
	p.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.tokens = nil
	p.dropStore(s)
	return nil
}

// Fork opens a session holding the same tokens and cache state as s (a
// copy, on the device): both then go on independently. It waits for the
// device like a step, and fails with ErrSessionsFull as Pool.New does.
func (s *Session) Fork(ctx context.Context) (*Session, error) {
	p := s.p
	f, err := p.New()
	if err != nil {
		return nil, err
	}
	if err := p.turn.acquire(ctx); err != nil {
		f.Close()
		return nil, err
	}
	defer p.turn.release()
	err = func() error {
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return errPoolClosed
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return errSessionClosed
		}
		n := int64(len(s.tokens))
		if n == 0 {
			return nil
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if err := p.newStore(f); err != nil {
			return err
		}
		var b int64
		var err error
		if p.resident == s {
			b, err = p.claim.Save(f.store, n)
		} else {
			b, err = p.claim.Copy(f.store, s.store, n)
		}
		p.mu.Lock()
		p.stats.SavedBytes += b
		p.mu.Unlock()
		if err != nil {
			return err
		}
		f.tokens = slices.Clone(s.tokens)
		return nil
	}()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("llm: fork: %w", err)
	}
	return f, nil
}

// Generate generates from prompt, the whole sequence (a chat's
// conversation so far, rendered and encoded): the tokens the session's
// cache already holds from the start of prompt are reused (at least the
// last prompt token is fed, for its logits), the rest prefilled, then
// tokens are sampled and fed one at a time as Runner.Generate does
// (Stats.ReusedTokens and PromptTokens count the two parts). The
// penalties' history is prompt, whatever was reused. The session takes
// turns with the pool's other sessions: between steps and prefill chunks
// it gives the device to a session waiting for it. ctx cancels waiting
// and running; after any error the session's cache still holds a prefix
// of the sequence (Tokens says which), so the next call is correct.
func (s *Session) Generate(ctx context.Context, prompt []int32, opts GenerateOptions) (Result, error) {
	res, err := s.generate(ctx, prompt, prompt, opts)
	s.last = res.Stats
	return res, err
}

// Stream is Generate as an iterator, as Runner.Stream.
func (s *Session) Stream(ctx context.Context, prompt []int32, opts GenerateOptions) iter.Seq2[int32, error] {
	return stream(opts, func(o GenerateOptions) error {
		_, err := s.Generate(ctx, prompt, o)
		return err
	})
}

// stream runs gen with an OnToken that yields each token.
func stream(opts GenerateOptions, gen func(GenerateOptions) error) iter.Seq2[int32, error] {
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
		if err := gen(o); err != nil && !errors.Is(err, errStopped) {
			yield(-1, err)
		}
	}
}

// acquire takes the pool's turn and makes s's state the model's.
func (s *Session) acquire(ctx context.Context, stats *Stats) error {
	t0 := time.Now()
	if err := s.p.turn.acquire(ctx); err != nil {
		return err
	}
	if stats != nil {
		stats.Queued += time.Since(t0)
	}
	s.held = true
	if err := s.p.enter(s); err != nil {
		s.release()
		return err
	}
	return nil
}

// release gives the turn up, if held.
func (s *Session) release() {
	if s.held {
		s.held = false
		s.p.turn.release()
	}
}

// contended reports whether another caller waits for the device.
func (s *Session) contended() bool { return s.p.turn.waiting() > 0 }

// yield gives the device to the callers waiting for it and takes it back
// after them. No step of s may be in flight.
func (s *Session) yield(ctx context.Context, stats *Stats) error {
	s.release()
	stats.Yields++
	return s.acquire(ctx, stats)
}

// maybeYield yields when another caller waits.
func (s *Session) maybeYield(ctx context.Context, stats *Stats) error {
	if !s.contended() {
		return nil
	}
	return s.yield(ctx, stats)
}

// lcp is the length of the longest common prefix of a and b.
func lcp(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// plan checks a call on the sequence full and returns how many of its
// tokens the cache holds and may keep.
func (s *Session) plan(full []int32) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errSessionClosed
	}
	common := lcp(s.tokens, full)
	if common == len(full) {
		common-- // the last token is fed again, for its logits
	}
	return common, nil
}

// fits checks that n more tokens fit in the cache after pos.
func (s *Session) fits(pos, n int64) error {
	max := s.p.conv.MaxSeqLen
	if pos+n <= max {
		return nil
	}
	if n > 1 {
		return &CacheError{Pos: pos, Tokens: n, MaxSeqLen: max, Err: ErrPromptTooLong}
	}
	return &CacheError{Pos: pos, Tokens: n, MaxSeqLen: max, Err: ErrPositionPastEnd}
}

// checkTokens checks that every token is in the vocabulary.
func (s *Session) checkTokens(tokens []int32) error {
	for _, t := range tokens {
		if t < 0 || int64(t) >= s.p.conv.Vocab {
			return &TokenError{Token: t, Vocab: s.p.conv.Vocab}
		}
	}
	return nil
}

// truncate keeps the first n tokens of the cache.
func (s *Session) truncate(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = s.tokens[:n]
}

// advance records tokens as fed into the cache.
func (s *Session) advance(tokens ...int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = append(s.tokens, tokens...)
	s.dirty = true
}

// forward feeds full's tokens past those the cache holds (in chunks,
// taking turns) and returns the logits of the last one.
func (s *Session) forward(ctx context.Context, full []int32) ([]float32, error) {
	if len(full) == 0 {
		return nil, fmt.Errorf("%w: no tokens to feed", ErrOption)
	}
	common, err := s.plan(full)
	if err != nil {
		return nil, err
	}
	feed := full[common:]
	if err := s.fits(int64(common), int64(len(feed))); err != nil {
		return nil, err
	}
	if err := s.checkTokens(feed); err != nil {
		return nil, err
	}
	var stats Stats
	if err := s.acquire(ctx, &stats); err != nil {
		return nil, err
	}
	defer s.release()
	s.truncate(common)
	return s.feed(ctx, feed, 0, &stats)
}

// generate is Generate with the penalties' history given apart from the
// sequence (Runner.Generate's is the tokens it feeds).
func (s *Session) generate(ctx context.Context, full, history []int32, opts GenerateOptions) (Result, error) {
	res := Result{Stop: -1}
	start := time.Now()
	smp, err := newSampler(opts)
	if err != nil {
		return res, err
	}
	if len(full) == 0 {
		return res, fmt.Errorf("%w: an empty prompt", ErrOption)
	}
	conv := s.p.conv
	for _, t := range opts.StopTokens {
		if int64(t) >= conv.Vocab {
			return res, fmt.Errorf("%w: stop token %d is outside the model's vocabulary of %d tokens", ErrOption, t, conv.Vocab)
		}
	}
	common, err := s.plan(full)
	if err != nil {
		return res, err
	}
	feed := full[common:]
	pos := int64(common)
	if err := s.fits(pos, int64(len(feed))); err != nil {
		return res, err
	}
	if err := s.checkTokens(feed); err != nil {
		return res, err
	}
	n := int64(opts.MaxNewTokens)
	room := conv.MaxSeqLen - pos - int64(len(feed)) + 1 // the last token is not fed
	if n == 0 {
		n = room
	} else if n > room {
		return res, &CacheError{Pos: pos + int64(len(feed)) + n - 1, Tokens: 1, MaxSeqLen: conv.MaxSeqLen, Err: ErrPositionPastEnd}
	}
	stats := &res.Stats
	if err := s.acquire(ctx, stats); err != nil {
		return res, err
	}
	defer s.release()
	s.truncate(common)
	stats.PromptTokens, stats.ReusedTokens = len(feed), common
	if h := s.greedyHead(smp, opts); h != nil {
		err := s.generateOnDevice(ctx, h, feed, n, opts, &res, start)
		return res, err
	}
	smp.accept(history...)
	pick := s.picker(ctx, smp, opts, stats)
	tok, err := pick(feed, int64(opts.PrefillChunk))
	if err != nil {
		return res, err
	}
	stats.Prefill = time.Since(start)
	var decodeStart time.Time
	for i := int64(0); i < n; i++ {
		if i > 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if err := s.maybeYield(ctx, stats); err != nil {
				return res, err
			}
			if tok, err = pick([]int32{tok}, 1); err != nil {
				return res, err
			}
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
		smp.accept(tok)
		res.Tokens = append(res.Tokens, tok)
		stats.GeneratedTokens++
		if opts.OnToken != nil {
			if err := opts.OnToken(tok); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// inputs returns the model's inputs for tokens at pos, in buffers the
// pool reuses (under the turn).
func (p *Pool) inputs(tokens []int32, at int64) []wgdelegate.Tensor {
	n := int64(len(tokens))
	var tok wgdelegate.Tensor
	if p.conv.TokenType == wgdelegate.Int64 {
		p.tok64 = p.tok64[:0]
		for _, t := range tokens {
			p.tok64 = append(p.tok64, int64(t))
		}
		tok = wgdelegate.FromInt64([]int64{1, n}, p.tok64)
	} else {
		p.tok32 = append(p.tok32[:0], tokens...)
		tok = wgdelegate.FromInt32([]int64{1, n}, p.tok32)
	}
	posShape := []int64{1}
	if p.conv.PosSymInt {
		posShape = []int64{}
	}
	var pos wgdelegate.Tensor
	if p.conv.PosType == wgdelegate.Int32 {
		pos = wgdelegate.FromInt32(posShape, []int32{int32(at)})
	} else {
		pos = wgdelegate.FromInt64(posShape, []int64{at})
	}
	return []wgdelegate.Tensor{tok, pos}
}

// execute runs one Execute of tokens at the session's position, keeps the
// last logits and records the tokens as fed.
func (s *Session) execute(ctx context.Context, tokens []int32) error {
	p := s.p
	n := int64(len(tokens))
	outs, err := p.m.Execute(ctx, p.inputs(tokens, s.Pos())...)
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
	vocab := p.conv.Vocab
	if int64(len(v)) < vocab || int64(len(v))%vocab != 0 {
		return &NotDecoderError{Reason: fmt.Sprintf("logits of shape %v for a vocabulary of %d", outs[0].Shape, vocab)}
	}
	if p.conv.AllLogits && int64(len(v)) != n*vocab {
		return &NotDecoderError{Reason: fmt.Sprintf("logits of shape %v for %d tokens", outs[0].Shape, n)}
	}
	s.logits = append(s.logits[:0], v[int64(len(v))-vocab:]...)
	s.advance(tokens...)
	return nil
}

// feedChunks feeds all but the last chunk of up to chunk tokens
// (Convention().MaxTokens when 0), giving the device to waiting sessions
// between chunks, and returns that last chunk for the caller to submit.
func (s *Session) feedChunks(ctx context.Context, tokens []int32, chunk int64, stats *Stats) ([]int32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: no tokens to feed", ErrOption)
	}
	if chunk <= 0 || chunk > s.p.conv.MaxTokens {
		chunk = s.p.conv.MaxTokens
	}
	for int64(len(tokens)) > chunk {
		if err := s.execute(ctx, tokens[:chunk]); err != nil {
			return nil, err
		}
		tokens = tokens[chunk:]
		if err := s.maybeYield(ctx, stats); err != nil {
			return nil, err
		}
	}
	return tokens, nil
}

// feed feeds tokens (in chunks) and returns the last one's logits.
func (s *Session) feed(ctx context.Context, tokens []int32, chunk int64, stats *Stats) ([]float32, error) {
	last, err := s.feedChunks(ctx, tokens, chunk, stats)
	if err != nil {
		return nil, err
	}
	if err := s.execute(ctx, last); err != nil {
		return nil, err
	}
	return s.logits, nil
}

// greedyHead returns the device head for a generation that can use it
// (greedy, no penalties, not HostGreedy), nil otherwise.
func (s *Session) greedyHead(smp *sampler, opts GenerateOptions) *wgdelegate.Head {
	if smp.temp != 0 || smp.penalize || opts.HostGreedy {
		return nil
	}
	return s.p.deviceHead()
}

// deviceHead returns the model's Head, making it on first use; nil when
// the model has none (a program of several delegates, logits or tokens a
// head cannot serve). The caller holds the turn.
func (p *Pool) deviceHead() *wgdelegate.Head {
	if p.head == nil && !p.noHead {
		h, err := p.m.NewHead(wgdelegate.HeadOptions{Logits: 0, Token: 0})
		if err != nil {
			p.noHead = true
			return nil
		}
		p.head = h
	}
	return p.head
}

// generateOnDevice is Generate's greedy loop with the device head: the
// prompt's last chunk and every decode step are submitted through h, and
// step t+1 (fed the token step t picks, on the device) is submitted
// before step t's token is read, so the GPU runs one step while the host
// reads the previous one's 4 bytes and encodes the next. A stop token
// ends the loop when it is read; the step already submitted behind it
// wrote only the cache row at the stop's position, which the session does
// not count as filled (the next call overwrites it).
//
// When another session waits for the device, the next step is not
// submitted ahead: the loop reads the token, gives the device up (no step
// of this session in flight, so its state can be saved) and, back, feeds
// the token from the host.
func (s *Session) generateOnDevice(ctx context.Context, h *wgdelegate.Head, feed []int32, n int64, opts GenerateOptions, res *Result, start time.Time) error {
	stats := &res.Stats
	feed, err := s.feedChunks(ctx, feed, int64(opts.PrefillChunk), stats)
	if err != nil {
		return err
	}
	var inflight []wgdelegate.HeadStep
	// drain waits for the steps still submitted (their picks unused), so
	// that the head's ring is free for the next generation.
	drain := func() {
		for _, p := range inflight {
			h.Wait(context.WithoutCancel(ctx), p)
		}
		inflight = nil
	}
	stats.OnDevice = true
	submit := func(tokens []int32, fed bool) error {
		t0 := time.Now()
		p, err := h.Submit(ctx, s.p.inputs(tokens, s.Pos()), wgdelegate.StepOptions{Fed: fed})
		stats.Submit += time.Since(t0)
		if err != nil {
			return err
		}
		inflight = append(inflight, p)
		return nil
	}
	if err := submit(feed, false); err != nil {
		return err
	}
	s.advance(feed...)
	var decodeStart time.Time
	for i := int64(0); i < n; i++ {
		ahead := false
		if i+1 < n && !s.contended() {
			// The step that eats token i, submitted before token i is read.
			if err := submit([]int32{0}, true); err != nil {
				drain()
				return err
			}
			ahead = true
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
		if ahead {
			s.advance(tok) // token i is in the cache: its step was submitted
		}
		if opts.OnToken != nil {
			if err := opts.OnToken(tok); err != nil {
				drain()
				return err
			}
		}
		if i+1 < n && !ahead {
			// Another session waits: nothing of ours is in flight.
			if err := s.yield(ctx, stats); err != nil {
				return err
			}
			if err := submit([]int32{tok}, false); err != nil {
				return err
			}
			s.advance(tok)
		}
	}
	drain()
	return nil
}

// picker returns the function that feeds tokens (in chunks of up to
// chunk) and picks the next token with smp: from read-back logits, or,
// for sampling with a device head, from the step's largest logits
// (reading the row only when they do not suffice).
func (s *Session) picker(ctx context.Context, smp *sampler, opts GenerateOptions, stats *Stats) func([]int32, int64) (int32, error) {
	k := opts.DeviceTopK
	if k == 0 {
		k = max(DefaultDeviceTopK, smp.topK)
	}
	var h *wgdelegate.Head
	if smp.temp > 0 && !smp.penalize && k > 0 && k <= wgdelegate.MaxTopK {
		h = s.p.deviceHead()
	}
	if h == nil {
		return func(tokens []int32, chunk int64) (int32, error) {
			logits, err := s.feed(ctx, tokens, chunk, stats)
			if err != nil {
				return -1, err
			}
			return smp.sample(logits), nil
		}
	}
	stats.OnDevice = true
	return func(tokens []int32, chunk int64) (int32, error) {
		last, err := s.feedChunks(ctx, tokens, chunk, stats)
		if err != nil {
			return -1, err
		}
		t0 := time.Now()
		st, err := h.Submit(ctx, s.p.inputs(last, s.Pos()), wgdelegate.StepOptions{TopK: k, Temperature: smp.temp})
		stats.Submit += time.Since(t0)
		if err != nil {
			return -1, err
		}
		s.advance(last...)
		t0 = time.Now()
		hr, err := h.Wait(ctx, st)
		stats.Wait += time.Since(t0)
		if err != nil {
			// Free the head's ring slot for the next generation.
			h.Wait(context.WithoutCancel(ctx), st)
			return -1, err
		}
		if tok, ok := smp.sampleTop(hr.Top, hr.SumExp); ok {
			return tok, nil
		}
		stats.LogitReads++
		logits, err := h.Logits(ctx)
		if err != nil {
			return -1, err
		}
		return smp.sample(logits), nil
	}
}
