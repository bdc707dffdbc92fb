package gpu

/*
#include <string.h>

#include "wgd.h"

// Profiling encodes every dispatch in its own compute pass so that each pass
// can carry timestampWrites. Like raw.go it calls wgpu-native directly
// (wgd.h); wgdpDispatch mirrors raw.go's wgdDispatch field for field and is
// passed as void * to keep the two cgo preambles independent.
typedef struct { wgdH pipe, group; uint32_t x, y, z, pad; } wgdpDispatch;

// WGPUComputePassTimestampWrites, WGPUComputePassDescriptor and
// WGPUQuerySetDescriptor (webgpu.h of the binding's wgpu-native).
typedef struct { wgdH querySet; uint32_t begin, end; } wgdpTimestampWrites;
typedef struct { const void *next; const char *label; const wgdpTimestampWrites *tw; } wgdpPassDesc;
typedef struct { const void *next; const char *label; uint32_t type; uint32_t count; } wgdpQuerySetDesc;

// wgdp_query_set creates a timestamp query set of count queries, or returns
// NULL with err set.
static wgdH wgdp_query_set(wgdH dev, uint32_t count, void *errp) {
	wgdErr *err = (wgdErr *)errp;
	wgpuDevicePushErrorScope(dev, 0); // WGPUErrorFilter_Validation
	wgdpQuerySetDesc desc = {NULL, "wgdelegate profile", 1, count}; // WGPUQueryType_Timestamp
	wgdH qs = wgpuDeviceCreateQuerySet(dev, &desc);
	wgd_pop(dev, err);
	if (err->type != 0 || !qs) {
		if (qs) wgpuQuerySetRelease(qs);
		if (err->type == 0) {
			err->type = 1;
			strcpy(err->msg, "no query set");
		}
		return NULL;
	}
	return qs;
}

static void wgdp_query_set_free(wgdH qs) {
	wgpuQuerySetDestroy(qs);
	wgpuQuerySetRelease(qs);
}

// wgdp_submit encodes dispatches d[0..n) each in its own compute pass and
// submits once. With a query set, pass i writes timestamps first+2i (begin)
// and first+2i+1 (end); the 2n queries are resolved into resolve at byte
// offset resolveOff, then, when staging is set, the first copyBytes of
// resolve are copied into it. A dispatch with an empty grid becomes an empty
// pass. It returns 0, or -1 with err set (nothing submitted).
static int wgdp_submit(wgdH dev, wgdH queue, const void *dv, size_t n, wgdH qs, uint32_t first,
		wgdH resolve, uint64_t resolveOff, wgdH staging, uint64_t copyBytes, void *errp) {
	const wgdpDispatch *d = (const wgdpDispatch *)dv;
	wgdErr *err = (wgdErr *)errp;
	wgdH enc = wgd_encoder(dev, err);
	if (!enc) return -1;
	for (size_t i = 0; i < n; i++) {
		wgdpTimestampWrites tw = {qs, first + 2 * (uint32_t)i, first + 2 * (uint32_t)i + 1};
		wgdpPassDesc desc = {NULL, NULL, qs ? &tw : NULL};
		wgdH pass = wgpuCommandEncoderBeginComputePass(enc, &desc);
		if (d[i].x != 0 && d[i].y != 0 && d[i].z != 0) {
			wgpuComputePassEncoderSetPipeline(pass, d[i].pipe);
			wgpuComputePassEncoderSetBindGroup(pass, 0, d[i].group, 0, NULL);
			wgpuComputePassEncoderDispatchWorkgroups(pass, d[i].x, d[i].y, d[i].z);
		}
		wgpuComputePassEncoderEnd(pass);
		wgpuComputePassEncoderRelease(pass);
	}
	if (qs) {
		wgpuCommandEncoderResolveQuerySet(enc, qs, first, 2 * (uint32_t)n, resolve, resolveOff);
		if (staging) wgpuCommandEncoderCopyBufferToBuffer(enc, resolve, 0, staging, 0, copyBytes);
	}
	return wgd_finish_submit(dev, queue, enc, err);
}
// wgdp_submit_pass encodes dispatches d[0..n) in ONE compute pass, as Run
// does, writing timestamps first (begin) and first+1 (end) when qs is set,
// resolved into resolve and copied into staging as wgdp_submit does. It
// returns 0, or -1 with err set (nothing submitted).
static int wgdp_submit_pass(wgdH dev, wgdH queue, const void *dv, size_t n, wgdH qs,
		wgdH resolve, wgdH staging, void *errp) {
	const wgdpDispatch *d = (const wgdpDispatch *)dv;
	wgdErr *err = (wgdErr *)errp;
	wgdH enc = wgd_encoder(dev, err);
	if (!enc) return -1;
	wgdpTimestampWrites tw = {qs, 0, 1};
	wgdpPassDesc desc = {NULL, NULL, qs ? &tw : NULL};
	wgdH pass = wgpuCommandEncoderBeginComputePass(enc, &desc);
	wgdH pipe = NULL, group = NULL; // set again only when they change, as raw.go's wgd_record
	for (size_t i = 0; i < n; i++) {
		if (d[i].x != 0 && d[i].y != 0 && d[i].z != 0) {
			if (d[i].pipe != pipe) wgpuComputePassEncoderSetPipeline(pass, d[i].pipe);
			if (d[i].group != group) wgpuComputePassEncoderSetBindGroup(pass, 0, d[i].group, 0, NULL);
			pipe = d[i].pipe;
			group = d[i].group;
			wgpuComputePassEncoderDispatchWorkgroups(pass, d[i].x, d[i].y, d[i].z);
		}
	}
	wgpuComputePassEncoderEnd(pass);
	wgpuComputePassEncoderRelease(pass);
	if (qs) {
		wgpuCommandEncoderResolveQuerySet(enc, qs, 0, 2, resolve, 0);
		wgpuCommandEncoderCopyBufferToBuffer(enc, resolve, 0, staging, 0, 16);
	}
	return wgd_finish_submit(dev, queue, enc, err);
}
*/
import "C"

