package wgdelegate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// MemoryStats reports what a loaded model allocated.
type MemoryStats = graph.MemoryStats

// RecordStats counts how a model's Executes kept their recordings in step
// with their inputs: full re-recordings for new input shapes, and
// refreshes that only rewrote the uniform params of the dispatches whose
// SymInt values (such as a decoder's input_pos) changed.
type RecordStats = graph.RecordStats

// ErrUnknownFormat is returned when a model file is neither a .pte program
// nor a VH00 delegate blob.
var ErrUnknownFormat = errors.New("wgdelegate: not a .pte program or a VH00 delegate blob")

// DeviceOptions configure OpenDevice.
type DeviceOptions struct {
	Logger *slog.Logger
	// WGPULogLevel enables wgpu-native's own stderr log (1 error .. 5 trace).
	WGPULogLevel int
	// HugePages asks Linux for transparent huge pages for large weight
	// buffers on a CPU adapter (lavapipe), which makes filling them up to
	// 4x cheaper, except on VMs that hand free memory back to their host,
	// where a fresh huge page can cost several times more. Off by default;
	// the README's "Loading" section has the numbers.
	HugePages bool
	// CPUThreads sets the compute worker threads of a CPU adapter
	// (Mesa's llvmpipe, lavapipe on Vulkan), which wakes its thread pool
	// for every dispatch: 0 keeps the driver's default (LP_NUM_THREADS
	// from the environment when set, else one worker per CPU), N in
	// 1..MaxCPUThreads asks for N workers, and CPUThreadsInline runs every
	// dispatch on the driver's own thread. Inline makes graphs of many
	// small dispatches several times faster (a tiny dispatch: about 2-9
	// µs against 45-85 µs with the pool, 2 vCPUs) but runs large kernels
	// on one core; the README's "Measured on lavapipe" section has the
	// numbers.
	// Other values are an *OptionError. The setting is per Device; other
	// adapters ignore it (Device.CPUThreads then reports 0).
	CPUThreads int
}

// CPUThreadsInline is the DeviceOptions.CPUThreads value that runs a CPU
// adapter's dispatches inline, with no worker pool (LP_NUM_THREADS=0).
const CPUThreadsInline = gpu.CPUThreadsInline

// MaxCPUThreads is the largest worker count DeviceOptions.CPUThreads
// accepts.
const MaxCPUThreads = gpu.MaxCPUThreads

// Device is a WebGPU device. Pipelines compiled for one model are shared by
// every model loaded on the same Device.
type Device struct {
	d   *gpu.Device
	log *slog.Logger

	mu     sync.Mutex
	models map[*Model]struct{} // loaded on d and not closed
	closed bool
}

// OpenDevice opens the default adapter (Vulkan first). Pass the device to
// Open or Load with WithDevice.
func OpenDevice(ctx context.Context, opts DeviceOptions) (*Device, error) {
	d, err := gpu.Open(ctx, gpu.Options{Logger: opts.Logger, WGPULogLevel: opts.WGPULogLevel, HugePages: opts.HugePages,
		CPUThreads: opts.CPUThreads})
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Device{d: d, log: log}, nil
}

// AdapterName describes the adapter, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
func (d *Device) AdapterName() string {
	info := d.d.Info()
	if info.Name == "" || strings.HasPrefix(info.Name, "0x") {
		// lavapipe reports its name as "0x0"; the driver string says more.
		return info.Driver + " (" + info.Backend + ")"
	}
	if info.Driver != "" {
		return info.Name + " (" + info.Driver + ", " + info.Backend + ")"
	}
	return info.Name + " (" + info.Backend + ")"
}

// KernelFamily is the kernel family a load with choices k records with on
// d: k.Family unless it is KernelsAuto, else the one d's adapter class
// implies (KernelsCPU for a CPU adapter, KernelsGPU for a GPU).
func (d *Device) KernelFamily(k KernelConfig) KernelFamily {
	return ops.Resolve(k, graph.DeviceProfile(d.d))
}

// CPUThreads is the llvmpipe thread setting the device was opened with,
// in DeviceOptions.CPUThreads terms: CPUThreadsInline, a worker count, or
// 0 for the driver's default. A user's LP_NUM_THREADS counts when the
// option was 0. It is 0 on every other adapter.
func (d *Device) CPUThreads() int { return d.d.Info().CPUThreads }

