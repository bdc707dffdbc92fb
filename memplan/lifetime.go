package memplan

import (
	"cmp"
	"fmt"
	"slices"
)

// Span is a tensor's lifetime: the first and the last step that touches it,
// both inclusive. A step is an op of the chain (for the exporter's plan) or
// a recorded dispatch (for Place). Two tensors whose spans overlap, even in
// a single step, must not share a buffer: a step that reads one and writes
// the other would bind one buffer twice, one of them writable.
type Span struct{ First, Last int }

// Overlaps reports whether s and t share a step.
func (s Span) Overlaps(t Span) bool { return s.First <= t.Last && t.First <= s.Last }

// Interval is one tensor to plan: its id, its byte size and its span.
type Interval struct {
	ID    int32
	Bytes int64
	Span
}

// Greedy assigns shared objects the way ExecuTorch's greedy planner does
// with allow_overlapping_allocations=False (exir/memory_planning.py, the
// planner the Vulkan exporter runs): tensors in descending size (ties by
// ascending id, where the exporter's order depends on a set), each into the
// first object, in creation order, that holds no tensor whose span overlaps
// its own, else into a new object sized to it. It returns each tensor's
// object and the objects' sizes (indexed by object id).
func Greedy(ts []Interval) (obj map[int32]int32, sizes []int64) {
	order := slices.Clone(ts)
	slices.SortStableFunc(order, func(a, b Interval) int {
		if c := cmp.Compare(b.Bytes, a.Bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	obj = make(map[int32]int32, len(ts))
	var users [][]Span
	for _, t := range order {
		picked := -1
		for o, us := range users {
			if !slices.ContainsFunc(us, t.Span.Overlaps) {
				picked = o
				break
			}
		}
		if picked < 0 {
			picked = len(users)
			users = append(users, nil)
			sizes = append(sizes, t.Bytes)
		}
		users[picked] = append(users[picked], t.Span)
		obj[t.ID] = int32(picked)
	}
	return obj, sizes
}

// Use is a transient tensor (one the exporter placed in a shared object)
// as a recording uses it.
type Use struct {
	ID    int32
	Bytes int64 // its allocation size
	// Span is the first and the last dispatch that binds it (a graph input
	// starts before the first dispatch, a graph output ends after the
	// last); meaningful only when Used.
	Span
	Used bool
	// Object is the shared object the exporter gave it (its mem_obj_id).
	Object int32
}

// Binding is the result of Place.
type Binding struct {
	// Object maps each tensor to the object it is bound to: one of the pool
	// or one of Extra.
	Object map[int32]int32
	// Extra holds the objects Place had to add to the pool, with their
	// sizes; empty when the pool was enough.
	Extra map[int32]int64
	// Moved counts the used tensors bound elsewhere than their Object.
	Moved int
}

// ExtraBytes is the total size of b.Extra.
func (b Binding) ExtraBytes() int64 {
	var n int64
	for _, s := range b.Extra {
		n += s
	}
	return n
}

// Place binds transient tensors to the buffers of pool (object id ->
// size) from the lifetimes a recording gives them, so that no two tensors
// whose spans overlap share a buffer. Tensors are taken in order of their
// first dispatch; each goes to its own Object when that is free for its
// whole span and large enough, else to the smallest free object that fits
// (lowest id on ties), else to a new object of its size (Extra, numbered
// after the largest pool id). When the exporter's assignment has no
// conflict under these lifetimes (no record-time rewrite changed who
// writes what), Place returns it unchanged. A tensor no dispatch binds
// stays with its Object without occupying it.
//
// Taking tensors by first use makes "free for the whole span" a check of
// the last use of each object's occupants, and on a chain the greedy choice
// is optimal for equal sizes (interval graphs are perfect): fusion only
// removes tensors and merges adjacent steps, so the exporter's objects are
// enough for the chains it makes.
func Place(uses []Use, pool map[int32]int64) (Binding, error) {
	b := Binding{Object: make(map[int32]int32, len(uses)), Extra: map[int32]int64{}}
	size := make(map[int32]int64, len(pool))
	next := int32(0)
	for id, s := range pool {
		size[id] = s
		next = max(next, id+1)
	}
	ids := make([]int32, 0, len(pool))
	for id := range pool {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	busy := map[int32]int{} // object -> last span end of its occupants
	order := make([]Use, 0, len(uses))
	for _, u := range uses {
		if u.Bytes < 0 || (u.Used && u.First > u.Last) {
			return Binding{}, fmt.Errorf("memplan: tensor %d: bad use %+v", u.ID, u)
		}
		if _, dup := b.Object[u.ID]; dup {
			return Binding{}, fmt.Errorf("memplan: tensor %d placed twice", u.ID)
		}
		b.Object[u.ID] = u.Object
		if u.Used {
			order = append(order, u)
		}
	}
	slices.SortStableFunc(order, func(x, y Use) int {
		if c := cmp.Compare(x.First, y.First); c != 0 {
			return c
		}
		if c := cmp.Compare(y.Bytes, x.Bytes); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
	free := func(o int32, s Span) bool {
		last, ok := busy[o]
		return !ok || last < s.First
	}
	for _, u := range order {
		pick, ok := u.Object, false
		if s, inPool := size[u.Object]; inPool && s >= u.Bytes && free(u.Object, u.Span) {
			ok = true
		} else {
			for _, o := range ids {
				if size[o] >= u.Bytes && free(o, u.Span) && (!ok || size[o] < size[pick]) {
					pick, ok = o, true
				}
			}
		}
		if !ok {
			pick = next
			next++
			size[pick] = u.Bytes
			ids = append(ids, pick)
			b.Extra[pick] = u.Bytes
		}
		if pick != u.Object {
			b.Moved++
		}
		b.Object[u.ID] = pick
		if last, seen := busy[pick]; !seen || u.Last > last {
			busy[pick] = u.Last
		}
	}
	return b, nil
}