import (
	"context"
	"encoding/binary"
	"errors"
	"time"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
)

// Profile timing sources, as returned by Program.Profile.
const (
	// ProfileTimestamp: GPU timestamps written at the start and end of each
	// dispatch's compute pass.
	ProfileTimestamp = "gpu-timestamp"
	// ProfileCPU: each dispatch submitted alone and waited for; the times
	// include submission and wake-up latency.
	ProfileCPU = "cpu"
)

// profileChunk is the most dispatches timed by one submission (two
// queries each, within wgpu's query set limit).
const profileChunk = 1024

// calibrationGap is the CPU sleep between the two submissions that measure
// the timestamp period.
const calibrationGap = 25 * time.Millisecond

// profState is a device's profiling state, under d.mu.
type profState struct {
	period   float64 // nanoseconds per timestamp tick; 0 until measured
	forceCPU bool    // tests: use the CPU fallback even with timestamps
}

// HasTimestamps reports whether the device has timestamp queries, so that
// Program.Profile measures on the GPU.
func (d *Device) HasTimestamps() bool { return d.timestamps }

// TimestampPeriod returns the length of one timestamp tick in nanoseconds,
// measuring it on first use, or 0 without timestamp queries.
//
// wgpu-native as bound here has no wgpuQueueGetTimestampPeriod, so the
// period is measured: two submissions write timestamps calibrationGap
// apart, bracketed by CPU clock readings. When 1 ns (the period of lavapipe
// and most desktop drivers) lies within the bracket it is taken exactly;
// otherwise the bracket's midpoint is used.
func (d *Device) TimestampPeriod(ctx context.Context) (float64, error) {
	if !d.timestamps {
		return 0, nil
	}
	d.mu.Lock()
	period := d.prof.period
	d.mu.Unlock()
	if period > 0 {
		return period, nil
	}
	err := d.withTimestamps(512, 4, "timestamp calibration", func(st *Buffer, rb resolveBuffer, qs C.wgdH) error {
		if d.prof.period > 0 {
			period = d.prof.period
			return nil
		}
		var err error
		period, err = d.calibrateLocked(ctx, st, rb, qs)
		return err
	})
	if err != nil {
		return 0, err
	}
	return period, nil
}

