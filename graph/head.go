package graph

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// A decoder's logits are only ever looked at to pick the next token. A
// Head does what the pick needs where the logits are, after the graph's
// dispatches in the same submission, so that a step reads back a few
// bytes instead of the vocabulary's logits:
//
//   - at temperature 0 the pick itself, an argmax (argmax.wgsl), 4 bytes.
//     With a token input named, the pick also feeds the next step: that
//     step's submission starts by copying it into the token input, so the
//     host can submit step t+1 before it has read step t's token
//     (pipelining), and a stop token or the cache's end is honoured when
//     the host reads the token: a step submitted past a stop only writes
//     cache rows that the next sequence overwrites before attention reads
//     them;
//   - for sampling, the k largest logits with the row's maximum and its
//     softmax normalizer at the sampler's temperature (topk.wgsl), from
//     which a top-k, top-p or min-p sampler picks exactly when what it
//     keeps lies among them; otherwise Logits reads the row back.
//
// The pick lands in a buffer of the head's own, not in the token input:
// under the exporter's memory plan the input may share its buffer with
// the logits or another output, and the copy into it must come after the
// next step's host writes (queue order gives that: writes made before a
// submission land before it).

// headRing is how many submitted steps may await their read-back at once:
// one running while the host reads the previous one.
const headRing = 2

// headWG is the head kernels' workgroup size: one workgroup scans the row
// (a vocabulary of 32,000 to 128,256 logits).
const headWG = 256

// argmaxParams is the Go twin of argmax.wgsl's Params (16 bytes).
type argmaxParams struct {
	Base, N uint32
	_       [2]uint32
}

// topkParams is the Go twin of topk.wgsl's Params (32 bytes).
type topkParams struct {
	Base, N, K, Cap uint32
	InvTemp         float32
	_               [3]uint32
}

// headParamsSize is the bytes each head kernel binds of the params buffer:
// the larger of the two structs.
const headParamsSize = 32

// MaxTopK is the largest StepOptions.TopK. The read-back holds topkSlack
// more pairs than k, for ties at the k-th largest logit.
const (
	MaxTopK   = 256
	topkSlack = 64
	topkCap   = MaxTopK + topkSlack
	topkBytes = 4 * (8 + 2*topkCap)
)

// headVariant is the head kernels' template data.
type headVariant struct {
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

// StepOptions are what one submitted step asks of the head.
type StepOptions struct {
	// Fed takes the step's token from the previous submission's pick
	// instead of uploading the token input (which must then be one
	// token).
	Fed bool
	// TopK, 1..MaxTopK, also reads back the TopK largest logits with the
	// row's maximum and softmax normalizer at Temperature (> 0); 0 reads
	// back the greedy pick only.
	TopK        int
	Temperature float64
}

// TopLogit is one of the largest logits of a step.
type TopLogit struct {
	Token int32
	Logit float32
}

// HeadResult is what a step's head computed.
type HeadResult struct {
	// Token is the greedy pick: the first largest logit (a NaN never
	// picked unless all are).
	Token int32
	// Top holds the StepOptions.TopK largest logits, largest first, ties
	// by token, as the host's sort orders them; nil when TopK was 0 or the
	// ties at the k-th largest overflowed the read-back (then read the
	// row with Logits).
	Top []TopLogit
	// Max is the row's largest logit; SumExp the sum over the row of
	// exp((logit-Max)/Temperature), NaN logits left out (computed in
	// float32 on the device).
	Max    float32
	SumExp float64
}

// Head picks the next token on the device after each step of a decoder
// graph (see the comment above). It is not safe for concurrent use; the
// graph's Execute may be called meanwhile (it waits for its own
// submission only).
type Head struct {
	g      *WebGPUGraph
	opts   HeadOptions
	vocab  int64
	argmax *gpu.Pipeline
	topk   *gpu.Pipeline
	result *gpu.Buffer             // the pick, u32
	tops   *gpu.Buffer             // topk.wgsl's out
	params *gpu.Buffer             // argmax params at 0, topk params at 256
	last   [2][headParamsSize]byte // params as last written
	wrote  [2]bool
	groups [2]*gpu.BindGroup
	bound  *gpu.Buffer // the logits buffer the groups bind
	// Per ring slot: the read-back staging buffers and the programs, for
	// steps with and without top-k.
	staging [headRing][2]*gpu.Buffer
	progs   [headRing][2]*gpu.Program
	gen     int // g.rerecords the programs were built for; -1 none
	next    int // the ring slot of the next submission
	seq     uint64
	waiting [headRing]stepState
	records []gpu.Dispatch
	closed  bool
}

// stepState is what one ring slot's submission asked for.
type stepState struct {
	seq  uint64 // 0: no step pending in the slot
	topK int
}

// HeadStep is a submitted step whose result Wait returns.
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
	h := &Head{g: g, opts: o, vocab: lt.dims[len(lt.dims)-1], gen: -1}
	if err := h.create(); err != nil {
		h.release()
		return nil, fmt.Errorf("graph: head: %w", err)
	}
	g.heads = append(g.heads, h)
	return h, nil
}

