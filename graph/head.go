package graph

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// A decoder's logits are only ever looked at to pick the next token, and
// at temperature 0 that pick is an argmax. A Head computes it where the
// logits are, after the graph's dispatches in the same submission, so
// that a step reads back 4 bytes instead of the vocabulary's logits. With
// a token input named, the pick also feeds the next step: that step's
// submission starts by copying it into the token input, so the host can
// submit step t+1 before it has read step t's token (pipelining), and a
// stop token or the cache's end is honoured when the host reads the
// token: a step submitted past a stop only writes cache rows that the
// next sequence overwrites before attention reads them.
//
// The pick lands in a buffer of the head's own, not in the token input:
// under the exporter's memory plan the input may share its buffer with
// the logits or another output, and the copy into it must come after the
// next step's host writes (queue order gives that: writes made before a
// submission land before it).

// headRing is how many submitted steps may await their read-back at once:
// one running while the host reads the previous one.
const headRing = 2

// argmaxWG is the argmax kernel's workgroup size: one workgroup scans the
// row (a vocabulary of 32,000 to 128,256 logits).
const argmaxWG = 256

// argmaxParams is the Go twin of argmax.wgsl's Params.
type argmaxParams struct {
	Base, N, _, _ uint32
}

// argmaxVariant is argmax.wgsl's template data.
type argmaxVariant struct {
	WG      int
	Strides []int
}

// HeadOptions choose a Head's logits and token feedback.
type HeadOptions struct {
	// Logits is the output index of the logits, [..., rows, vocab]; the
	// head picks from the last live row.
	Logits int
	// Token is the input index of the token ids, [1, S] int32 (or int64
	// narrowed to int32), that a fed step takes from the previous step's
	// pick; -1 for none (every step's tokens come from the host).
	Token int
}

// Head picks the next token on the device after each step of a decoder
// graph (see the comment above). It is not safe for concurrent use; the
// graph's Execute may be called meanwhile (it waits for its own
// submission only).
type Head struct {
	g       *WebGPUGraph
	opts    HeadOptions
	vocab   int64
	pipe    *gpu.Pipeline
	result  *gpu.Buffer // the pick, u32
	params  *gpu.Buffer
	last    argmaxParams // params as last written
	written bool
	group   *gpu.BindGroup
	bound   *gpu.Buffer // the logits buffer group binds
	staging [headRing]*gpu.Buffer
	progs   [headRing]*gpu.Program
	gen     int // g.rerecords the programs were built for; -1 none
	next    int // the ring slot of the next submission
	seq     uint64
	waiting [headRing]uint64 // per slot: the sequence submitted into it, 0 when none
	records []gpu.Dispatch
	closed  bool
}

// HeadStep is a submitted step whose pick Wait returns.
type HeadStep struct {
	slot int
	seq  uint64
}

