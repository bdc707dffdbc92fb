package server

import "context"

// Hooks for the external tests.

// SetTokenHook makes h run after each generated token, on the generating
// goroutine, with the request's context (set it before serving).
func SetTokenHook(s *Server, h func(ctx context.Context)) { s.tokenHook = h }

// HoldSession takes a session as a request would, and returns the
// function that gives it back.
func HoldSession(ctx context.Context, s *Server) (func(), error) {
	sv := s.model.Load()
	sess, err := sv.sessions.get(ctx, []int32{0})
	if err != nil {
		return nil, err
	}
	return func() { sv.sessions.put(sess) }, nil
}

// SessionCounts returns the sessions the server opened and those idle,
// and the requests waiting for one.
func SessionCounts(s *Server) (open, idle, waiting int) {
	return s.model.Load().sessions.counts()
}