// calibrateLocked measures the timestamp period (TimestampPeriod) with
// st, rb and qs (4 queries, 512 bytes), stores it in d.prof and returns
// it; the caller holds d.mu.
func (d *Device) calibrateLocked(ctx context.Context, st *Buffer, rb resolveBuffer, qs C.wgdH) (float64, error) {
	var empty [1]C.wgdpDispatch // an empty grid: an empty pass
	submit := func(first uint32, off uint64, staging C.wgdH) error {
		if C.wgdp_submit(C.wgdH(d.raw.dev), C.wgdH(d.raw.queue), unsafe.Pointer(&empty[0]), 1, qs, C.uint32_t(first),
			C.wgdH(rawBuffer(rb.b)), C.uint64_t(off), staging, 512, unsafe.Pointer(d.raw.err)) != 0 {
			return d.scopeError("profile")
		}
		return nil
	}
	t0 := time.Now()
	if err := submit(0, 0, nil); err != nil {
		return 0, err
	}
	if err := d.waitIdleLocked(ctx); err != nil {
		return 0, err
	}
	t1 := time.Now()
	time.Sleep(calibrationGap)
	t2 := time.Now()
	if err := submit(2, 256, C.wgdH(rawBuffer(st.b))); err != nil {
		return 0, err
	}
	data, err := d.mapStagingLocked(ctx, st)
	if err != nil {
		return 0, err
	}
	end0 := binary.LittleEndian.Uint64(data[8:])
	begin1 := binary.LittleEndian.Uint64(data[256:])
	d.rawUnmap(st)
	st.state = unmapped
	t3 := time.Now()
	if begin1 <= end0 {
		// Timestamps not comparable across submissions: assume 1 ns.
		d.log.Warn("gpu: cannot measure the timestamp period; assuming 1 ns", "end0", end0, "begin1", begin1)
		d.prof.period = 1
		return 1, nil
	}
	ticks := float64(begin1 - end0)
	lo := float64(t2.Sub(t1).Nanoseconds()) / ticks
	hi := float64(t3.Sub(t0).Nanoseconds()) / ticks
	switch {
	case lo*0.99 <= 1 && 1 <= hi*1.01:
		d.prof.period = 1
	default:
		d.prof.period = (lo + hi) / 2
	}
	d.log.Debug("gpu: timestamp period", "ns", d.prof.period, "lo", lo, "hi", hi)
	return d.prof.period, nil
}

// resolveBuffer is a query resolve target (QueryResolve|CopySrc).
type resolveBuffer struct{ b *wgpu.Buffer }

func (r resolveBuffer) Release() { r.b.Release() }

// withTimestamps runs fn with d.mu held on a usable device, with a
// staging buffer (label) and a query resolve buffer of size bytes each
// and a query set of count timestamps, and releases them after.
func (d *Device) withTimestamps(size uint64, count uint32, label string, fn func(st *Buffer, rb resolveBuffer, qs C.wgdH) error) error {
	st, err := d.NewBuffer(Staging, size, label)
	if err != nil {
		return err
	}
	defer st.Release()
	rb, err := d.newResolveBuffer(size)
	if err != nil {
		return err
	}
	defer rb.Release()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked("profile"); err != nil {
		return err
	}
	qs := C.wgdp_query_set(C.wgdH(d.raw.dev), C.uint32_t(count), unsafe.Pointer(d.raw.err))
	if qs == nil {
		return d.scopeError("create query set")
	}
	defer C.wgdp_query_set_free(qs)
	return fn(st, rb, qs)
}

