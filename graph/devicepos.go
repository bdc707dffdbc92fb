package graph

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/lower"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// A decoder's position on the device. Where package lower's device_pos
// pass found one (lower.DevicePos: input_pos, and the SymInts that are
// input_pos plus a position-free amount), the graph holds the position
// in a small buffer of its own, the position tensor, and the ops that
// read those SymInts read them there in their kernels
// (ops.Builder.DevicePos): their params hold offsets from the position,
// the same at every step. Each such op declares the values its recording
// holds for; the graph keeps their intersection, as a range of the
// position.
//
// A recording is clean when every op that read a member's value (with
// Int, to check or decide something) declared it with DevicePos, or is
// one of the ops that set the members (the select_as_symint, the adds),
// and nothing else read the position input on the host. Then an Execute
// or Head step whose only new input value is the position, inside the
// range, needs neither a re-recording nor a refresh: the graph moves the
// members' host values by the position's change, without running any
// op. Otherwise (a value outside the range, a recording that is not
// clean, other inputs that moved) the usual refresh or re-recording
// runs, and reports errors the usual way.
//
// The position tensor must hold the position when a step runs. The graph
// knows what it will hold once the submitted work has run (tracked): a
// step whose position differs from it first writes the position (4 bytes
// through the queue, landing after the previous submissions and before
// this one); a Head step with a token input advances it on the device by
// the tokens it fed, in its argmax kernel (head.go), so that a pipelined
// greedy step, whose token comes from the previous step's pick, finds
// its position there too and writes nothing. Everything else that moves
// the sequence (a session switch, a Reset, a stop token) is a step at a
// position the host passes, written when it differs.

// devicePos is the graph's position on the device.
type devicePos struct {
	plan      *lower.DevicePos
	input     int // index into g.inputs of the position's input
	members   map[int32]bool
	producers map[int]bool
	tensor    int32 // the position tensor: int32 [1], its own buffer
	// lo and hi bound the position for the current recording (the
	// intersection of what its ops declared); clean: every op that read
	// a member read it from the device (see above).
	lo, hi int64
	clean  bool
	// tracked is what the position tensor holds once the submitted work
	// has run, when known.
	tracked int64
	known   bool
	// follows counts the steps at a new position that needed no refresh.
	follows int
}

// newDevicePos makes the position tensor of plan's position, before the
// first recording.
func (g *WebGPUGraph) newDevicePos(plan *lower.DevicePos) error {
	d := &devicePos{plan: plan, input: -1, members: map[int32]bool{}, producers: map[int]bool{}}
	for i, id := range g.inputs {
		if id == plan.Input {
			d.input = i
		}
	}
	if d.input < 0 {
		return fmt.Errorf("%w: the position's input %d is no graph input", ErrInvalidGraph, plan.Input)
	}
	for _, m := range plan.Members {
		d.members[m] = true
	}
	for _, p := range plan.Producers {
		d.producers[p] = true
	}
	buf, err := g.newBuffer(gpu.Storage, 16, "position")
	if err != nil {
		return err
	}
	ts := &tensorState{dtype: serialization.Int32, dims: []int64{1}, numel: 1, nbytes: 4, constID: -1, memObj: -1, buf: buf}
	ts.setLive(ts.dims, 1)
	d.tensor = int32(len(g.tensors))
	g.tensors = append(g.tensors, ts)
	g.devPos = d
	g.stats.PositionBytes = int64(buf.Size())
	return nil
}

// resetDevicePos starts a recording: no range declared yet, clean until
// an op reads a member without declaring it.
func (d *devicePos) reset() {
	if d != nil {
		d.lo, d.hi, d.clean = math.MinInt64, math.MaxInt64, true
	}
}

// DevicePos implements ops.Builder (see above).
func (b *opBuilder) DevicePos(id int32, lo, hi int64) (ops.Tensor, int64, bool) {
	g := b.g
	d := g.devPos
	if d == nil || !d.members[id] {
		return ops.Tensor{}, 0, false
	}
	off := g.symNow(id) - g.symNow(d.plan.Root)
	if b.refresh == nil {
		d.lo, d.hi = max(d.lo, subSat(lo, off)), min(d.hi, subSat(hi, off))
		if !slices.Contains(b.devDecl, id) {
			b.devDecl = append(b.devDecl, id)
		}
	}
	t, err := b.Tensor(d.tensor)
	if err != nil {
		return ops.Tensor{}, 0, false
	}
	return t, off, true
}

// subSat is a − b, saturated to int64's range.
func subSat(a, b int64) int64 {
	r := a - b
	switch {
	case b < 0 && r < a:
		return math.MaxInt64
	case b > 0 && r > a:
		return math.MinInt64
	}
	return r
}

