package wgdelegate

import (
	"errors"
	"fmt"
	"sync"

	"github.com/wgdelegate/wgdelegate/graph"
)

// ErrStateClaimed: ClaimState on a model whose mutable state another
// owner has claimed; the error is a *StateClaimedError.
var ErrStateClaimed = errors.New("model state already claimed")

// StateClaimedError reports a ClaimState refused because the model's
// mutable state is held: Owner is the holder's name, Claimant the name
// given to the refused call.
type StateClaimedError struct {
	Owner, Claimant string
}

func (e *StateClaimedError) Error() string {
	return fmt.Sprintf("wgdelegate: %v: %s holds the model's mutable state (its KV caches: one sequence per model), so %s cannot have it until that is released",
		ErrStateClaimed, e.Owner, e.Claimant)
}

// Unwrap returns ErrStateClaimed.
func (e *StateClaimedError) Unwrap() error { return ErrStateClaimed }

// stateOwner is a model's claim bookkeeping: who holds its mutable state,
// and which claim is current.
type stateOwner struct {
	mu    sync.Mutex
	owner string
	claim *StateClaim // nil when unclaimed
}

// StateClaim is one owner's hold on a model's mutable state (ClaimState).
type StateClaim struct {
	m    *Model
	once sync.Once
}

// ClaimState claims the model's mutable state for owner, a name that
// errors show (such as "llm.Runner"). The mutable state is what one
// Execute leaves for the next: the tensors a graph writes in place, such
// as a decoder's KV caches, which hold one sequence. Two users stepping
// one sequence each through the same model would overwrite each other's
// cache rows and get wrong tokens with no error, so a user that keeps a
// sequence in the model (llm.New) claims it first: while a claim is held,
// ClaimState fails with a *StateClaimedError (ErrStateClaimed) naming the
// holder. Release ends the claim. The holder may run several sequences
// in turn by swapping their state through StateStores (NewStore, Save,
// Restore: llm.Pool's sessions do).
//
// The claim is advisory: Execute does not check it. ClaimState is safe
// for concurrent use; of concurrent claims exactly one succeeds. A closed
// model is ErrClosed.
func (m *Model) ClaimState(owner string) (*StateClaim, error) {
	if m.closed.Load() {
		return nil, m.closedErr()
	}
	m.state.mu.Lock()
	defer m.state.mu.Unlock()
	if m.state.claim != nil {
		return nil, &StateClaimedError{Owner: m.state.owner, Claimant: owner}
	}
	c := &StateClaim{m: m}
	m.state.owner, m.state.claim = owner, c
	return c, nil
}

// StateOwner returns the name the current claim on the model's mutable
// state was made with, "" when there is none.
func (m *Model) StateOwner() string {
	m.state.mu.Lock()
	defer m.state.mu.Unlock()
	return m.state.owner
}

// Release ends the claim, so that another ClaimState may succeed. It is
// idempotent, and a no-op on a nil claim.
func (c *StateClaim) Release() {
	if c == nil {
		return
	}
	c.once.Do(func() {
		s := &c.m.state
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.claim == c {
			s.owner, s.claim = "", nil
		}
	})
}

// StateTensor describes one tensor of a model's mutable state (a KV
// cache): its buffer's size and, for a position-major cache [1, S, H, D],
// the bytes of one position. See graph.StateTensor.
type StateTensor = graph.StateTensor

// StateTensors lists the model's mutable state over its delegate graphs,
// in order: the tensors its ops write in place, such as a decoder's KV
// caches. A model without state returns nil, and so does a closed one.
func (m *Model) StateTensors() []StateTensor {
	if m.closed.Load() {
		return nil
	}
	var out []StateTensor
	for _, g := range m.graphs {
		out = append(out, g.StateTensors()...)
	}
	return out
}

// StateBytes is the device memory one copy of the model's mutable state
// takes: what a StateStore holds.
func (m *Model) StateBytes() int64 {
	var n int64
	for _, s := range m.StateTensors() {
		n += s.Bytes
	}
	return n
}

// StatePrefixBytes is how many bytes of the model's state hold positions
// [0, n): what Save and Restore copy for a sequence at position n.
func (m *Model) StatePrefixBytes(n int64) int64 {
	var b int64
	for _, s := range m.StateTensors() {
		b += s.PrefixBytes(n)
	}
	return b
}