func (d *Device) newResolveBuffer(size uint64) (resolveBuffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked("create query resolve buffer"); err != nil {
		return resolveBuffer{}, err
	}
	b, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "query resolve", Usage: wgpu.BufferUsageQueryResolve | wgpu.BufferUsageCopySrc, Size: size})
	if err != nil {
		return resolveBuffer{}, &Error{Op: "create query resolve buffer", Err: err}
	}
	return resolveBuffer{b}, nil
}

// usableLocked fails on a closed or lost device; the caller holds d.mu.
func (d *Device) usableLocked(op string) error {
	if d.closed {
		return ErrClosed
	}
	return d.checkLostLocked(op)
}

// mapStagingLocked maps st after a submission that copied into it and
// returns its bytes; the caller unmaps.
func (d *Device) mapStagingLocked(ctx context.Context, st *Buffer) ([]byte, error) {
	st.state = mapPending
	d.rawMapRead(st)
	if err := d.waitMapLocked(ctx, st); err != nil {
		return nil, err
	}
	if st.state == mapFailed {
		st.state = unmapped
		if err := d.checkLostLocked("profile"); err != nil {
			return nil, err
		}
		return nil, ErrMapFailed
	}
	return st.b.GetMappedRange(0, uint(st.size)), nil
}

// Profile runs the program's dispatches once more, timing each, and
// returns one duration per dispatch (in the order given to Prepare) and the
// timing source: ProfileTimestamp when the device has timestamp queries
// (each dispatch in its own compute pass, timed by the GPU), ProfileCPU
// otherwise (each dispatch submitted alone and waited for). Readbacks are
// not performed. Dispatches with an empty grid take 0.
//
// Running each dispatch in its own pass, or alone, removes the overlap a
// single pass allows, so the sum is an upper bound of Run's GPU time.
func (p *Program) Profile(ctx context.Context) ([]time.Duration, string, error) {
	return timed(ctx, p.d, p.profileTimestamps, p.profileCPU)
}

// timed times on d with ts, on the GPU's timestamps, when d has timestamp
// queries, and with cpu otherwise or where ts fails for another reason
// than ctx or a lost or closed device; it returns the times and their
// source (ProfileTimestamp, ProfileCPU).
func timed[T any](ctx context.Context, d *Device, ts, cpu func(context.Context) (T, error)) (T, string, error) {
	d.mu.Lock()
	useTS := d.timestamps && !d.prof.forceCPU
	d.mu.Unlock()
	if useTS {
		v, err := ts(ctx)
		if err == nil || ctx.Err() != nil || errors.Is(err, ErrDeviceLost) || errors.Is(err, ErrClosed) {
			return v, ProfileTimestamp, err
		}
		d.log.Warn("gpu: timestamp profiling failed; timing on the CPU", "err", err)
	}
	v, err := cpu(ctx)
	return v, ProfileCPU, err
}