// create makes the head's pipelines and buffers.
func (h *Head) create() error {
	dev := h.g.dev
	v := headVariant{WG: headWG}
	for s := headWG / 2; s >= 1; s /= 2 {
		v.Strides = append(v.Strides, s)
	}
	for i, file := range []string{"argmax.wgsl", "topk.wgsl"} {
		k, err := shaders.Render(file, v, "main", shaders.Layout(1, 1, true), headWG)
		if err != nil {
			return err
		}
		p, err := dev.Pipeline(k.Name, k.Source, k.Entry, k.Layout)
		if err != nil {
			return err
		}
		if i == 0 {
			h.argmax = p
		} else {
			h.topk = p
		}
	}
	var err error
	if h.result, err = dev.NewBuffer(gpu.Storage, 16, "head pick"); err != nil {
		return err
	}
	if h.tops, err = dev.NewBuffer(gpu.Storage, topkBytes, "head top-k"); err != nil {
		return err
	}
	if h.params, err = dev.NewBuffer(gpu.UniformBuf, 512, "head params"); err != nil {
		return err
	}
	for i := range h.staging {
		if h.staging[i][0], err = dev.NewBuffer(gpu.Staging, 16, "head pick read-back"); err != nil {
			return err
		}
		if h.staging[i][1], err = dev.NewBuffer(gpu.Staging, topkBytes, "head top-k read-back"); err != nil {
			return err
		}
	}
	return nil
}

// Dispatches is how many dispatches the head adds to a step without
// top-k (one more with).
func (h *Head) Dispatches() int { return 1 }

// Submit runs one step like Execute, with the head's work after it, and
// returns without waiting. Up to two submissions may be outstanding:
// Wait for the oldest first.
func (h *Head) Submit(ctx context.Context, inputs []Tensor, o StepOptions) (HeadStep, error) {
	g := h.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || h.closed {
		return HeadStep{}, ErrClosed
	}
	if o.Fed && h.opts.Token < 0 {
		return HeadStep{}, fmt.Errorf("graph: head: %w: a fed step needs a token input", ErrUnsupported)
	}
	if o.TopK < 0 || o.TopK > MaxTopK || (o.TopK > 0 && !(o.Temperature > 0 && o.Temperature <= math.MaxFloat32)) {
		return HeadStep{}, fmt.Errorf("graph: head: %w: top-k %d at temperature %v (top-k 0..%d, temperature > 0)", ErrUnsupported, o.TopK, o.Temperature, MaxTopK)
	}
	if h.waiting[h.next].seq != 0 {
		return HeadStep{}, fmt.Errorf("graph: head: %d steps already await Wait", headRing)
	}
	if len(inputs) != len(g.inputs) {
		return HeadStep{}, &InputError{Index: -1, Msg: fmt.Sprintf("graph takes %d inputs, got %d", len(g.inputs), len(inputs))}
	}
	if o.Fed && Numel(inputs[h.opts.Token].Shape) != 1 {
		return HeadStep{}, &InputError{Index: h.opts.Token, Msg: fmt.Sprintf("a fed step takes one token, got shape %v", inputs[h.opts.Token].Shape)}
	}
	skip := -1
	if o.Fed {
		skip = h.opts.Token
	}
	if err := g.upload(ctx, inputs, skip); err != nil {
		return HeadStep{}, err
	}
	if err := h.refreshLocked(); err != nil {
		return HeadStep{}, err
	}
	lt := g.tensors[g.outputs[h.opts.Logits].id]
	rows := lt.liveNumel / h.vocab
	if rows <= 0 || lt.live[len(lt.live)-1] != h.vocab {
		return HeadStep{}, fmt.Errorf("graph: head: %w: logits of live shape %v", ErrInvalidGraph, lt.live)
	}
	base := uint32((rows - 1) * h.vocab)
	if err := h.writeParams(0, uniformBytes(argmaxParams{Base: base, N: uint32(h.vocab)})); err != nil {
		return HeadStep{}, err
	}
	top := 0
	if o.TopK > 0 {
		top = 1
		p := topkParams{Base: base, N: uint32(h.vocab), K: uint32(min(int64(o.TopK), h.vocab)), Cap: topkCap, InvTemp: float32(1 / o.Temperature)}
		if err := h.writeParams(1, uniformBytes(p)); err != nil {
			return HeadStep{}, err
		}
	}
	prog := h.progs[h.next][top]
	if o.Fed {
		prog.SetPre([]gpu.Copy{{Src: h.result, Dst: g.tensors[g.inputs[h.opts.Token]].buf, Size: 4}})
	} else {
		prog.SetPre(nil)
	}
	if err := prog.Submit(); err != nil {
		return HeadStep{}, fmt.Errorf("graph: head: %w", err)
	}
	h.seq++
	st := HeadStep{slot: h.next, seq: h.seq}
	h.waiting[h.next] = stepState{seq: h.seq, topK: o.TopK}
	h.next = (h.next + 1) % headRing
	return st, nil
}