// FlushesSubnormals reports whether the adapter's float32 arithmetic
// flushes subnormal values (magnitudes below 2^-126) to zero, as WGSL
// allows; Open probes it with a tiny dispatch. Where it does, an
// arithmetic result whose exact value is subnormal may come out as ±0 and
// a subnormal input may act as ±0 in arithmetic; comparisons, minimum and
// maximum, where, abs, neg and copies stay exact, and nothing else differs
// (README, "Numerics on every adapter").
func (d *Device) FlushesSubnormals() bool { return d.d.Info().Subnormals.Flushes() }

// Subnormals describes what the adapter does with subnormal values:
// "kept", or "flushed (operands)", "flushed (results)", "flushed
// (operands and results)".
func (d *Device) Subnormals() string { return d.d.Info().Subnormals.String() }

// Limits are the device limits a model's tensors and dispatches must fit.
type Limits struct {
	MaxBufferSize                    uint64
	MaxStorageBufferBindingSize      uint64
	MaxComputeWorkgroupsPerDimension uint32
}

// DefaultLimits are WebGPU's default limits, which every adapter supports.
var DefaultLimits = Limits{
	MaxBufferSize:                    256 << 20,
	MaxStorageBufferBindingSize:      128 << 20,
	MaxComputeWorkgroupsPerDimension: 65535,
}

// Limits returns the limits the device was created with.
func (d *Device) Limits() Limits {
	l := d.d.Limits()
	return Limits{MaxBufferSize: l.MaxBufferSize, MaxStorageBufferBindingSize: l.MaxStorageBufferBindingSize,
		MaxComputeWorkgroupsPerDimension: l.MaxComputeWorkgroupsPerDimension}
}

// Close closes every Model still loaded on the device (their Executes,
// InputInfo and OutputInfo then return an error matching ErrClosed that
// says the device was closed), then releases the device. Loads on a
// closed device fail with ErrClosed. Close is idempotent.
func (d *Device) Close() error {
	d.mu.Lock()
	d.closed = true
	open := make([]*Model, 0, len(d.models))
	for m := range d.models {
		open = append(open, m)
	}
	d.mu.Unlock()
	for _, m := range open {
		m.devClosed.Store(true)
		m.Close()
	}
	return d.d.Close()
}

// errDeviceClosed is a load's error on a closed Device.
var errDeviceClosed = fmt.Errorf("wgdelegate: the device is closed: %w", ErrClosed)

// usable is ErrClosed once d is closed.
func (d *Device) usable() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errDeviceClosed
	}
	return nil
}

// register records m, just loaded on d, so that Close closes it; a
// closed device is ErrClosed.
func (d *Device) register(m *Model) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errDeviceClosed
	}
	if d.models == nil {
		d.models = map[*Model]struct{}{}
	}
	d.models[m] = struct{}{}
	return nil
}

// unregister forgets m (closed).
func (d *Device) unregister(m *Model) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.models, m)
}

// LoadFile is Open(ctx, path, WithDevice(d), WithDataFiles(dataFiles...)).
func (d *Device) LoadFile(ctx context.Context, path string, dataFiles ...string) (*Model, error) {
	return Open(ctx, path, WithDevice(d), WithDataFiles(dataFiles...))
}

// Load is Load(ctx, model, WithDevice(d), WithData(ptds...)).
func (d *Device) Load(ctx context.Context, model []byte, ptds ...[]byte) (*Model, error) {
	return Load(ctx, model, WithDevice(d), WithData(ptds...))
}

// outputHostTypes maps the delegate call's output EValues (after the
// graph's inputs) to dtypes; nil when they do not line up with the graph.
func outputHostTypes(g *serialization.Graph, io []serialization.EValueInfo) []serialization.DataType {
	nIn, nOut := len(g.InputIDs), len(g.OutputIDs)
	if io == nil || len(io) != nIn+nOut {
		return nil
	}
	out := make([]serialization.DataType, nOut)
	for i := range out {
		a := io[nIn+i]
		dt, ok := serialization.ScalarTypeDataType(a.ScalarType)
		if a.Kind != "Tensor" || !ok {
			dt = serialization.Unset
		}
		out[i] = dt
	}
	return out
}

// Format is what Detect finds in a model file.
type Format int

// Formats.
const (
	FormatUnknown Format = iota
	FormatBlob           // a VH00 delegate blob
	FormatProgram        // an ExecuTorch .pte program
)

// Detect looks at the identifier bytes 4..8 of a model file.
func Detect(b []byte) Format {
	if len(b) < 8 {
		return FormatUnknown
	}
	id := string(b[4:8])
	switch {
	case id == "VH00":
		return FormatBlob
	case id[0] == 'E' && id[1] == 'T':
		return FormatProgram
	}
	return FormatUnknown
}
