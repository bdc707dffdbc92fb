package wgdelegate

import (
	"errors"
	"fmt"
	"sync"
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
// holder. Release ends the claim.
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
