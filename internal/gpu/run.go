package gpu

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
)

// Dispatch is one recorded compute dispatch.
type Dispatch struct {
	Pipeline *Pipeline
	Group    *BindGroup
	X, Y, Z  uint32
}

// Readback copies Size bytes of Src into the staging buffer Dst after all
// dispatches, to be read with Mapped once Run returns.
type Readback struct {
	Src  *Buffer
	Dst  *Buffer
	Size uint64
}

// Copy copies the first Size bytes of Src to the start of Dst, both
// storage buffers; Size is a multiple of 4.
type Copy struct {
	Src  *Buffer
	Dst  *Buffer
	Size uint64
}

// ErrMapFailed is returned when a staging buffer cannot be mapped.
var ErrMapFailed = errors.New("gpu: buffer map failed")

// Run records every dispatch in one compute pass, then the readback copies,
// submits once, maps every readback destination and waits for the maps. On
// success each Dst is mapped: read it with Mapped, then call Unmap (or leave
// it; the next Run unmaps).
//
// If ctx ends while waiting, Run returns ctx.Err(); the maps stay pending and
// are settled by the next call that touches those buffers, so no later
// submission can see a buffer with a pending map.
//
// Run prepares the records on every call; a caller that replays the same
// records uses Prepare once and Program.Run, which allocates nothing.
func (d *Device) Run(ctx context.Context, dispatches []Dispatch, reads []Readback) error {
	return d.Prepare(dispatches, reads).Run(ctx)
}

// Submit records dispatches in one compute pass and submits them without
// waiting: a later Run (or Close) waits for them, the queue being in order.
// Loads use it to start driver-side work early.
func (d *Device) Submit(dispatches []Dispatch) error {
	var p program
	p.set(dispatches, nil)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if err := d.checkLostLocked("submit"); err != nil {
		return err
	}
	return d.submit(&p)
}

// Program is a prepared submission: dispatches and readbacks in the form
// the driver takes, replayed without allocation.
type Program struct {
	d     *Device
	p     program
	pre   []Copy
	reads []Readback
}

// Prepare builds a Program for dispatches and reads. The pipelines, bind
// groups and buffers must stay alive while it is used.
func (d *Device) Prepare(dispatches []Dispatch, reads []Readback) *Program {
	p := &Program{d: d}
	p.Set(dispatches, reads)
	return p
}

// Set replaces the program's records.
func (p *Program) Set(dispatches []Dispatch, reads []Readback) {
	p.p.set(dispatches, reads)
	p.reads = append(p.reads[:0], reads...)
}

// SetPre sets the copies made before the program's compute pass (none by
// default), such as a value one submission left in a buffer of its own
// moved into the next one's input. They are checked at submission.
func (p *Program) SetPre(copies []Copy) {
	p.p.setPre(copies)
	p.pre = append(p.pre[:0], copies...)
}

// SetReadSize changes readback i's byte count (a multiple of 4).
func (p *Program) SetReadSize(i int, size uint64) {
	p.reads[i].Size = size
	p.p.copies[i].size = cUint64(size)
}

// BindCounts are how many pipelines and bind groups one encoding of a
// program set in its compute pass: a dispatch sets neither when the
// dispatch before it set the same.
type BindCounts struct{ Pipelines, Groups int }

// Binds returns what the program's latest submission set.
func (p *Program) Binds() BindCounts {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	return BindCounts{Pipelines: int(p.p.binds[0]), Groups: int(p.p.binds[1])}
}

// Run submits the program once and waits for its readbacks (see
// Device.Run).
func (p *Program) Run(ctx context.Context) error {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := p.submitLocked(); err != nil {
		return err
	}
	if len(p.reads) == 0 {
		return d.waitIdleLocked(ctx)
	}
	return d.waitMappedLocked(ctx, p.reads)
}

// Submit submits the program once and returns without waiting: the
// readbacks' staging buffers are being mapped, and WaitMapped waits for
// them. The queue runs submissions in order, so a program submitted
// next may read what this one writes; this is how a decode loop keeps the
// GPU busy with step t+1 while the host waits for step t's few bytes.
// Until WaitMapped returns, the staging buffers must not be read; a later
// submission that reads back into one of them first waits for its map.
func (p *Program) Submit() error {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	return p.submitLocked()
}

// WaitMapped waits until the staging buffers of reads, submitted by
// Program.Submit, are mapped, and reports a failed map as ErrMapFailed.
// If ctx ends first it returns ctx.Err() and the maps stay pending (see
// Run).
func (d *Device) WaitMapped(ctx context.Context, reads []Readback) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	for _, r := range reads {
		if r.Dst.state == unmapped {
			return &Error{Op: "wait mapped", Err: errors.New("staging buffer has no map pending or done")}
		}
	}
	return d.waitMappedLocked(ctx, reads)
}

// waitMappedLocked waits for the maps of reads' staging buffers.
func (d *Device) waitMappedLocked(ctx context.Context, reads []Readback) error {
	for _, r := range reads {
		if err := d.waitMapLocked(ctx, r.Dst); err != nil {
			return err
		}
	}
	for _, r := range reads {
		if r.Dst.state == mapFailed {
			r.Dst.state = unmapped
			if err := d.checkLostLocked("run"); err != nil {
				return err
			}
			return ErrMapFailed
		}
	}
	return d.checkLostLocked("run")
}