// writeParams writes kernel i's params p (at most headParamsSize bytes,
// at offset 256·i) when they changed: queue writes land before the next
// submission, after the previous ones.
func (h *Head) writeParams(i int, p []byte) error {
	var b [headParamsSize]byte
	copy(b[:], p)
	if h.wrote[i] && b == h.last[i] {
		return nil
	}
	if err := h.g.dev.Write(h.params, uint64(256*i), b[:]); err != nil {
		return fmt.Errorf("graph: head: %w", err)
	}
	h.last[i], h.wrote[i] = b, true
	return nil
}

// uniformBytes packs p, a Go twin of a WGSL uniform struct (fixed-size
// fields only, explicit padding), little-endian as WGSL lays it out.
func uniformBytes(p any) []byte {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, p); err != nil {
		panic(err) // a programming error: a field of no fixed size
	}
	return buf.Bytes()
}

// refreshLocked rebuilds the bind groups and the programs when the graph
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
		for i, k := range []struct {
			pipe *gpu.Pipeline
			out  *gpu.Buffer
		}{{h.argmax, h.result}, {h.topk, h.tops}} {
			bg, err := g.dev.NewBindGroup(k.pipe, []gpu.BindEntry{{Buf: lbuf}, {Buf: k.out}, {Buf: h.params, Offset: uint64(256 * i), Size: headParamsSize}}, "head")
			if err != nil {
				return fmt.Errorf("graph: head: %w", err)
			}
			if h.groups[i] != nil {
				h.groups[i].Release()
			}
			h.groups[i] = bg
		}
		h.bound = lbuf
	}
	pick := gpu.Dispatch{Pipeline: h.argmax, Group: h.groups[0], X: 1, Y: 1, Z: 1}
	tops := gpu.Dispatch{Pipeline: h.topk, Group: h.groups[1], X: 1, Y: 1, Z: 1}
	for i := range h.progs {
		for top := range 2 {
			h.records = append(append(h.records[:0], g.records...), pick)
			reads := []gpu.Readback{{Src: h.result, Dst: h.staging[i][0], Size: 4}}
			if top == 1 {
				h.records = append(h.records, tops)
				reads = append(reads, gpu.Readback{Src: h.tops, Dst: h.staging[i][1], Size: topkBytes})
			}
			if h.progs[i][top] == nil {
				h.progs[i][top] = g.dev.Prepare(h.records, reads)
			} else {
				h.progs[i][top].Set(h.records, reads)
			}
		}
	}
	h.gen = g.rerecords
	return nil
}

