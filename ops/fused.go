package ops

import (
	"fmt"
	"sync"
)

// Fused ops. Which ops of a chain are recorded together is decided once,
// at load, by package lower's passes over the whole graph; a fused op of
// its plan reaches the kernel registered here under the group's Kind and
// reads its members' arguments with the same checked accessors as every
// op. The kernel may depend on live shapes (one row, an operand that
// broadcasts without growing the result): a FusedFunc checks them before
// it records anything and reports what it could record.

// Kinds of fused ops (Group.Kind).
const (
	// FusedElementwise: a chain of float32 unary and binary ops, each
	// the sole reader of the previous one's output (fuse.go).
	FusedElementwise = "wgd.fused.elementwise"
	// FusedRopeCache: an et_vk.apply_rotary_emb.default and the
	// sdpa_with_kv_cache.default that reads its rotated q and k, the
	// cache update in the rope's dispatch (fuse_rope.go). Guarded.
	FusedRopeCache = "wgd.fused.rope_cache"
	// FusedRopeTables: an et_vk.apply_rotary_emb.default reading the
	// whole cos and sin tables (Group.Tables) instead of their slices.
	FusedRopeTables = "wgd.fused.rope_tables"
	// FusedTableSlice: an aten.slice_copy.Tensor of a rope table whose
	// every reader is a FusedRopeTables rope: it records nothing.
	FusedTableSlice = "wgd.fused.table_slice"
	// FusedNormLinears: an et_vk.rms_norm.default and the one-row
	// linears that read its output, SwiGLU's pair and its sigmoid and
	// muls among them (fuse_linear.go). Guarded.
	FusedNormLinears = "wgd.fused.norm_linears"
	// FusedLinearEpilogue: a linear-family op and the activation, SiLU
	// and residual add or mul its kernel applies (fuse_epilogue.go).
	// Guarded.
	FusedLinearEpilogue = "wgd.fused.linear_epilogue"
)

// Call is one op of the chain as a fused op reads it.
type Call struct {
	Index int // its chain index
	Name  string
	Args  []int32
}

// Group is a fused op of a plan: the ops it stands for, in chain order.
// The first records where the group records.
type Group struct {
	Kind  string
	Calls []Call
	// Tables: the rope kinds' whole tables, when the rope reads them
	// instead of its slices (and, for FusedTableSlice, the sliced table).
	Tables *RopeTables
	// FusedNormLinears (indices into Calls): Linears are the linears
	// that read the norm's output, in chain order, but SwiGLU's; SwiGLU
	// is the pair's gate and up linears, the sigmoid, the gate·sigmoid
	// mul and the final mul, or nil.
	Linears []int
	SwiGLU  []int
	// FusedLinearEpilogue (indices into Calls; 0, the linear, when
	// absent): the activation (SiLU's sigmoid), SiLU's mul, and the
	// residual add or mul.
	Act, Gate, Res int
}

// RopeTables are the whole cos and sin tables a rope reads from row
// Start (a value id: the slices' start) instead of the rows its table
// arguments slice out of them; Cos alone for a table slice.
type RopeTables struct {
	Cos, Sin, Start int32
}

// FusedFunc records the longest prefix of g.Calls that its kernel takes
// at the live shapes and reports how many calls that is. When it records
// nothing (n == 0) the graph records the node's fallback, or, for a group
// without one (the elementwise chains), the first call alone and the rest
// as a group again; so it does for the calls after a prefix.
type FusedFunc func(b Builder, g *Group) (n int, err error)

var (
	fusedMu  sync.RWMutex
	fusedReg = map[string]FusedFunc{}
)

// RegisterFused adds the kernel of fused ops of kind. Called from init; a
// duplicate kind or a nil fn panics.
func RegisterFused(kind string, fn FusedFunc) {
	fusedMu.Lock()
	defer fusedMu.Unlock()
	if fn == nil {
		panic("ops: RegisterFused " + kind + " with nil func")
	}
	if _, dup := fusedReg[kind]; dup {
		panic("ops: RegisterFused called twice for " + kind)
	}
	fusedReg[kind] = fn
}

// LookupFused returns the kernel registered for fused ops of kind.
func LookupFused(kind string) (FusedFunc, bool) {
	fusedMu.RLock()
	defer fusedMu.RUnlock()
	fn, ok := fusedReg[kind]
	return fn, ok
}

// String names g's kind and members, for errors and logs.
func (g *Group) String() string {
	s := g.Kind + "["
	for i, c := range g.Calls {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d:%s", c.Index, c.Name)
	}
	return s + "]"
}