// StateStore holds one copy of a model's mutable state in device buffers
// of its own, so that several sequences can take turns in one model: the
// model's buffers hold the running sequence's state, and the holder of
// the state claim saves it into the sequence's store and restores
// another's (StateClaim.Save, Restore). Release frees it.
type StateStore struct {
	m      *Model
	stores []*graph.StateStore
}

// Bytes is the device memory the store holds.
func (s *StateStore) Bytes() int64 {
	var n int64
	for _, g := range s.stores {
		n += g.Bytes()
	}
	return n
}

// Buffers is how many device buffers the store holds (0 once released).
func (s *StateStore) Buffers() int {
	var n int
	for _, g := range s.stores {
		n += g.Buffers()
	}
	return n
}

// Release frees the store's buffers; copies already queued still
// complete. It is idempotent and a no-op on nil.
func (s *StateStore) Release() {
	if s == nil {
		return
	}
	for _, g := range s.stores {
		g.Release()
	}
}

// ErrStateStore: a StateStore used with another model than its own, or
// after Release; also a StateClaim used after its Release.
var ErrStateStore = graph.ErrStateStore

// current checks that c is the model's claim and the model is open.
func (c *StateClaim) current() error {
	if c == nil {
		return ErrStateStore
	}
	if c.m.closed.Load() {
		return c.m.closedErr()
	}
	c.m.state.mu.Lock()
	defer c.m.state.mu.Unlock()
	if c.m.state.claim != c {
		return fmt.Errorf("wgdelegate: %w: the state claim was released", ErrStateStore)
	}
	return nil
}

// NewStore allocates a StateStore for the model's state (Model.StateBytes
// of device memory).
func (c *StateClaim) NewStore() (*StateStore, error) {
	if err := c.current(); err != nil {
		return nil, err
	}
	s := &StateStore{m: c.m}
	for _, g := range c.m.graphs {
		gs, err := g.NewStateStore()
		if err != nil {
			s.Release()
			return nil, fmt.Errorf("wgdelegate: state store: %w", err)
		}
		s.stores = append(s.stores, gs)
	}
	return s, nil
}

// Save queues copies of the model's state for positions [0, n) (a
// tensor that is not position-major: all of it) into dst and returns the
// bytes copied. It does not wait: the device runs the copies after every
// step already submitted (an Execute, a Head step) and before any
// submitted later.
func (c *StateClaim) Save(dst *StateStore, n int64) (int64, error) {
	return c.copy(dst, nil, n, (*graph.WebGPUGraph).SaveState)
}

// Restore queues copies of positions [0, n) of src's state into the
// model's state buffers (see Save): the next step runs on that sequence.
// Positions from n on keep what they held; a sequence at position n
// writes them before attention reads them.
func (c *StateClaim) Restore(src *StateStore, n int64) (int64, error) {
	return c.copy(src, nil, n, (*graph.WebGPUGraph).RestoreState)
}

// Copy queues copies of positions [0, n) of src into dst (forking a
// sequence whose state is in its store, not in the model).
func (c *StateClaim) Copy(dst, src *StateStore, n int64) (int64, error) {
	if err := c.current(); err != nil {
		return 0, err
	}
	if src == nil || src.m != c.m || len(src.stores) != len(c.m.graphs) {
		return 0, ErrStateStore
	}
	return c.copy(dst, src, n, nil)
}

func (c *StateClaim) copy(s, src *StateStore, n int64, op func(*graph.WebGPUGraph, *graph.StateStore, int64) (int64, error)) (int64, error) {
	if err := c.current(); err != nil {
		return 0, err
	}
	if s == nil || s.m != c.m || len(s.stores) != len(c.m.graphs) {
		return 0, ErrStateStore
	}
	var total int64
	for i, g := range c.m.graphs {
		var k int64
		var err error
		if src != nil {
			k, err = g.CopyStateStore(s.stores[i], src.stores[i], n)
		} else {
			k, err = op(g, s.stores[i], n)
		}
		if err != nil {
			return total, fmt.Errorf("wgdelegate: state: %w", err)
		}
		total += k
	}
	return total, nil
}