func (p *Program) profileTimestamps(ctx context.Context) ([]time.Duration, error) {
	d := p.d
	period, err := d.TimestampPeriod(ctx)
	if err != nil {
		return nil, err
	}
	n := len(p.p.dispatches)
	out := make([]time.Duration, n)
	if n == 0 {
		return out, nil
	}
	chunk := min(n, profileChunk)
	var lost error // as the dispatches' times come back
	err = d.withTimestamps(uint64(16*chunk), uint32(2*chunk), "profile staging", func(st *Buffer, rb resolveBuffer, qs C.wgdH) error {
		for start := 0; start < n; start += chunk {
			m := min(chunk, n-start)
			if C.wgdp_submit(C.wgdH(d.raw.dev), C.wgdH(d.raw.queue), unsafe.Pointer(&p.p.dispatches[start]), C.size_t(m), qs, 0,
				C.wgdH(rawBuffer(rb.b)), 0, C.wgdH(rawBuffer(st.b)), C.uint64_t(16*m), unsafe.Pointer(d.raw.err)) != 0 {
				return d.scopeError("profile")
			}
			data, err := d.mapStagingLocked(ctx, st)
			if err != nil {
				return err
			}
			for i := 0; i < m; i++ {
				x := p.p.dispatches[start+i]
				if x.x == 0 || x.y == 0 || x.z == 0 {
					continue
				}
				b := binary.LittleEndian.Uint64(data[16*i:])
				e := binary.LittleEndian.Uint64(data[16*i+8:])
				if e > b {
					out[start+i] = time.Duration(float64(e-b) * period)
				}
			}
			d.rawUnmap(st)
			st.state = unmapped
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		lost = d.checkLostLocked("profile")
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, lost
}

func (p *Program) profileCPU(ctx context.Context) ([]time.Duration, error) {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked("profile"); err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(p.p.dispatches))
	for i := range p.p.dispatches {
		x := &p.p.dispatches[i]
		if x.x == 0 || x.y == 0 || x.z == 0 {
			continue
		}
		t := time.Now()
		if C.wgdp_submit(C.wgdH(d.raw.dev), C.wgdH(d.raw.queue), unsafe.Pointer(x), 1, nil, 0, nil, 0, nil, 0, unsafe.Pointer(d.raw.err)) != 0 {
			return nil, d.scopeError("profile")
		}
		if err := d.waitIdleLocked(ctx); err != nil {
			return nil, err
		}
		out[i] = time.Since(t)
	}
	return out, d.checkLostLocked("profile")
}

// ProfilePass runs the program's dispatches once more in one compute pass,
// as Run does (no uploads, no readbacks), and returns the GPU time of the
// whole pass and the timing source: ProfileTimestamp when the device has
// timestamp queries (written at the pass's start and end), ProfileCPU
// otherwise (the submission waited for on the host, its latency included).
// Unlike Profile's per-dispatch times, it keeps the overlap between
// dispatches that one pass allows, and it pays no per-pass cost per
// dispatch: it is the step's own GPU time.
func (p *Program) ProfilePass(ctx context.Context) (time.Duration, string, error) {
	return timed(ctx, p.d, p.passTimestamps, p.passCPU)
}

func (p *Program) passTimestamps(ctx context.Context) (time.Duration, error) {
	d := p.d
	period, err := d.TimestampPeriod(ctx)
	if err != nil {
		return 0, err
	}
	var t time.Duration
	var lost error
	err = d.withTimestamps(16, 2, "profile staging", func(st *Buffer, rb resolveBuffer, qs C.wgdH) error {
		var dp unsafe.Pointer
		if len(p.p.dispatches) > 0 {
			dp = unsafe.Pointer(&p.p.dispatches[0])
		}
		if C.wgdp_submit_pass(C.wgdH(d.raw.dev), C.wgdH(d.raw.queue), dp, C.size_t(len(p.p.dispatches)), qs,
			C.wgdH(rawBuffer(rb.b)), C.wgdH(rawBuffer(st.b)), unsafe.Pointer(d.raw.err)) != 0 {
			return d.scopeError("profile")
		}
		data, err := d.mapStagingLocked(ctx, st)
		if err != nil {
			return err
		}
		b := binary.LittleEndian.Uint64(data[0:])
		e := binary.LittleEndian.Uint64(data[8:])
		d.rawUnmap(st)
		st.state = unmapped
		if e > b {
			t = time.Duration(float64(e-b) * period)
		}
		lost = d.checkLostLocked("profile")
		return nil
	})
	if err != nil {
		return 0, err
	}
	return t, lost
}

func (p *Program) passCPU(ctx context.Context) (time.Duration, error) {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked("profile"); err != nil {
		return 0, err
	}
	var dp unsafe.Pointer
	if len(p.p.dispatches) > 0 {
		dp = unsafe.Pointer(&p.p.dispatches[0])
	}
	t := time.Now()
	if C.wgdp_submit_pass(C.wgdH(d.raw.dev), C.wgdH(d.raw.queue), dp, C.size_t(len(p.p.dispatches)), nil, nil, nil, unsafe.Pointer(d.raw.err)) != 0 {
		return 0, d.scopeError("profile")
	}
	if err := d.waitIdleLocked(ctx); err != nil {
		return 0, err
	}
	return time.Since(t), d.checkLostLocked("profile")
}