// submitLocked checks the readbacks, submits the program and starts the
// maps of its staging buffers. The caller holds d.mu.
func (p *Program) submitLocked() error {
	d := p.d
	if d.closed {
		return ErrClosed
	}
	if err := d.checkLostLocked("run"); err != nil {
		return err
	}
	for _, c := range p.pre {
		if c.Src.kind != Storage || c.Dst.kind != Storage || c.Src.released || c.Dst.released ||
			c.Size%4 != 0 || c.Size > c.Src.size || c.Size > c.Dst.size {
			return &Error{Op: "run", Err: fmt.Errorf("pre copy of %d bytes between released, non-storage or too small buffers", c.Size)}
		}
	}
	for _, r := range p.reads {
		if r.Dst.kind != Staging || r.Dst.released || r.Src.released {
			return &Error{Op: "run", Err: errors.New("readback between released or non-staging buffers")}
		}
		// A submission that writes into a mapped or map-pending buffer
		// aborts the process; settle and unmap first.
		d.settleLocked(r.Dst)
		if r.Dst.state == mapped {
			d.rawUnmap(r.Dst)
		}
		r.Dst.state = unmapped
		if r.Size > r.Dst.size || r.Size > r.Src.size || r.Size%4 != 0 {
			return &Error{Op: "run", Err: fmt.Errorf("readback of %d bytes does not fit (src %d, dst %d)", r.Size, r.Src.size, r.Dst.size)}
		}
	}
	if err := d.submit(&p.p); err != nil {
		return err
	}
	for _, r := range p.reads {
		r.Dst.state = mapPending
		d.rawMapRead(r.Dst)
	}
	return nil
}

// Mapped returns the mapped bytes of a staging buffer after a successful Run.
// The slice is only valid until Unmap or the next Run.
func (b *Buffer) Mapped() ([]byte, error) {
	if b.state != mapped {
		return nil, &Error{Op: "read staging", Err: errors.New("buffer is not mapped")}
	}
	return b.b.GetMappedRange(0, uint(b.size)), nil
}

// Unmap unmaps a mapped staging buffer; it does nothing otherwise.
func (b *Buffer) Unmap() error {
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	if b.state != mapped || b.released {
		return nil
	}
	b.state = unmapped
	b.d.rawUnmap(b)
	return nil
}

// updateMapState moves a pending map to mapped or mapFailed once its
// callback has run.
func (b *Buffer) updateMapState() {
	if b.state != mapPending {
		return
	}
	switch v := cellValue(b.cell); {
	case v == 0:
	case v == 1: // WGPUBufferMapAsyncStatus_Success + 1
		b.state = mapped
	default:
		b.state = mapFailed
	}
}

// settleLocked waits (without a deadline) for a pending map on b to finish.
// It is used when a cancelled Run left maps behind.
func (d *Device) settleLocked(b *Buffer) {
	if b.state != mapPending {
		return
	}
	_ = d.waitMapLocked(context.Background(), b)
	if b.state == mapFailed {
		b.state = unmapped
	}
}

// waitMapLocked waits until b's pending map has finished.
func (d *Device) waitMapLocked(ctx context.Context, b *Buffer) error {
	return d.waitLocked(ctx, func() bool { b.updateMapState(); return b.state != mapPending })
}

// waitIdleLocked waits until the queue has finished the submitted work.
func (d *Device) waitIdleLocked(ctx context.Context) error {
	if d.idleCell == nil {
		d.idleCell = newCell()
	}
	d.rawOnDone(d.idleCell)
	return d.waitLocked(ctx, func() bool { return cellValue(d.idleCell) != 0 })
}

// spinBudget is how long waitLocked polls back to back before it sleeps,
// and maxPollSleep the longest sleep between polls after that. A short
// Execute (a few tiny dispatches) finishes within the spin; a long one is
// polled every 200 µs or so (a non-blocking Poll costs a few µs), so a
// wait overshoots the work by at most about that. The former schedule (64
// polls, then time.Sleep doubling to 1 ms) cost short Executes a
// millisecond each here: 4 tiny dispatches took 0.8-1.5 ms instead of
// 0.2-0.4 ms.
const (
	spinBudget   = 100 * time.Microsecond
	maxPollSleep = 200 * time.Microsecond
)

// waitLocked polls without blocking until ready reports true. Poll(true) is
// never used: past 5 s it reports an empty queue and fires callbacks while
// lavapipe is still running. Callbacks only fire inside Poll, so the loop
// alternates non-blocking polls with short, growing sleeps.
func (d *Device) waitLocked(ctx context.Context, ready func() bool) error {
	sleep := 20 * time.Microsecond
	spinEnd := time.Now().Add(spinBudget)
	for spins := 0; ; spins++ {
		d.rawPoll()
		if ready() {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if spins < 64 || time.Now().Before(spinEnd) {
			runtime.Gosched()
			continue
		}
		pollSleep(sleep)
		if sleep < maxPollSleep {
			sleep *= 2
		}
	}
}