// NewHead makes a Head for the graph's output o.Logits (a float32 tensor)
// and, when o.Token >= 0, its input o.Token (an int32 tensor on the
// device that no op reads on the host). Other graphs get an error
// wrapping ErrUnsupported.
func (g *WebGPUGraph) NewHead(o HeadOptions) (*Head, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	if o.Logits < 0 || o.Logits >= len(g.outputs) {
		return nil, fmt.Errorf("graph: head: %w: output %d of %d", ErrUnsupported, o.Logits, len(g.outputs))
	}
	lt := g.tensors[g.outputs[o.Logits].id]
	if lt == nil || lt.dtype != serialization.Float32 || len(lt.dims) == 0 || lt.dims[len(lt.dims)-1] <= 0 {
		return nil, fmt.Errorf("graph: head: %w: output %d is not a float32 tensor of logits", ErrUnsupported, o.Logits)
	}
	if o.Token >= len(g.inputs) || o.Token < -1 {
		return nil, fmt.Errorf("graph: head: %w: input %d of %d", ErrUnsupported, o.Token, len(g.inputs))
	}
	if o.Token >= 0 {
		id := g.inputs[o.Token]
		tt := g.tensors[id]
		if tt == nil || tt.dtype != serialization.Int32 || g.hostRead[id] {
			return nil, fmt.Errorf("graph: head: %w: input %d is not an int32 token tensor read only on the device", ErrUnsupported, o.Token)
		}
	}
	v := argmaxVariant{WG: argmaxWG}
	for s := argmaxWG / 2; s >= 1; s /= 2 {
		v.Strides = append(v.Strides, s)
	}
	k, err := shaders.Render("argmax.wgsl", v, "main", shaders.Layout(1, 1, true), argmaxWG)
	if err != nil {
		return nil, fmt.Errorf("graph: head: %w", err)
	}
	h := &Head{g: g, opts: o, vocab: lt.dims[len(lt.dims)-1], gen: -1}
	if h.pipe, err = g.dev.Pipeline(k.Name, k.Source, k.Entry, k.Layout); err != nil {
		return nil, fmt.Errorf("graph: head: %w", err)
	}
	if h.result, err = g.dev.NewBuffer(gpu.Storage, 16, "head result"); err != nil {
		return nil, fmt.Errorf("graph: head: %w", err)
	}
	if h.params, err = g.dev.NewBuffer(gpu.UniformBuf, 16, "head params"); err != nil {
		h.release()
		return nil, fmt.Errorf("graph: head: %w", err)
	}
	for i := range h.staging {
		if h.staging[i], err = g.dev.NewBuffer(gpu.Staging, 16, "head read-back"); err != nil {
			h.release()
			return nil, fmt.Errorf("graph: head: %w", err)
		}
	}
	g.heads = append(g.heads, h)
	return h, nil
}

// Dispatches is how many dispatches the head adds to a step.
func (h *Head) Dispatches() int { return 1 }

// Submit runs one step like Execute, with the head's pick after it, and
// returns without waiting. With fed set, the token input's data in inputs
// is not uploaded: the step takes the token the previous submission
// picked (the token input must then be one token, shape [1, 1]). Up to
// headRing submissions may be outstanding: Wait for the oldest first.
func (h *Head) Submit(ctx context.Context, inputs []Tensor, fed bool) (HeadStep, error) {
	g := h.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || h.closed {
		return HeadStep{}, ErrClosed
	}
	if fed && h.opts.Token < 0 {
		return HeadStep{}, fmt.Errorf("graph: head: %w: a fed step needs a token input", ErrUnsupported)
	}
	if h.waiting[h.next] != 0 {
		return HeadStep{}, fmt.Errorf("graph: head: %d steps already await Wait", headRing)
	}
	if len(inputs) != len(g.inputs) {
		return HeadStep{}, &InputError{Index: -1, Msg: fmt.Sprintf("graph takes %d inputs, got %d", len(g.inputs), len(inputs))}
	}
	if fed && Numel(inputs[h.opts.Token].Shape) != 1 {
		return HeadStep{}, &InputError{Index: h.opts.Token, Msg: fmt.Sprintf("a fed step takes one token, got shape %v", inputs[h.opts.Token].Shape)}
	}
	if err := g.prepare(ctx, inputs); err != nil {
		return HeadStep{}, err
	}
	for i, in := range inputs {
		ts := g.tensors[g.inputs[i]]
		if ts == nil || (fed && i == h.opts.Token) {
			continue
		}
		data, err := g.hostToDevice(i, in, ts)
		if err != nil {
			return HeadStep{}, err
		}
		if len(data) == 0 {
			continue
		}
		if err := g.dev.Write(ts.buf, 0, data); err != nil {
			return HeadStep{}, fmt.Errorf("graph: input %d: %w", i, err)
		}
	}
	if err := h.refreshLocked(); err != nil {
		return HeadStep{}, err
	}
	lt := g.tensors[g.outputs[h.opts.Logits].id]
	rows := lt.liveNumel / h.vocab
	if rows <= 0 || lt.live[len(lt.live)-1] != h.vocab {
		return HeadStep{}, fmt.Errorf("graph: head: %w: logits of live shape %v", ErrInvalidGraph, lt.live)
	}
	p := argmaxParams{Base: uint32((rows - 1) * h.vocab), N: uint32(h.vocab)}
	if !h.written || p != h.last {
		var b [16]byte
		binary.LittleEndian.PutUint32(b[0:], p.Base)
		binary.LittleEndian.PutUint32(b[4:], p.N)
		if err := g.dev.Write(h.params, 0, b[:]); err != nil {
			return HeadStep{}, fmt.Errorf("graph: head: %w", err)
		}
		h.last, h.written = p, true
	}
	prog := h.progs[h.next]
	if fed {
		prog.SetPre([]gpu.Copy{{Src: h.result, Dst: g.tensors[g.inputs[h.opts.Token]].buf, Size: 4}})
	} else {
		prog.SetPre(nil)
	}
	if err := prog.Submit(); err != nil {
		return HeadStep{}, fmt.Errorf("graph: head: %w", err)
	}
	h.seq++
	pd := HeadStep{slot: h.next, seq: h.seq}
	h.waiting[h.next] = h.seq
	h.next = (h.next + 1) % headRing
	return pd, nil
}

