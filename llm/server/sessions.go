package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/wgdelegate/wgdelegate/llm"
)

// sessions hands the pool's sessions to requests: each request gets one
// for its generation and gives it back, idle, with its conversation in
// its cache. Requests that find every session busy wait in a FIFO queue
// of at most maxQueue.
type sessions struct {
	pool     *llm.Pool
	max      int
	maxQueue int
	metrics  *metrics

	mu      sync.Mutex
	idle    []*idleSession // least recently used first
	open    int            // sessions opened (idle or busy)
	waiters []*sessionWaiter
	closed  bool
}

type idleSession struct {
	s      *llm.Session
	tokens []int32 // what its cache holds
}

type sessionWaiter struct {
	prompt []int32
	ch     chan *llm.Session // gets the session (buffered)
	done   bool              // given one (under sessions.mu)
}

func newSessions(p *llm.Pool, maxQueue int, m *metrics) *sessions {
	return &sessions{pool: p, max: p.Stats().MaxSessions, maxQueue: maxQueue, metrics: m}
}

// errQueueFull is the answer to a request past the queue.
func errQueueFull(n int) error {
	return &APIError{Status: http.StatusTooManyRequests, Type: typeRateLimit, Code: "queue_full",
		Message: fmt.Sprintf("the server is busy: every session serves a request and %d wait; retry later", n)}
}

// errSessionsClosed answers a request arriving as the server closes.
var errSessionsClosed = &APIError{Status: http.StatusServiceUnavailable, Type: typeUnavailable, Message: "the server is shutting down"}

// get returns a session for prompt: the idle one whose cache holds the
// longest start of prompt, when that is its whole cache (the conversation
// this request continues) or the whole prompt (a retry); else a new one while fewer than the pool's MaxSessions are
// open; else the idle one sharing the longest prefix (the least recently
// used of equals), whose conversation is dropped. When every session is
// busy it waits its turn in the queue, or fails with a 429 when the
// queue is full.
func (m *sessions) get(ctx context.Context, prompt []int32) (*llm.Session, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errSessionsClosed
	}
	if len(m.waiters) == 0 {
		s, err := m.pickLocked(prompt)
		if s != nil || err != nil {
			m.mu.Unlock()
			return s, err
		}
	}
	if len(m.waiters) >= m.maxQueue {
		n := len(m.waiters)
		m.mu.Unlock()
		return nil, errQueueFull(n)
	}
	w := &sessionWaiter{prompt: prompt, ch: make(chan *llm.Session, 1)}
	m.waiters = append(m.waiters, w)
	m.metrics.queueDepth.Set(float64(len(m.waiters)))
	m.mu.Unlock()
	select {
	case s := <-w.ch:
		if s == nil {
			return nil, errSessionsClosed
		}
		return s, nil
	case <-ctx.Done():
	}
	m.mu.Lock()
	if w.done {
		m.mu.Unlock()
		if s := <-w.ch; s != nil {
			m.put(s)
		}
		return nil, ctx.Err()
	}
	m.waiters = slices.DeleteFunc(m.waiters, func(x *sessionWaiter) bool { return x == w })
	m.metrics.queueDepth.Set(float64(len(m.waiters)))
	m.mu.Unlock()
	return nil, ctx.Err()
}

// pickLocked picks a session for prompt, or nil when every one is busy.
func (m *sessions) pickLocked(prompt []int32) (*llm.Session, error) {
	// A session whose cache the prompt continues, or holds (a retry):
	// nothing of another conversation is lost.
	best, bestN := -1, 0
	for i, is := range m.idle {
		n := lcp(is.tokens, prompt)
		if n > bestN && (n == len(is.tokens) || n >= len(prompt)-1) {
			best, bestN = i, n
		}
	}
	if best >= 0 {
		return m.take(best), nil
	}
	if m.open < m.max {
		s, err := m.pool.New()
		if err != nil {
			if errors.Is(err, llm.ErrSessionsFull) && len(m.idle) == 0 {
				return nil, nil // wait for one to come back
			}
			if !errors.Is(err, llm.ErrSessionsFull) {
				return nil, err
			}
		} else {
			m.open++
			m.metrics.sessionsOpen.Set(float64(m.open))
			return s, nil
		}
	}
	if len(m.idle) == 0 {
		return nil, nil
	}
	best, bestN = 0, -1
	for i, is := range m.idle {
		if n := lcp(is.tokens, prompt); n > bestN {
			best, bestN = i, n
		}
	}
	return m.take(best), nil
}

// take removes idle session i and returns it.
func (m *sessions) take(i int) *llm.Session {
	s := m.idle[i].s
	m.idle = slices.Delete(m.idle, i, i+1)
	return s
}

// put gives a session back: to the first waiter, else to the idle list.
func (m *sessions) put(s *llm.Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		s.Close()
		m.open--
		m.metrics.sessionsOpen.Set(float64(m.open))
		return
	}
	m.idle = append(m.idle, &idleSession{s: s, tokens: s.Tokens()})
	for len(m.waiters) > 0 {
		w := m.waiters[0]
		next, err := m.pickLocked(w.prompt)
		if next == nil || err != nil {
			break
		}
		m.waiters = m.waiters[1:]
		w.done = true
		w.ch <- next
	}
	m.metrics.queueDepth.Set(float64(len(m.waiters)))
}

// close closes the idle sessions and refuses the waiters; sessions in use
// are closed when they come back.
func (m *sessions) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	for _, is := range m.idle {
		is.s.Close()
		m.open--
	}
	m.idle = nil
	for _, w := range m.waiters {
		w.done = true
		w.ch <- nil
	}
	m.waiters = nil
	m.metrics.queueDepth.Set(0)
	m.metrics.sessionsOpen.Set(float64(m.open))
}

// counts returns the sessions open and idle, and the requests waiting.
func (m *sessions) counts() (open, idle, waiting int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.open, len(m.idle), len(m.waiters)
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