// noteMemberRead notes that b's op read member id's value (a SymInt
// read); the unit is checked when it is done (checkUnit).
func (b *opBuilder) noteMemberRead(id int32) {
	d := b.g.devPos
	if d == nil || b.refresh != nil || !d.members[id] || slices.Contains(b.devReads, id) {
		return
	}
	b.devReads = append(b.devReads, id)
}

// checkUnit marks the recording not clean when the unit b recorded read
// a member's value without declaring it (DevicePos) and is no producer.
func (d *devicePos) checkUnit(b *opBuilder) {
	if d == nil || b.refresh != nil || d.producers[b.index] {
		return
	}
	for _, id := range b.devReads {
		if !slices.Contains(b.devDecl, id) {
			d.clean = false
			g := b.g
			g.log.Debug("graph: an op reads the position as a value; new positions refresh its params", "op", b.index, "name", b.op, "symint", id)
			return
		}
	}
}

// followPosition brings the recording up to date with a new position
// when that is all that moved (moved: the inputs whose SymInt or
// host-read values changed) and the recording holds for it: the
// members' values move with it, nothing is re-run. It reports whether it
// did. old is the position's value before prepare read the inputs.
func (g *WebGPUGraph) followPosition(inputs []Tensor, moved []int, old int64) bool {
	d := g.devPos
	if d == nil || !d.clean || len(moved) != 1 || moved[0] != d.input {
		return false
	}
	v, err := symIntInput(d.input, inputs[d.input])
	if err != nil || v < d.lo || v > d.hi {
		return false
	}
	delta := v - old
	for _, m := range d.plan.Members {
		if m == d.plan.Root {
			g.sym[m] = v
		} else {
			g.sym[m] = g.symNow(m) + delta
		}
	}
	d.follows++
	return true
}

// syncPosition writes the position into the position tensor when it will
// hold another value once the submitted work has run. The caller holds
// g.mu, before submitting a step.
func (g *WebGPUGraph) syncPosition() error {
	d := g.devPos
	if d == nil {
		return nil
	}
	v := g.symNow(d.plan.Root)
	if d.known && d.tracked == v {
		return nil
	}
	var w [4]byte
	binary.LittleEndian.PutUint32(w[:], uint32(int32(v)))
	if err := g.dev.Write(g.tensors[d.tensor].buf, 0, w[:]); err != nil {
		d.known = false
		return fmt.Errorf("graph: position: %w", err)
	}
	d.tracked, d.known = v, true
	return nil
}

// positionAdvanced notes a submitted step that advances the position
// tensor by n on the device (a Head's argmax), or, with ok false, a
// submission that failed: what the tensor holds is then unknown.
func (g *WebGPUGraph) positionAdvanced(n int64, ok bool) {
	if d := g.devPos; d != nil {
		d.tracked += n
		d.known = d.known && ok
	}
}

// positionBuffer is the position tensor's buffer, nil without one.
func (g *WebGPUGraph) positionBuffer() *gpu.Buffer {
	if g.devPos == nil {
		return nil
	}
	return g.tensors[g.devPos.tensor].buf
}

// PositionStats describe a graph's position on the device.
type PositionStats struct {
	// OnDevice: the graph holds a decoder's position on the device
	// (package lower's device_pos pass); Clean: its current recording
	// reads it only there, so new positions inside [Lo, Hi] need no
	// refresh.
	OnDevice, Clean bool
	Lo, Hi          int64
	// Follows counts the steps at a new position that needed neither a
	// refresh nor a re-recording.
	Follows int
}

// PositionStats reports the graph's position on the device.
func (g *WebGPUGraph) PositionStats() PositionStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	d := g.devPos
	if d == nil {
		return PositionStats{}
	}
	return PositionStats{OnDevice: true, Clean: d.clean, Lo: d.lo, Hi: d.hi, Follows: d.follows}
}

// noteBoundInputs finds the tensor inputs read on the host that no
// recorded dispatch binds, directly or through a view sharing their
// buffer, and that are no output (the position's input_pos tensor):
// their bytes on the device are never read, and upload skips them. (One
// in a shared object has it only for its lifetime, which no dispatch
// reads either.) Called after each recording.
func (g *WebGPUGraph) noteBoundInputs() {
	used := map[int32]bool{}
	use := func(id int32) {
		used[id] = true
		if a, ok := g.aliases[id]; ok {
			used[a.root] = true
		}
	}
	for _, pd := range g.pend {
		for _, id := range pd.tensors {
			use(id)
		}
	}
	for _, o := range g.graph.OutputIDs {
		use(int32(o))
	}
	g.unbound = make([]bool, len(g.inputs))
	for i, id := range g.inputs {
		g.unbound[i] = g.hostRead[id] && g.tensors[id] != nil && !used[id]
	}
}