// refreshLocked rebuilds the bind group and the programs when the graph
// was re-recorded since (the records, and the logits' buffer, may have
// changed). The caller holds g.mu.
func (h *Head) refreshLocked() error {
	g := h.g
	lbuf := g.tensors[g.outputs[h.opts.Logits].id].buf
	if h.gen == g.rerecords && h.bound == lbuf {
		return nil
	}
	if lbuf == nil {
		return fmt.Errorf("graph: head: %w: the logits have no buffer", ErrInvalidGraph)
	}
	if h.bound != lbuf {
		bg, err := g.dev.NewBindGroup(h.pipe, []gpu.BindEntry{{Buf: lbuf}, {Buf: h.result}, {Buf: h.params}}, "head argmax")
		if err != nil {
			return fmt.Errorf("graph: head: %w", err)
		}
		if h.group != nil {
			h.group.Release()
		}
		h.group, h.bound = bg, lbuf
	}
	h.records = append(append(h.records[:0], g.records...), gpu.Dispatch{Pipeline: h.pipe, Group: h.group, X: 1, Y: 1, Z: 1})
	for i := range h.progs {
		reads := []gpu.Readback{{Src: h.result, Dst: h.staging[i], Size: 4}}
		if h.progs[i] == nil {
			h.progs[i] = g.dev.Prepare(h.records, reads)
		} else {
			h.progs[i].Set(h.records, reads)
		}
	}
	h.gen = g.rerecords
	return nil
}

// Wait waits for p's step and returns the token it picked.
func (h *Head) Wait(ctx context.Context, p HeadStep) (int32, error) {
	if p.seq == 0 || p.slot < 0 || p.slot >= headRing || h.waiting[p.slot] != p.seq {
		return -1, errors.New("graph: head: Wait for a step that is not pending")
	}
	st := h.staging[p.slot]
	if err := h.g.dev.WaitMapped(ctx, []gpu.Readback{{Src: h.result, Dst: st, Size: 4}}); err != nil {
		return -1, fmt.Errorf("graph: head: %w", err)
	}
	h.waiting[p.slot] = 0
	m, err := st.Mapped()
	if err != nil {
		return -1, fmt.Errorf("graph: head: %w", err)
	}
	tok := int32(binary.LittleEndian.Uint32(m))
	if err := st.Unmap(); err != nil {
		return -1, fmt.Errorf("graph: head: %w", err)
	}
	if tok < 0 || int64(tok) >= h.vocab {
		return -1, fmt.Errorf("graph: head: %w: picked token %d of a %d-token vocabulary", ErrInvalidGraph, tok, h.vocab)
	}
	return tok, nil
}

// Close releases the head's GPU objects (closing the graph closes its
// heads too). Steps still pending are abandoned: their maps settle when
// the buffers are released.
func (h *Head) Close() error {
	g := h.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	h.release()
	g.heads = slices.DeleteFunc(g.heads, func(x *Head) bool { return x == h })
	return nil
}

func (h *Head) release() {
	if h.group != nil {
		h.group.Release()
	}
	for _, b := range append([]*gpu.Buffer{h.result, h.params}, h.staging[:]...) {
		if b != nil {
			b.Release()
		}
	}
}