// Wait waits for step st and returns what its head computed.
func (h *Head) Wait(ctx context.Context, st HeadStep) (HeadResult, error) {
	if st.seq == 0 || st.slot < 0 || st.slot >= headRing || h.waiting[st.slot].seq != st.seq {
		return HeadResult{}, errors.New("graph: head: Wait for a step that is not pending")
	}
	topK := h.waiting[st.slot].topK
	reads := []gpu.Readback{{Src: h.result, Dst: h.staging[st.slot][0], Size: 4}}
	if topK > 0 {
		reads = append(reads, gpu.Readback{Src: h.tops, Dst: h.staging[st.slot][1], Size: topkBytes})
	}
	if err := h.g.dev.WaitMapped(ctx, reads); err != nil {
		return HeadResult{}, fmt.Errorf("graph: head: %w", err)
	}
	h.waiting[st.slot] = stepState{}
	var res HeadResult
	err := readMapped(reads[0].Dst, func(m []byte) error {
		res.Token = int32(binary.LittleEndian.Uint32(m))
		if res.Token < 0 || int64(res.Token) >= h.vocab {
			return fmt.Errorf("graph: head: %w: picked token %d of a %d-token vocabulary", ErrInvalidGraph, res.Token, h.vocab)
		}
		return nil
	})
	if err == nil && topK > 0 {
		err = readMapped(reads[1].Dst, func(m []byte) error { return h.readTop(m, topK, &res) })
	}
	return res, err
}

// readMapped calls read with st's mapped bytes, then unmaps it.
func readMapped(st *gpu.Buffer, read func([]byte) error) error {
	m, err := st.Mapped()
	if err != nil {
		return fmt.Errorf("graph: head: %w", err)
	}
	err = read(m)
	if uerr := st.Unmap(); err == nil && uerr != nil {
		err = fmt.Errorf("graph: head: %w", uerr)
	}
	return err
}

// readTop decodes topk.wgsl's output into res.
func (h *Head) readTop(m []byte, topK int, res *HeadResult) error {
	u := func(i int) uint32 { return binary.LittleEndian.Uint32(m[4*i:]) }
	written, ties, need := int(u(0)), int64(u(1)), int64(u(2))
	res.Max = math.Float32frombits(u(3))
	res.SumExp = float64(math.Float32frombits(u(4)))
	k := min(int64(topK), h.vocab)
	above := k - need
	if written > topkCap || need > k || above < 0 || int64(written) < above || int64(written) > above+ties {
		return fmt.Errorf("graph: head: %w: top-k read-back of %d pairs (%d ties, %d needed) for k %d", ErrInvalidGraph, written, ties, need, k)
	}
	if int64(written)-above < ties {
		return nil // ties left out: Top stays nil
	}
	top := make([]TopLogit, written)
	for j := range top {
		tok := int32(u(8 + 2*j))
		if tok < 0 || int64(tok) >= h.vocab {
			return fmt.Errorf("graph: head: %w: top-k token %d of a %d-token vocabulary", ErrInvalidGraph, tok, h.vocab)
		}
		top[j] = TopLogit{Token: tok, Logit: math.Float32frombits(u(9 + 2*j))}
	}
	// Largest first, ties by token; NaN counts as the smallest, as in the
	// host's sort.
	ord := func(v float32) float64 {
		if v != v {
			return math.Inf(-1)
		}
		return float64(v)
	}
	slices.SortFunc(top, func(a, b TopLogit) int {
		if c := cmp.Compare(ord(b.Logit), ord(a.Logit)); c != 0 {
			return c
		}
		return cmp.Compare(a.Token, b.Token)
	})
	res.Top = top[:k]
	return nil
}

// Logits reads back the last row of the logits of the latest step, which
// must have been waited for with no step submitted since (the next step
// overwrites them). It is what a sampler falls back to when the top-k
// does not hold what it keeps.
func (h *Head) Logits(ctx context.Context) ([]float32, error) {
	g := h.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || h.closed {
		return nil, ErrClosed
	}
	for _, w := range h.waiting {
		if w.seq != 0 {
			return nil, errors.New("graph: head: Logits while a step is pending")
		}
	}
	o := g.outputs[h.opts.Logits]
	lt := g.tensors[o.id]
	rows := lt.liveNumel / h.vocab
	r := g.reads[o.read]
	r.Size = gpu.AlignedSize(uint64(rows * h.vocab * 4))
	if err := g.dev.Run(ctx, nil, []gpu.Readback{r}); err != nil {
		return nil, fmt.Errorf("graph: head: %w", err)
	}
	out := make([]float32, h.vocab)
	err := readMapped(r.Dst, func(m []byte) error {
		row := m[(rows-1)*h.vocab*4:]
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))
		}
		return nil
	})
	return out, err
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
	for _, bg := range h.groups {
		if bg != nil {
			bg.Release()
		}
	}
	bufs := []*gpu.Buffer{h.result, h.tops, h.params}
	for _, s := range h.staging {
		bufs = append(bufs, s[:]...)
	}
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
}
