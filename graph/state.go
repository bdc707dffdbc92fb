package graph

import (
	"errors"
	"fmt"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
)

// A graph's mutable state is what one Execute leaves for the next: the
// buffers its ops write in place (ops.WritesArgs), a decoder's KV caches.
// Several sequences can share one graph's weights by swapping that state:
// the graph's buffers hold the running sequence's, and a switch copies
// them into a StateStore (SaveState) and another sequence's back
// (RestoreState). Both are buffer copies queued on the device, in order
// with the graph's steps, so a step submitted before a save is in what it
// saves and a step submitted after a restore sees the restored state.
//
// A KV cache [1, S, H, D] written by update_cache or sdpa_with_kv_cache
// is position-major: positions [0, p) are its first p·H·D elements, so a
// sequence at position p needs only that prefix copied (the rows past it
// are written before attention reads them). That holds for a half KV
// cache too (ops.Config.HalfKVCache): its halves keep the float32
// element order, two to a word, and H·D is even. State of any other
// shape, or written by any other op, is copied whole.

// StateTensor describes one tensor of a graph's mutable state.
type StateTensor struct {
	// Value is the value id the graph's ops write (the cache argument of
	// a KV-cache op).
	Value int32
	// Bytes is the size of its buffer on the device.
	Bytes int64
	// RowBytes, when non-zero, is the bytes of one position: positions
	// [0, n) are the buffer's first n·RowBytes bytes. Zero when the
	// tensor is not position-major: it is copied whole.
	RowBytes int64
	// Positions is how many positions it holds (RowBytes·Positions <=
	// Bytes); zero when it is not position-major.
	Positions int64
	// Half: a KV cache held as packed halves.
	Half bool
}

// PrefixBytes is how many bytes of the tensor hold positions [0, n): the
// whole buffer when it is not position-major.
func (s StateTensor) PrefixBytes(n int64) int64 {
	if s.RowBytes == 0 {
		return s.Bytes
	}
	n = min(max(n, 0), s.Positions)
	return n * s.RowBytes
}

// stateEntry is a state tensor with its buffer (nil until the op that
// makes its writable copy has recorded).
type stateEntry struct {
	StateTensor
	buf *gpu.Buffer
}

// StateTensors lists the graph's mutable state, in the order of the ops
// that first write each tensor. A graph without state returns nil.
func (g *WebGPUGraph) StateTensors() []StateTensor {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []StateTensor
	for _, e := range g.stateLocked() {
		out = append(out, e.StateTensor)
	}
	return out
}

// stateLocked finds the state tensors and their buffers. The caller holds
// g.mu. A cache argument resolves as the cache ops resolve it (ops
// kvCache): its half KV buffer, else the writable copy of a constant,
// else the tensor itself (an et_vk.prepack output).
func (g *WebGPUGraph) stateLocked() []stateEntry {
	var out []stateEntry
	index := map[int32]int{} // tensor id -> index in out
	for _, op := range g.graph.Chain {
		writes := ops.WritesArgs(op.Name)
		for _, a := range writes {
			if a >= len(op.Args) {
				continue
			}
			id := op.Args[a]
			if id < 0 || int(id) >= len(g.tensors) || g.tensors[id] == nil {
				continue
			}
			ts := g.tensors[id]
			e := stateEntry{StateTensor: StateTensor{Value: id}}
			tid := id
			switch vid, half := g.halfKV[id]; {
			case half:
				tid, e.Half = vid, true
			case ts.constant:
				if vid, ok := g.persistent[id]; ok {
					tid = vid
				} else {
					tid = -1 // its copy is made when the op records
				}
			}
			elem := int64(4)
			if tid >= 0 {
				st := g.tensors[tid]
				e.buf = st.buf
				e.Bytes = int64(gpu.AlignedSize(uint64(st.nbytes)))
				if st.buf != nil {
					e.Bytes = int64(st.buf.Size())
				}
			} else {
				e.Bytes = int64(gpu.AlignedSize(uint64(ts.nbytes)))
			}
			if e.Half {
				elem = 2
			}
			// [1, S, H, D] float32 (or halves) written by a cache op:
			// position-major.
			if d := ts.dims; len(d) == 4 && d[0] == 1 && ts.dtype.Size() == 4 && isCacheOp(op.Name) {
				row := d[2] * d[3] * elem
				if row > 0 && row%4 == 0 && row*d[1] <= e.Bytes {
					e.RowBytes, e.Positions = row, d[1]
				}
			}
			key := tid
			if tid < 0 {
				key = -1 - id // not yet copied: keyed by the constant
			}
			if i, ok := index[key]; ok {
				// Written by several ops: position-major only if they agree.
				if p := &out[i]; p.RowBytes != e.RowBytes || p.Positions != e.Positions {
					p.RowBytes, p.Positions = 0, 0
				}
				continue
			}
			index[key] = len(out)
			out = append(out, e)
		}
	}
	return out
}

// isCacheOp reports whether op writes its cache arguments at rows
// input_pos.. of a [B, S, H, D] cache, reading only rows below those it
// writes.
func isCacheOp(op string) bool {
	return op == "update_cache.default" || op == "sdpa_with_kv_cache.default"
}

