package gpu

/*
#include <stdint.h>
#include <string.h>

// Mirrors of webgpu.h / wgpu.h (wgpu-native bundled with cogentcore/webgpu
// v0.23.0): WGPUChainedStruct, WGPUInstanceExtras, WGPUInstanceDescriptor.
typedef struct wgdChained { const struct wgdChained *next; uint32_t sType; } wgdChained;
typedef struct {
	wgdChained chain;
	uint32_t backends;
	uint32_t flags;
	uint32_t dx12ShaderCompiler;
	uint32_t gles3MinorVersion;
	const char *dxilPath;
	const char *dxcPath;
} wgdInstanceExtras;
typedef struct { const wgdChained *nextInChain; } wgdInstanceDescriptor;

// Resolved from libwgpu_native.a, which the wgpu package links.
extern void *wgpuCreateInstance(const wgdInstanceDescriptor *descriptor);

static void *wgd_create_instance(uint32_t backends) {
	wgdInstanceExtras ex;
	memset(&ex, 0, sizeof ex);
	ex.chain.sType = 0x00030006; // WGPUSType_InstanceExtras
	ex.backends = backends;
	wgdInstanceDescriptor d;
	d.nextInChain = &ex.chain;
	return wgpuCreateInstance(&d);
}
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
)

// createInstance creates a WebGPU instance for the given backends.
//
// Binding bug: wgpu.CreateInstance fills its WGPUInstanceExtras from an
// unzeroed C.malloc, so flags, gles3MinorVersion and the DXIL/DXC path
// pointers hold garbage. A second instance in one process then often aborts
// ("Unknown gles3 minor version"). This builds the descriptor zeroed and
// wraps the handle in the binding's type, whose only field is the C handle.
func createInstance(backends wgpu.InstanceBackend) (*wgpu.Instance, error) {
	ref := C.wgd_create_instance(C.uint32_t(backends))
	if ref == nil {
		return nil, errors.New("wgpuCreateInstance returned null")
	}
	inst := new(wgpu.Instance)
	*(*unsafe.Pointer)(unsafe.Pointer(inst)) = ref
	return inst, nil
}
