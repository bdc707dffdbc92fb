// wgd.h: the wgpu-native entry points (webgpu.h of the binding's
// wgpu-native) that raw.go and profile.go call directly, with handles as
// opaque pointers, and the error-scope record both fill. Included by both
// cgo preambles.
#ifndef WGD_H
#define WGD_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

typedef void *wgdH;
typedef void (*wgdErrCB)(uint32_t type, const char *msg, void *ud);
typedef void (*wgdStatusCB)(uint32_t status, void *ud);

extern wgdH wgpuDeviceCreateCommandEncoder(wgdH device, const void *desc);
extern wgdH wgpuCommandEncoderBeginComputePass(wgdH enc, const void *desc);
extern void wgpuComputePassEncoderSetPipeline(wgdH pass, wgdH pipe);
extern void wgpuComputePassEncoderSetBindGroup(wgdH pass, uint32_t idx, wgdH group, size_t n, const uint32_t *offsets);
extern void wgpuComputePassEncoderDispatchWorkgroups(wgdH pass, uint32_t x, uint32_t y, uint32_t z);
extern void wgpuComputePassEncoderEnd(wgdH pass);
extern void wgpuComputePassEncoderRelease(wgdH pass);
extern void wgpuCommandEncoderCopyBufferToBuffer(wgdH enc, wgdH src, uint64_t srcOff, wgdH dst, uint64_t dstOff, uint64_t size);
extern wgdH wgpuCommandEncoderFinish(wgdH enc, const void *desc);
extern void wgpuCommandEncoderRelease(wgdH enc);
extern void wgpuQueueSubmit(wgdH queue, size_t n, const wgdH *cmds);
extern void wgpuCommandBufferRelease(wgdH cb);
extern void wgpuDevicePushErrorScope(wgdH device, uint32_t filter);
extern void wgpuDevicePopErrorScope(wgdH device, wgdErrCB cb, void *ud);
extern void wgpuBufferMapAsync(wgdH buf, uint32_t mode, size_t off, size_t size, wgdStatusCB cb, void *ud);
extern void wgpuBufferUnmap(wgdH buf);
extern void wgpuQueueWriteBuffer(wgdH queue, wgdH buf, uint64_t off, const void *data, size_t size);
extern uint32_t wgpuDevicePoll(wgdH device, uint32_t wait, const void *index);
extern uint64_t wgpuBufferGetSize(wgdH buf);
extern void *wgpuBufferGetMappedRange(wgdH buf, size_t off, size_t size);
extern void wgpuCommandEncoderClearBuffer(wgdH enc, wgdH buf, uint64_t off, uint64_t size);
extern void wgpuQueueOnSubmittedWorkDone(wgdH queue, wgdStatusCB cb, void *ud);
extern void wgpuDeviceDestroy(wgdH device);
extern void wgpuCommandEncoderResolveQuerySet(wgdH enc, wgdH qs, uint32_t first, uint32_t count, wgdH dst, uint64_t dstOff);
extern wgdH wgpuDeviceCreateQuerySet(wgdH device, const void *desc);
extern void wgpuQuerySetDestroy(wgdH qs);
extern void wgpuQuerySetRelease(wgdH qs);

// wgdErr receives a popped error scope. type is WGPUErrorType (0 = none);
// popped tells whether the callback ran.
typedef struct { uint32_t type; uint32_t popped; char msg[1024]; } wgdErr;

// Helpers both cgo preambles use (static: each gets its own copy).

static inline void wgd_err_cb(uint32_t type, const char *msg, void *ud) {
	wgdErr *e = (wgdErr *)ud;
	e->type = type;
	e->popped = 1;
	e->msg[0] = 0;
	if (msg) {
		strncpy(e->msg, msg, sizeof e->msg - 1);
		e->msg[sizeof e->msg - 1] = 0;
	}
}

// wgd_pop pops the error scope into err.
static inline void wgd_pop(wgdH dev, wgdErr *err) {
	err->popped = 0;
	wgpuDevicePopErrorScope(dev, wgd_err_cb, err);
}

// wgd_encoder pushes a validation error scope and creates a command
// encoder; without one it pops the scope into err and returns NULL.
static inline wgdH wgd_encoder(wgdH dev, wgdErr *err) {
	wgpuDevicePushErrorScope(dev, 0); // WGPUErrorFilter_Validation
	wgdH enc = wgpuDeviceCreateCommandEncoder(dev, NULL);
	if (!enc) wgd_pop(dev, err);
	return enc;
}

// wgd_finish_submit finishes enc, pops the error scope pushed before it
// was created and, if recording raised no error, submits it. It returns 0,
// or -1 with err set (nothing submitted).
static inline int wgd_finish_submit(wgdH dev, wgdH queue, wgdH enc, wgdErr *err) {
	wgdH cb = wgpuCommandEncoderFinish(enc, NULL);
	wgd_pop(dev, err);
	if (err->type != 0 || !cb) {
		if (cb) wgpuCommandBufferRelease(cb);
		wgpuCommandEncoderRelease(enc);
		return -1;
	}
	wgpuQueueSubmit(queue, 1, &cb);
	wgpuCommandBufferRelease(cb);
	wgpuCommandEncoderRelease(enc);
	return 0;
}

#endif
