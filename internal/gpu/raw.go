package gpu

/*
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

// The hot path (encode, submit, map, write, poll) calls wgpu-native
// directly: the binding wraps every call in an error scope whose Go
// callback is a cgo.Handle, a few heap allocations per call. Here one error
// scope covers a whole encode, and callbacks write into C memory.
#include "wgd.h"

// A status cell: 0 while pending, status+1 once the callback ran.
static void wgd_status_cb(uint32_t status, void *ud) { *(volatile uint32_t *)ud = status + 1; }

typedef struct { wgdH pipe, group; uint32_t x, y, z, pad; } wgdDispatch;
typedef struct { wgdH src, dst; uint64_t size; } wgdCopy;

// wgd_record pushes an error scope and returns a command encoder holding
// the pre copies, every dispatch in one compute pass, then the copies; or
// NULL, with the scope popped into err. A dispatch whose pipeline (bind
// group) is the one the previous dispatch set does not set it again:
// wgpu-core validates and tracks every set, a few µs of host time a step
// for nothing. binds[0] and binds[1] receive how many pipelines and bind
// groups the pass set.
static wgdH wgd_record(wgdH dev, const wgdCopy *pre, size_t np, const wgdDispatch *d, size_t nd, const wgdCopy *c, size_t nc, wgdErr *err, uint32_t *binds) {
	binds[0] = 0;
	binds[1] = 0;
	wgdH enc = wgd_encoder(dev, err);
	if (!enc) return NULL;
	for (size_t i = 0; i < np; i++) {
		if (pre[i].size > 0) wgpuCommandEncoderCopyBufferToBuffer(enc, pre[i].src, 0, pre[i].dst, 0, pre[i].size);
	}
	if (nd > 0) {
		wgdH pass = wgpuCommandEncoderBeginComputePass(enc, NULL);
		wgdH pipe = NULL, group = NULL;
		for (size_t i = 0; i < nd; i++) {
			if (d[i].x == 0 || d[i].y == 0 || d[i].z == 0) continue;
			if (d[i].pipe != pipe) {
				wgpuComputePassEncoderSetPipeline(pass, d[i].pipe);
				pipe = d[i].pipe;
				binds[0]++;
			}
			if (d[i].group != group) {
				wgpuComputePassEncoderSetBindGroup(pass, 0, d[i].group, 0, NULL);
				group = d[i].group;
				binds[1]++;
			}
			wgpuComputePassEncoderDispatchWorkgroups(pass, d[i].x, d[i].y, d[i].z);
		}
		wgpuComputePassEncoderEnd(pass);
		wgpuComputePassEncoderRelease(pass);
	}
	for (size_t i = 0; i < nc; i++) {
		if (c[i].size > 0) wgpuCommandEncoderCopyBufferToBuffer(enc, c[i].src, 0, c[i].dst, 0, c[i].size);
	}
	return enc;
}

// wgd_submit encodes the pre copies, every dispatch in one compute pass,
// then the copies, and submits once. It returns 0, or -1 with err set
// (nothing submitted).
static int wgd_submit(wgdH dev, wgdH queue, const wgdCopy *pre, size_t np, const wgdDispatch *d, size_t nd, const wgdCopy *c, size_t nc, wgdErr *err, uint32_t *binds) {
	wgdH enc = wgd_record(dev, pre, np, d, nd, c, nc, err, binds);
	if (!enc) return -1;
	return wgd_finish_submit(dev, queue, enc, err);
}

// wgd_encode is wgd_submit without the submit: the finished command buffer
// is released. It measures what encoding costs (see encodeOnly).
static int wgd_encode(wgdH dev, const wgdDispatch *d, size_t nd, wgdErr *err, uint32_t *binds) {
	wgdH enc = wgd_record(dev, NULL, 0, d, nd, NULL, 0, err, binds);
	if (!enc) return -1;
	wgdH cb = wgpuCommandEncoderFinish(enc, NULL);
	wgd_pop(dev, err);
	if (cb) wgpuCommandBufferRelease(cb);
	wgpuCommandEncoderRelease(enc);
	return err->type != 0 || !cb ? -1 : 0;
}

static int wgd_write(wgdH dev, wgdH queue, wgdH buf, uint64_t off, const void *data, size_t size, wgdErr *err) {
	wgpuDevicePushErrorScope(dev, 0);
	wgpuQueueWriteBuffer(queue, buf, off, data, size);
	wgd_pop(dev, err);
	return err->type != 0 ? -1 : 0;
}

static void wgd_map_read(wgdH buf, size_t size, uint32_t *cell) {
	*cell = 0;
	wgpuBufferMapAsync(buf, 1, 0, size, wgd_status_cb, cell); // WGPUMapMode_Read
}

static void wgd_map_write(wgdH buf, size_t off, size_t size, uint32_t *cell) {
	*cell = 0;
	wgpuBufferMapAsync(buf, 2, off, size, wgd_status_cb, cell); // WGPUMapMode_Write
}

// wgd_clear submits a clear of buf's first size bytes. It returns 0, or -1
// with err set (nothing submitted).
static int wgd_clear(wgdH dev, wgdH queue, wgdH buf, uint64_t size, wgdErr *err) {
	wgdH enc = wgd_encoder(dev, err);
	if (!enc) return -1;
	wgpuCommandEncoderClearBuffer(enc, buf, 0, size);
	return wgd_finish_submit(dev, queue, enc, err);
}

static void wgd_on_done(wgdH queue, uint32_t *cell) {
	*cell = 0;
	wgpuQueueOnSubmittedWorkDone(queue, wgd_status_cb, cell);
}
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
)

// rawRef reads the C handle stored in field i (counting pointer-sized
// fields) of a binding object. The binding's types are plain structs of C
// handles (Device{ref}, Queue{deviceRef, ref}, Buffer{deviceRef, ref},
// ComputePipeline{ref}, BindGroup{ref}); checkRawLayout verifies that on a
// real buffer when a device opens.
func rawRef(obj unsafe.Pointer, field int) C.wgdH {
	return *(*C.wgdH)(unsafe.Add(obj, field*int(unsafe.Sizeof(uintptr(0)))))
}

func rawDevice(d *wgpu.Device) C.wgdH            { return rawRef(unsafe.Pointer(d), 0) }
func rawQueue(q *wgpu.Queue) C.wgdH              { return rawRef(unsafe.Pointer(q), 1) }
func rawBuffer(b *wgpu.Buffer) C.wgdH            { return rawRef(unsafe.Pointer(b), 1) }
func rawPipeline(p *wgpu.ComputePipeline) C.wgdH { return rawRef(unsafe.Pointer(p), 0) }
func rawBindGroup(g *wgpu.BindGroup) C.wgdH      { return rawRef(unsafe.Pointer(g), 0) }
func rawBufferSize(b *wgpu.Buffer) uint64        { return uint64(C.wgpuBufferGetSize(rawBuffer(b))) }
func (d *Device) rawPoll()                       { C.wgpuDevicePoll(d.raw.dev, 0, nil) }
func statusCell(p unsafe.Pointer) *uint32        { return (*uint32)(p) }
func newCell() unsafe.Pointer                    { return C.calloc(1, 4) }
func freeCell(p unsafe.Pointer)                  { C.free(p) }
func (d *Device) rawUnmap(b *Buffer)             { C.wgpuBufferUnmap(rawBuffer(b.b)) }

// rawMappedRange is the buffer's mapped memory [0, size), or nil when the
// buffer is not mapped (the binding's GetMappedRange would panic on that).
func rawMappedRange(b *wgpu.Buffer, size uint64) []byte {
	p := C.wgpuBufferGetMappedRange(rawBuffer(b), 0, C.size_t(size))
	if p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(p), size)
}
func (d *Device) rawMapRead(b *Buffer) {
	C.wgd_map_read(rawBuffer(b.b), C.size_t(b.size), (*C.uint32_t)(b.cell))
}
func (d *Device) rawMapWrite(b *Buffer) {
	C.wgd_map_write(rawBuffer(b.b), 0, C.size_t(b.size), (*C.uint32_t)(b.cell))
}

// rawMapWriteHead starts mapping the buffer's first 8 bytes for writing,
// which first-touches (zero-fills) no more than that.
func (d *Device) rawMapWriteHead(b *Buffer) {
	C.wgd_map_write(rawBuffer(b.b), 0, 8, (*C.uint32_t)(b.cell))
}

// rawMappedHead is the address of a buffer's mapped first bytes, or nil.
func rawMappedHead(b *wgpu.Buffer) unsafe.Pointer {
	return unsafe.Pointer(C.wgpuBufferGetMappedRange(rawBuffer(b), 0, 8))
}
func (d *Device) rawOnDone(cell unsafe.Pointer) { C.wgd_on_done(d.raw.queue, (*C.uint32_t)(cell)) }
func cellValue(p unsafe.Pointer) uint32         { return *(*uint32)(p) }
func setCell(p unsafe.Pointer, v uint32)        { *(*uint32)(p) = v }
func (d *Device) rawErrMsg() string             { return C.GoString(&d.raw.err.msg[0]) }
func rawDispatchSize() uintptr                  { return unsafe.Sizeof(C.wgdDispatch{}) }
func rawCopySize() uintptr                      { return unsafe.Sizeof(C.wgdCopy{}) }
func (d *Device) rawErrType() uint32            { return uint32(d.raw.err._type) }

// rawDevice holds a device's C handles and its C error cell.
type rawState struct {
	dev, queue C.wgdH
	err        *C.wgdErr
}

func (d *Device) initRaw() error {
	d.raw = rawState{dev: rawDevice(d.dev), queue: rawQueue(d.queue), err: (*C.wgdErr)(C.calloc(1, C.size_t(unsafe.Sizeof(C.wgdErr{}))))}
	// Check the handle layout on a real buffer before trusting it.
	b, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "layout check", Usage: wgpu.BufferUsageCopyDst, Size: 48})
	if err != nil {
		return err
	}
	defer b.Release()
	if rawBufferSize(b) != 48 {
		return errors.New("gpu: unexpected wgpu binding object layout")
	}
	return nil
}

func (d *Device) freeRaw() {
	if d.raw.err != nil {
		C.free(unsafe.Pointer(d.raw.err))
		d.raw.err = nil
	}
}

// program is a prepared submission: the dispatch and copy records in C
// layout, built once and replayed by every Run.
type program struct {
	pre        []C.wgdCopy // copies before the compute pass
	dispatches []C.wgdDispatch
	copies     []C.wgdCopy
	binds      [2]C.uint32_t // pipelines and bind groups the last encoding set
}

// setPre replaces the copies made before the compute pass.
func (p *program) setPre(copies []Copy) {
	p.pre = p.pre[:0]
	for _, c := range copies {
		p.pre = append(p.pre, C.wgdCopy{src: rawBuffer(c.Src.b), dst: rawBuffer(c.Dst.b), size: C.uint64_t(c.Size)})
	}
}

func (p *program) set(dispatches []Dispatch, reads []Readback) {
	p.dispatches = p.dispatches[:0]
	for _, x := range dispatches {
		p.dispatches = append(p.dispatches, C.wgdDispatch{pipe: rawPipeline(x.Pipeline.pipe), group: rawBindGroup(x.Group.g),
			x: C.uint32_t(x.X), y: C.uint32_t(x.Y), z: C.uint32_t(x.Z)})
	}
	p.copies = p.copies[:0]
	for _, r := range reads {
		p.copies = append(p.copies, C.wgdCopy{src: rawBuffer(r.Src.b), dst: rawBuffer(r.Dst.b), size: C.uint64_t(r.Size)})
	}
}

// submit encodes and submits p; the caller holds d.mu.
func (d *Device) submit(p *program) error {
	var pp, cp *C.wgdCopy
	var dp *C.wgdDispatch
	if len(p.pre) > 0 {
		pp = &p.pre[0]
	}
	if len(p.dispatches) > 0 {
		dp = &p.dispatches[0]
	}
	if len(p.copies) > 0 {
		cp = &p.copies[0]
	}
	// Every submit also flushes the queue writes made before it.
	d.flush.pending = 0
	if C.wgd_submit(d.raw.dev, d.raw.queue, pp, C.size_t(len(p.pre)), dp, C.size_t(len(p.dispatches)), cp, C.size_t(len(p.copies)), d.raw.err, &p.binds[0]) != 0 {
		return d.scopeError("submit")
	}
	return nil
}

// encodeOnly records p's dispatches and finishes the command buffer like
// submit, then drops it unsubmitted: BenchmarkDispatch uses it to time the
// CPU side of a Run, which every Run pays again (a WebGPU command buffer
// cannot be submitted twice). The caller holds d.mu.
func (d *Device) encodeOnly(p *program) error {
	if len(p.dispatches) == 0 {
		return nil
	}
	if C.wgd_encode(d.raw.dev, &p.dispatches[0], C.size_t(len(p.dispatches)), d.raw.err, &p.binds[0]) != 0 {
		return d.scopeError("encode")
	}
	return nil
}

// write is one queue write; the caller holds d.mu and has checked bounds
// and alignment.
func (d *Device) write(b *Buffer, offset uint64, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	if C.wgd_write(d.raw.dev, d.raw.queue, rawBuffer(b.b), C.uint64_t(offset), unsafe.Pointer(&data[0]), C.size_t(len(data)), d.raw.err) != 0 {
		return d.scopeError("write buffer")
	}
	d.queueWrites.Add(1)
	return d.noteWriteLocked(len(data))
}

// clear submits a clear of the whole of b; the caller holds d.mu.
func (d *Device) clear(b *Buffer) error {
	if C.wgd_clear(d.raw.dev, d.raw.queue, rawBuffer(b.b), C.uint64_t(b.size), d.raw.err) != 0 {
		return d.scopeError("clear buffer")
	}
	return nil
}

func cUint64(v uint64) C.uint64_t { return C.uint64_t(v) }

// Destroy destroys the underlying WebGPU device as a device loss would: the
// Device stays usable as a Go object, but every later GPU operation fails
// with an error. Tests use it to check fault handling; Close still has to
// be called.
func (d *Device) Destroy() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		C.wgpuDeviceDestroy(d.raw.dev)
		C.wgpuDevicePoll(d.raw.dev, 0, nil) // deliver the lost callback
		if d.lostReason.Load() == nil {
			d.lostReason.Store("destroyed")
		}
		d.lost = true
	}
}

// scopeError turns the popped error scope into an *Error; a device-lost
// error marks the device lost.
func (d *Device) scopeError(op string) error {
	msg := d.rawErrMsg()
	if d.rawErrType() == 5 { // WGPUErrorType_DeviceLost
		d.lostReason.CompareAndSwap(nil, msg)
		return d.checkLostLocked(op)
	}
	if msg == "" {
		msg = "the driver reported an error without a message"
	}
	return &Error{Op: op, Err: errors.New(msg)}
}
