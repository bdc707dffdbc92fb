package gpu

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cogentcore/webgpu/wgpu"
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
func (d *Device) Run(ctx context.Context, dispatches []Dispatch, reads []Readback) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	for _, r := range reads {
		if r.Dst.kind != Staging {
			return &Error{Op: "run", Err: errors.New("readback destination is not a staging buffer")}
		}
		// A submission that writes into a mapped or map-pending buffer
		// aborts the process; settle and unmap first.
		d.settleLocked(r.Dst)
		if r.Dst.state == mapped {
			if err := r.Dst.b.Unmap(); err != nil {
				return &Error{Op: "unmap", Err: err}
			}
		}
		r.Dst.state = unmapped
		if r.Size > r.Dst.size || r.Size > r.Src.size || r.Size%4 != 0 {
			return &Error{Op: "run", Err: fmt.Errorf("readback of %d bytes does not fit (src %d, dst %d)", r.Size, r.Src.size, r.Dst.size)}
		}
	}
	enc, err := d.dev.CreateCommandEncoder(nil)
	if err != nil {
		return &Error{Op: "create command encoder", Err: err}
	}
	defer enc.Release()
	if len(dispatches) > 0 {
		pass := enc.BeginComputePass(nil)
		for _, x := range dispatches {
			if x.X == 0 || x.Y == 0 || x.Z == 0 {
				continue
			}
			pass.SetPipeline(x.Pipeline.pipe)
			pass.SetBindGroup(0, x.Group.g, nil)
			pass.DispatchWorkgroups(x.X, x.Y, x.Z)
		}
		err := pass.End()
		pass.Release()
		if err != nil {
			return &Error{Op: "compute pass", Err: err}
		}
	}
	for _, r := range reads {
		if err := enc.CopyBufferToBuffer(r.Src.b, 0, r.Dst.b, 0, r.Size); err != nil {
			return &Error{Op: "copy to staging", Err: err}
		}
	}
	cb, err := enc.Finish(nil)
	if err != nil {
		return &Error{Op: "finish", Err: err}
	}
	if cb == nil {
		// Never hand a nil command buffer to Submit: it is a crash.
		return &Error{Op: "finish", Err: errors.New("no command buffer")}
	}
	d.queue.Submit(cb)
	cb.Release()

	for _, r := range reads {
		buf := r.Dst
		buf.state = mapPending
		err := buf.b.MapAsync(wgpu.MapModeRead, 0, buf.size, func(s wgpu.BufferMapAsyncStatus) {
			if s == wgpu.BufferMapAsyncStatusSuccess {
				buf.state = mapped
			} else {
				buf.state = mapFailed
			}
		})
		if err != nil {
			buf.state = unmapped
			return &Error{Op: "map staging", Err: err}
		}
	}
	if len(reads) == 0 {
		return d.waitIdleLocked(ctx)
	}
	return d.waitLocked(ctx, func() bool {
		for _, r := range reads {
			if r.Dst.state == mapPending {
				return false
			}
		}
		return true
	}, func() error {
		for _, r := range reads {
			if r.Dst.state == mapFailed {
				r.Dst.state = unmapped
				return ErrMapFailed
			}
		}
		return nil
	})
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
	if b.state != mapped {
		return nil
	}
	b.state = unmapped
	if err := b.b.Unmap(); err != nil {
		return &Error{Op: "unmap", Err: err}
	}
	return nil
}

// settleLocked waits (without a deadline) for a pending map on b to finish.
// It is used when a cancelled Run left maps behind.
func (d *Device) settleLocked(b *Buffer) {
	if b.state != mapPending {
		return
	}
	_ = d.waitLocked(context.Background(), func() bool { return b.state != mapPending }, func() error { return nil })
	if b.state == mapFailed {
		b.state = unmapped
	}
}

// waitIdleLocked waits until the queue has finished the submitted work.
func (d *Device) waitIdleLocked(ctx context.Context) error {
	done := false
	d.queue.OnSubmittedWorkDone(func(wgpu.QueueWorkDoneStatus) { done = true })
	return d.waitLocked(ctx, func() bool { return done }, func() error { return nil })
}

// waitLocked polls without blocking until ready reports true. Poll(true) is
// never used: past 5 s it reports an empty queue and fires callbacks while
// lavapipe is still running. Callbacks only fire inside Poll, so the loop
// alternates non-blocking polls with short, growing sleeps.
func (d *Device) waitLocked(ctx context.Context, ready func() bool, result func() error) error {
	sleep := 5 * time.Microsecond
	for spins := 0; ; spins++ {
		d.dev.Poll(false, nil)
		if ready() {
			return result()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if spins < 64 {
			continue
		}
		time.Sleep(sleep)
		if sleep < time.Millisecond {
			sleep *= 2
		}
	}
}