// StateStore holds one copy of a graph's mutable state in buffers of its
// own (NewStateStore), for SaveState and RestoreState. Release frees them.
type StateStore struct {
	g     *WebGPUGraph
	bufs  []*gpu.Buffer
	bytes int64
	prog  *gpu.Program
}

// ErrStateStore: a StateStore used with a graph it was not made for, or
// after Release.
var ErrStateStore = errors.New("graph: state store of another graph, or released")

// NewStateStore allocates a StateStore for the graph's state: one buffer
// per StateTensors entry, of its size.
func (g *WebGPUGraph) NewStateStore() (*StateStore, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	s := &StateStore{g: g}
	for i, e := range g.stateLocked() {
		b, err := g.dev.NewBuffer(gpu.Storage, uint64(e.Bytes), fmt.Sprintf("state store %d", i))
		if err != nil {
			s.Release()
			return nil, fmt.Errorf("graph: state store: %w", err)
		}
		s.bufs = append(s.bufs, b)
		s.bytes += int64(b.Size())
	}
	return s, nil
}

// Bytes is the device memory the store holds.
func (s *StateStore) Bytes() int64 {
	if s == nil {
		return 0
	}
	return s.bytes
}

// Buffers is how many buffers the store holds (0 once released).
func (s *StateStore) Buffers() int {
	if s == nil {
		return 0
	}
	return len(s.bufs)
}

// Release frees the store's buffers; copies already queued into or out
// of them still complete. It is idempotent. The caller must not use the
// store concurrently with Release.
func (s *StateStore) Release() {
	if s == nil {
		return
	}
	for _, b := range s.bufs {
		b.Release()
	}
	s.bufs, s.bytes = nil, 0
}

// SaveState queues copies of the graph's state for positions [0, n) into
// s (the whole of each tensor that is not position-major) and returns the
// bytes it copies. It does not wait: the copies run after every step
// already submitted and before any submitted later.
func (g *WebGPUGraph) SaveState(s *StateStore, n int64) (int64, error) {
	return g.copyState(s, n, true)
}

// RestoreState queues copies of positions [0, n) of the state s holds
// into the graph's state buffers (see SaveState). Positions at or past n
// keep what they held: a sequence at position n overwrites them before
// attention reads them.
func (g *WebGPUGraph) RestoreState(s *StateStore, n int64) (int64, error) {
	return g.copyState(s, n, false)
}

// CopyStateStore queues copies of positions [0, n) of src into dst, both
// stores of g (forking a sequence that is not in the graph's buffers).
func (g *WebGPUGraph) CopyStateStore(dst, src *StateStore, n int64) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, ErrClosed
	}
	st := g.stateLocked()
	if err := g.checkStore(dst, st); err != nil {
		return 0, err
	}
	if err := g.checkStore(src, st); err != nil {
		return 0, err
	}
	var copies []gpu.Copy
	var total int64
	for i, e := range st {
		if b := e.PrefixBytes(n); b > 0 {
			copies = append(copies, gpu.Copy{Src: src.bufs[i], Dst: dst.bufs[i], Size: uint64(b)})
			total += b
		}
	}
	return total, g.submitCopies(dst, copies)
}

func (g *WebGPUGraph) copyState(s *StateStore, n int64, save bool) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, ErrClosed
	}
	st := g.stateLocked()
	if err := g.checkStore(s, st); err != nil {
		return 0, err
	}
	var copies []gpu.Copy
	var total int64
	for i, e := range st {
		b := e.PrefixBytes(n)
		if b == 0 {
			continue
		}
		if e.buf == nil {
			return 0, fmt.Errorf("graph: state: %w: state value %d has no buffer before the op that writes it has recorded", ErrInvalidGraph, e.Value)
		}
		c := gpu.Copy{Src: e.buf, Dst: s.bufs[i], Size: uint64(b)}
		if !save {
			c.Src, c.Dst = c.Dst, c.Src
		}
		copies = append(copies, c)
		total += b
	}
	return total, g.submitCopies(s, copies)
}

// checkStore checks that s was made for the state st.
func (g *WebGPUGraph) checkStore(s *StateStore, st []stateEntry) error {
	if s == nil || s.g != g || len(s.bufs) != len(st) {
		return ErrStateStore
	}
	for i, e := range st {
		if int64(s.bufs[i].Size()) < e.Bytes {
			return ErrStateStore
		}
	}
	return nil
}

// submitCopies submits copies as one command buffer without waiting. The
// caller holds g.mu.
func (g *WebGPUGraph) submitCopies(s *StateStore, copies []gpu.Copy) error {
	if len(copies) == 0 {
		return nil
	}
	if s.prog == nil {
		s.prog = g.dev.Prepare(nil, nil)
	}
	s.prog.SetPre(copies)
	err := s.prog.Submit()
	s.prog.SetPre(nil)
	if err != nil {
		return fmt.Errorf("graph: state copy: %w", err)
	}
	return nil
}
