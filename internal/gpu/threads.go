package gpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/cogentcore/webgpu/wgpu"
)

// CPUThreadsInline is the Options.CPUThreads value that runs every compute
// dispatch of a CPU adapter (llvmpipe) inline on the driver's queue thread,
// with no worker pool: LP_NUM_THREADS=0.
const CPUThreadsInline = -1

// MaxCPUThreads is the largest worker count Options.CPUThreads accepts.
// llvmpipe may cap it lower (its LP_MAX_THREADS). Each worker is two
// threads, the compute pool's and the rasterizer's: on Mesa 22.3 a device
// opened with N workers started 2N+2 threads (N = 4, 16, 20, 32), inline
// 2, the default on 2 CPUs 6.
const MaxCPUThreads = 64

// lpNumThreads is the variable llvmpipe reads its worker count from.
const lpNumThreads = "LP_NUM_THREADS"

// OptionError reports an Options field out of range; Open returns it
// before it touches the driver.
type OptionError struct {
	Field string // the Options field, e.g. "CPUThreads"
	Value int
	Want  string // the accepted values
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("gpu: %s = %d is out of range (want %s)", e.Field, e.Value, e.Want)
}

// checkCPUThreads validates Options.CPUThreads.
func checkCPUThreads(n int) error {
	if n < CPUThreadsInline || n > MaxCPUThreads {
		return &OptionError{Field: "CPUThreads", Value: n,
			Want: fmt.Sprintf("%d for inline, 0 for the driver's default, or 1..%d worker threads", CPUThreadsInline, MaxCPUThreads)}
	}
	return nil
}

// adapterEnvMu serialises the part of Open that creates the instance and
// enumerates adapters, the only place Open changes the process
// environment. llvmpipe reads LP_NUM_THREADS with getenv when an adapter
// enumeration (RequestAdapter) creates its screen, once per instance, and
// starts that many workers later, at RequestDevice; there is no other way
// to pass it a thread count. (Measured: the variable set only around
// instance creation changed nothing; set only around RequestAdapter, it
// set the worker count of the device requested after it was restored.)
// The lock keeps one Open's setting from leaking into another's
// enumeration. It guards no state of its own.
var adapterEnvMu sync.Mutex

// withAdapterEnv runs create (instance creation and adapter enumeration)
// with the environment llvmpipe should see for opts, and restores the
// environment afterwards. It returns the setting an llvmpipe adapter
// enumerated by create gets (effectiveCPUThreads, read under the lock:
// another Open may change LP_NUM_THREADS right after).
//
// os.Setenv reaches the C environment (setenv) because the package links
// cgo. Other goroutines that read or write the environment while create
// runs see the temporary value; so would a C thread that calls getenv,
// which glibc does not make safe against a concurrent setenv: open
// devices before starting such threads.
func withAdapterEnv(opts Options, create func() error) (threads int, err error) {
	adapterEnvMu.Lock()
	defer adapterEnvMu.Unlock()
	threads = effectiveCPUThreads(opts.CPUThreads)
	// Mesa's device-select layer prints a harmless XDG_RUNTIME_DIR
	// complaint on every instance; it only matters for multi-GPU
	// selection. This one stays set.
	if os.Getenv("XDG_RUNTIME_DIR") == "" && os.Getenv("NODEVICE_SELECT") == "" {
		os.Setenv("NODEVICE_SELECT", "1")
	}
	if opts.CPUThreads == 0 {
		return threads, create()
	}
	old, had := os.LookupEnv(lpNumThreads)
	v := 0 // CPUThreadsInline
	if opts.CPUThreads > 0 {
		v = opts.CPUThreads
	}
	if err := os.Setenv(lpNumThreads, strconv.Itoa(v)); err != nil {
		return 0, &Error{Op: "set " + lpNumThreads, Err: err}
	}
	defer func() {
		if had {
			os.Setenv(lpNumThreads, old)
		} else {
			os.Unsetenv(lpNumThreads)
		}
	}()
	return threads, create()
}

// isLLVMpipe reports whether an adapter is Mesa's llvmpipe (lavapipe on
// Vulkan, llvmpipe on GL), the only driver LP_NUM_THREADS reaches: a CPU
// adapter that names llvmpipe in its name or driver description
// ("llvmpipe (LLVM 15.0.6, 256 bits)").
func isLLVMpipe(cpu bool, name, driver string) bool {
	return cpu && (strings.Contains(strings.ToLower(name), "llvmpipe") || strings.Contains(strings.ToLower(driver), "llvmpipe"))
}

// appliedCPUThreads is AdapterInfo.CPUThreads for option opt on an
// llvmpipe adapter or another one, given the setting withAdapterEnv
// returned, and whether opt was ignored (set, on an adapter it does not
// reach).
func appliedCPUThreads(llvmpipe bool, opt, threads int) (applied int, ignored bool) {
	if !llvmpipe {
		return 0, opt != 0
	}
	return threads, false
}

// effectiveCPUThreads is the thread setting an llvmpipe adapter was
// created with, in Options.CPUThreads terms: the option when set, else
// what LP_NUM_THREADS said (0 when unset or unreadable, the driver's
// default of one worker per CPU).
func effectiveCPUThreads(opt int) int {
	if opt != 0 {
		return opt
	}
	n, err := strconv.Atoi(strings.TrimSpace(os.Getenv(lpNumThreads)))
	switch {
	case err != nil || n < 0:
		return 0
	case n == 0:
		return CPUThreadsInline
	}
	return n
}

// isLLVMpipe reports whether the device runs on llvmpipe.
func (d *Device) isLLVMpipe() bool {
	return isLLVMpipe(d.info.AdapterType == wgpu.AdapterTypeCPU.String(), d.info.Name, d.info.Driver)
}
