package gpu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// ErrClosed is returned by operations on a closed Device.
var ErrClosed = errors.New("gpu: device is closed")

// Error is a failure reported by the WebGPU implementation, wrapped with the
// operation that produced it.
type Error struct {
	Op  string
	Err error
}

func (e *Error) Error() string { return "gpu: " + e.Op + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Options configure Open.
type Options struct {
	// Logger receives debug information about the adapter. Nil means slog.Default().
	Logger *slog.Logger
	// WGPULogLevel, when non-zero, enables the binding's own stderr logging at
	// that level (1 error .. 5 trace). Zero keeps it silent.
	WGPULogLevel int
	// AllBackends asks for every backend instead of Vulkan first.
	AllBackends bool
	// StagedUploads turns off direct uploads (see Device.NewBufferData):
	// every buffer's initial bytes then go through a queue write.
	StagedUploads bool
	// NoPrefault turns off prefaulting large upload buffers on a CPU
	// adapter (see Device.PrepareUpload); a driver-thread clear prepares
	// them instead.
	NoPrefault bool
	// HugePages advises transparent huge pages (Linux) for large upload
	// buffers on a CPU adapter (see Device.BeginUpload). First-touching
	// 64 MiB then took 7-8 ms instead of 34-37 ms, but on a VM that
	// reports free memory to its host (Firecracker, here) a fresh huge page
	// can cost several times more than its 512 small ones: a 256 MiB warm
	// load went from 119 to 330 ms (median of 5). Off by default.
	HugePages bool
	// CPUThreads sets the compute worker threads of a CPU adapter
	// (Mesa's llvmpipe, lavapipe on Vulkan), which runs each dispatch's
	// workgroups on a thread pool and wakes the pool for every dispatch:
	//
	//   - 0: the driver's default, which is LP_NUM_THREADS from the
	//     environment when set, else one worker per CPU;
	//   - N in 1..MaxCPUThreads: N workers (LP_NUM_THREADS=N);
	//   - CPUThreadsInline (-1): no pool; every dispatch runs on the
	//     driver's queue thread (LP_NUM_THREADS=0).
	//
	// Inline cuts a tiny dispatch from about 45-85 µs to 2-9 µs on a
	// 2-vCPU host, which makes graphs of many small kernels several times
	// faster, but a large kernel then runs on one core. Other values are
	// an *OptionError. The option applies to the instance this Open
	// creates (Open sets LP_NUM_THREADS while it enumerates adapters, see
	// withAdapterEnv); other adapters ignore it, which Open logs, and
	// AdapterInfo.CPUThreads reports what was applied.
	CPUThreads int
}

// AdapterInfo describes the adapter a Device runs on.
type AdapterInfo struct {
	Name        string
	Driver      string
	Backend     string
	AdapterType string
	VendorID    uint32
	DeviceID    uint32
	// CPUThreads is the llvmpipe thread setting the adapter was created
	// with, in Options.CPUThreads terms (CPUThreadsInline, a worker count,
	// or 0 for the driver's default of one worker per CPU); always 0 on
	// other adapters.
	CPUThreads int
	// Subnormals is what the adapter's float32 arithmetic does with
	// subnormal values, probed by a dispatch at Open.
	Subnormals Subnormals
}

// Device owns a WebGPU instance, adapter, device and queue, and the caches of
// shader modules and pipelines shared by every graph built on it.
type Device struct {
	log        *slog.Logger
	inst       *wgpu.Instance
	adapter    *wgpu.Adapter
	dev        *wgpu.Device
	queue      *wgpu.Queue
	limits     wgpu.Limits
	info       AdapterInfo
	live       liveCounts
	raw        rawState
	lost       bool           // the device is lost (lostReason is set)
	lostReason atomic.Value   // string: why; set by Destroy or a device-lost error
	pad        [4]byte        // Write's tail word (under mu)
	idleCell   unsafe.Pointer // C status cell for queue-idle waits
	flush      writeFlush     // bounds the queue writes in flight (buffer.go)
	timestamps bool           // the TimestampQuery feature is enabled (see profile.go)
	direct     bool           // NewBufferData maps storage buffers at creation (buffer.go)
	prefault   bool           // large uploads are prefaulted (a CPU adapter, direct uploads; buffer.go)
	hugePages  bool           // BeginUpload advises huge pages (prefault and Options.HugePages)
	noPopulate atomic.Bool    // the kernel lacks MADV_POPULATE_WRITE
	prefaults  sync.WaitGroup // PrepareUpload's goroutines
	prof       profState

	// mu serialises queue use (submit, write, map) and cache access. The
	// WebGPU objects are not documented as safe for concurrent use through
	// this binding, and one queue is strictly ordered anyway.
	mu          sync.Mutex
	closed      bool
	creating    sync.WaitGroup // Pipelines calls compiling outside mu
	pipeHits    atomic.Int64
	pipeCreated atomic.Int64
	queueWrites atomic.Int64 // QueueWrites
	pipelines   map[string]*Pipeline
}

var logLevelOnce sync.Once

// Open creates a Device on the default adapter, preferring Vulkan.
func Open(ctx context.Context, opts Options) (*Device, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	// The binding's init installs a stderr logger at Warn; turn it off (or to
	// the requested level) before anything can log.
	wgpu.SetLogLevel(wgpu.LogLevel(opts.WGPULogLevel))
	if err := checkCPUThreads(opts.CPUThreads); err != nil {
		return nil, err
	}

	d := &Device{log: log, pipelines: map[string]*Pipeline{}}
	var ad *wgpu.Adapter
	threads, err := withAdapterEnv(opts, func() error {
		var err error
		ad, err = d.openAdapter(opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	d.adapter = ad
	ai := ad.GetInfo()
	d.info = AdapterInfo{Name: ai.Name, Driver: ai.DriverDescription, Backend: ai.BackendType.String(),
		AdapterType: ai.AdapterType.String(), VendorID: ai.VendorId, DeviceID: ai.DeviceId}
	var ignored bool
	d.info.CPUThreads, ignored = appliedCPUThreads(isLLVMpipe(ai.AdapterType == wgpu.AdapterTypeCPU, ai.Name, ai.DriverDescription), opts.CPUThreads, threads)
	if ignored {
		log.Info("gpu: CPUThreads ignored: the adapter is not llvmpipe", "adapter", ai.Name, "type", ai.AdapterType.String(), "cpuThreads", opts.CPUThreads)
	}

	limits := ad.GetLimits().Limits
	// Binding bug: MaxPushConstantSize is read uninitialised. We use no push
	// constants, so ask for none.
	limits.MaxPushConstantSize = 0
	// Timestamp queries (for Program.Profile) only where the adapter has them.
	var features []wgpu.FeatureName
	timestamps := ad.HasFeature(wgpu.FeatureNameTimestampQuery)
	if timestamps {
		features = append(features, wgpu.FeatureNameTimestampQuery)
	}
	// Direct uploads only where device memory is host memory (a CPU or an
	// integrated adapter): there a mappable storage buffer costs the
	// kernels nothing, while on a discrete GPU it would live in slow
	// host-visible memory.
	direct := !opts.StagedUploads && ad.HasFeature(wgpu.NativeFeatureMappablePrimaryBuffers) &&
		(ai.AdapterType == wgpu.AdapterTypeCPU || ai.AdapterType == wgpu.AdapterTypeIntegratedGPU)
	if direct {
		features = append(features, wgpu.NativeFeatureMappablePrimaryBuffers)
	}
	dev, err := ad.RequestDevice(&wgpu.DeviceDescriptor{
		Label:            "wgdelegate",
		RequiredFeatures: features,
		RequiredLimits:   &wgpu.RequiredLimits{Limits: limits},
	})
	d.timestamps = err == nil && dev != nil && timestamps
	d.direct = err == nil && dev != nil && direct
	d.prefault = prefaultSupported && d.direct && !opts.NoPrefault && ai.AdapterType == wgpu.AdapterTypeCPU
	d.hugePages = d.prefault && opts.HugePages
	if err != nil || dev == nil {
		ad.Release()
		d.inst.Release()
		if err == nil {
			err = errors.New("no device")
		}
		return nil, &Error{Op: "request device", Err: err}
	}
	d.dev = dev
	d.queue = dev.GetQueue()
	if err := d.initRaw(); err != nil {
		d.freeRaw()
		d.queue.Release()
		dev.Release()
		ad.Release()
		d.inst.Release()
		return nil, &Error{Op: "open", Err: err}
	}
	d.limits = dev.GetLimits().Limits
	if d.info.Subnormals, err = d.probeSubnormals(ctx); err != nil {
		d.Close()
		return nil, &Error{Op: "open", Err: err}
	}
	log.Debug("gpu: device opened", "adapter", d.info.Name, "driver", d.info.Driver, "backend", d.info.Backend,
		"maxStorageBinding", d.limits.MaxStorageBufferBindingSize, "maxBuffer", d.limits.MaxBufferSize, "directUploads", d.direct,
		"cpuThreads", d.info.CPUThreads, "subnormals", d.info.Subnormals)
	return d, nil
}

// openAdapter creates d.inst and returns its adapter, Vulkan first; it
// runs inside withAdapterEnv.
func (d *Device) openAdapter(opts Options) (*wgpu.Adapter, error) {
	backends := wgpu.InstanceBackendVulkan
	if opts.AllBackends {
		backends = wgpu.InstanceBackendPrimary
	}
	inst, err := createInstance(backends)
	if err != nil {
		return nil, &Error{Op: "create instance", Err: err}
	}
	d.inst = inst
	ad, err := d.inst.RequestAdapter(&wgpu.RequestAdapterOptions{PowerPreference: wgpu.PowerPreferenceHighPerformance})
	if (err != nil || ad == nil) && !opts.AllBackends {
		// No Vulkan adapter: fall back to whatever the platform offers.
		d.inst.Release()
		if d.inst, err = createInstance(wgpu.InstanceBackendPrimary); err != nil {
			return nil, &Error{Op: "create instance", Err: err}
		}
		ad, err = d.inst.RequestAdapter(&wgpu.RequestAdapterOptions{PowerPreference: wgpu.PowerPreferenceHighPerformance})
	}
	if err != nil || ad == nil {
		d.inst.Release()
		if err == nil {
			err = errors.New("no adapter")
		}
		return nil, &Error{Op: "request adapter", Err: fmt.Errorf("%w (is a Vulkan driver such as mesa-vulkan-drivers installed?)", err)}
	}
	return ad, nil
}

// Info describes the adapter.
func (d *Device) Info() AdapterInfo { return d.info }

// Limits returns the limits the device was created with.
func (d *Device) Limits() wgpu.Limits { return d.limits }

// ErrDeviceLost is returned by every operation once the device is lost
// (driver reset, Destroy). The process stays alive; open a new Device.
var ErrDeviceLost = errors.New("gpu: device lost")

// checkLostLocked returns an *Error wrapping ErrDeviceLost once the device
// is lost. Callers hold d.mu.
func (d *Device) checkLostLocked(op string) error {
	if d.lost {
		msg, _ := d.lostReason.Load().(string)
		return &Error{Op: op, Err: fmt.Errorf("%w (%s)", ErrDeviceLost, msg)}
	}
	if r, ok := d.lostReason.Load().(string); ok {
		d.lost = true
		return &Error{Op: op, Err: fmt.Errorf("%w (%s)", ErrDeviceLost, r)}
	}
	return nil
}

// Lost reports whether the device has been lost.
func (d *Device) Lost() bool { return d.lostReason.Load() != nil }

// liveCounts counts the GPU objects a device has handed out and not yet
// released; soak tests compare them with a baseline.
type liveCounts struct {
	buffers, bufferBytes, bindGroups atomic.Int64
}

// LiveObjects is a snapshot of the GPU objects alive on a device.
type LiveObjects struct {
	Buffers       int64 // buffers created and not released
	BufferBytes   int64 // their total size
	BindGroups    int64 // bind groups created and not released
	Pipelines     int   // cached compute pipelines (live until Close)
	ShaderModules int   // cached shader modules (live until Close)
}

// LiveObjects reports the device's live GPU objects.
func (d *Device) LiveObjects() LiveObjects {
	s, p := d.CacheStats()
	return LiveObjects{Buffers: d.live.buffers.Load(), BufferBytes: d.live.bufferBytes.Load(),
		BindGroups: d.live.bindGroups.Load(), Pipelines: p, ShaderModules: s}
}

// CacheStats reports the sizes of the shader module and pipeline caches.
func (d *Device) CacheStats() (shaders, pipelines int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// Every pipeline owns its shader module.
	return len(d.pipelines), len(d.pipelines)
}

// Close releases the cached pipelines and the device. Buffers and bind groups
// created from it must be released first by their owners.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.creating.Wait() // pipelines being compiled without the lock
	d.prefaults.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, p := range d.pipelines {
		p.release()
		delete(d.pipelines, k)
	}
	d.freeRaw()
	d.queue.Release()
	d.dev.Release()
	// idleCell and the flush cells are not freed: a wait cancelled by its
	// context may leave a callback that the device's teardown still runs.
	d.adapter.Release()
	d.inst.Release()
	return nil
}

// Pipeline is a compute pipeline and its explicit bind group layout.
type Pipeline struct {
	Key      string // content hash of source, entry point and layout
	Layout   []shaders.Binding
	pipe     *wgpu.ComputePipeline
	bgl      *wgpu.BindGroupLayout
	plLayout *wgpu.PipelineLayout
	mod      *wgpu.ShaderModule
	// prefetched: made by Prefetch and not yet looked up by Pipelines, whose
	// first lookup then counts it as created rather than as a hit (under
	// Device.mu).
	prefetched bool
}

func (p *Pipeline) release() {
	p.pipe.Release()
	p.mod.Release()
	p.plLayout.Release()
	p.bgl.Release()
}

// PipelineKey is the content-stable identity of a pipeline: the SHA-256 of
// the final WGSL source, the entry point and the binding layout.
func PipelineKey(source, entry string, layout []shaders.Binding) string {
	h := sha256.New()
	h.Write([]byte(source))
	h.Write([]byte{0})
	h.Write([]byte(entry))
	h.Write([]byte{0})
	for _, b := range layout {
		h.Write([]byte{byte(b)})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sourceKey(source string) string {
	s := sha256.Sum256([]byte(source))
	return hex.EncodeToString(s[:])
}

// PipelineSpec describes one compute pipeline.
type PipelineSpec struct {
	Label, Source, Entry string
	Layout               []shaders.Binding
}

// Pipeline returns the cached pipeline for (source, entry, layout), creating
// it on first use.
func (d *Device) Pipeline(label, source, entry string, layout []shaders.Binding) (*Pipeline, error) {
	ps, err := d.Pipelines([]PipelineSpec{{Label: label, Source: source, Entry: entry, Layout: layout}})
	if err != nil {
		return nil, err
	}
	return ps[0], nil
}

// QueueWrites counts the queue writes (Write calls, each chunk of a large
// one counted) made on the device so far: what a decode step uploads.
func (d *Device) QueueWrites() int64 { return d.queueWrites.Load() }

// PipelineStats counts pipeline cache lookups: Hits found a pipeline,
// Created made one.
type PipelineStats struct{ Hits, Created int64 }

// PipelineStats reports the device's pipeline cache counters.
func (d *Device) PipelineStats() PipelineStats {
	return PipelineStats{Hits: d.pipeHits.Load(), Created: d.pipeCreated.Load()}
}

// Pipelines returns the pipelines for specs (in order) from the device's
// cache, creating the missing ones concurrently: on lavapipe creation is
// shader compilation, the bulk of a cold load.
func (d *Device) Pipelines(specs []PipelineSpec) ([]*Pipeline, error) {
	return d.pipelinesFor(specs, false)
}

// Prefetch creates the pipelines for specs that the cache lacks, one after
// another on the calling goroutine, so that a later Pipelines call finds
// them: a graph compiles its kernels in the background while its load goes
// on. It returns the pipelines, nil where creation failed. Pipelines made
// here count as created; the first Pipelines lookup of each does not count
// as a hit. Errors are dropped: the Pipelines call that needs the pipeline
// meets them again.
func (d *Device) Prefetch(specs []PipelineSpec) []*Pipeline {
	out, err := d.pipelinesFor(specs, true)
	if err != nil {
		out = make([]*Pipeline, len(specs))
		d.mu.Lock()
		for i, sp := range specs {
			out[i] = d.pipelines[PipelineKey(sp.Source, sp.Entry, sp.Layout)]
		}
		d.mu.Unlock()
	}
	return out
}

func (d *Device) pipelinesFor(specs []PipelineSpec, prefetch bool) ([]*Pipeline, error) {
	out := make([]*Pipeline, len(specs))
	keys := make([]string, len(specs))
	var missing []int // first index of each missing key
	seen := map[string]bool{}
	var claimed map[string]bool
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, ErrClosed
	}
	if err := d.checkLostLocked("create pipelines"); err != nil {
		d.mu.Unlock()
		return nil, err
	}
	for i, sp := range specs {
		keys[i] = PipelineKey(sp.Source, sp.Entry, sp.Layout)
		if p, ok := d.pipelines[keys[i]]; ok {
			out[i] = p
			switch {
			case prefetch:
			case p.prefetched:
				// Made for this caller ahead of time: like a pipeline
				// created here, neither it nor its repeats are hits.
				p.prefetched = false
				if claimed == nil {
					claimed = map[string]bool{}
				}
				claimed[keys[i]] = true
			case !claimed[keys[i]]:
				d.pipeHits.Add(1)
			}
		} else if !seen[keys[i]] {
			seen[keys[i]] = true
			missing = append(missing, i)
		}
	}
	d.creating.Add(1)
	d.mu.Unlock()
	defer d.creating.Done()

	made := make([]*Pipeline, len(missing))
	errs := make([]error, len(missing))
	workers := min(len(missing), runtime.GOMAXPROCS(0))
	if prefetch {
		workers = min(len(missing), 1)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1)) - 1
				if j >= len(missing) {
					return
				}
				made[j], errs[j] = d.createPipeline(keys[missing[j]], specs[missing[j]])
			}
		}()
	}
	wg.Wait()

	d.mu.Lock()
	defer d.mu.Unlock()
	var firstErr error
	for j, p := range made {
		if errs[j] != nil {
			if firstErr == nil {
				firstErr = errs[j]
			}
			continue
		}
		if old, ok := d.pipelines[p.Key]; ok || d.closed {
			p.release() // another caller won the race, or the device closed
			if ok {
				made[j] = old
			}
			continue
		}
		p.prefetched = prefetch
		d.pipelines[p.Key] = p
		d.pipeCreated.Add(1)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if d.closed {
		return nil, ErrClosed
	}
	for i := range specs {
		if out[i] == nil {
			out[i] = d.pipelines[keys[i]]
		}
	}
	return out, nil
}

// bufferBindingType is the WebGPU buffer binding type of a kernel binding.
// It is the only place a shaders.Binding becomes a wgpu type, so shaders,
// and the packages that only render kernels, need not link the cgo wgpu
// package.
func bufferBindingType(b shaders.Binding) wgpu.BufferBindingType {
	switch b {
	case shaders.ReadWrite:
		return wgpu.BufferBindingTypeStorage
	case shaders.Uniform:
		return wgpu.BufferBindingTypeUniform
	}
	return wgpu.BufferBindingTypeReadOnlyStorage
}

// createPipeline compiles one pipeline; it runs without d.mu (Close waits
// for it through d.creating).
func (d *Device) createPipeline(key string, sp PipelineSpec) (*Pipeline, error) {
	label := sp.Label
	mod, err := d.dev.CreateShaderModule(&wgpu.ShaderModuleDescriptor{
		Label:          label,
		WGSLDescriptor: &wgpu.ShaderModuleWGSLDescriptor{Code: sp.Source},
	})
	if err != nil {
		return nil, &Error{Op: "create shader module " + label, Err: err}
	}
	entries := make([]wgpu.BindGroupLayoutEntry, len(sp.Layout))
	for i, b := range sp.Layout {
		entries[i] = wgpu.BindGroupLayoutEntry{Binding: uint32(i), Visibility: wgpu.ShaderStageCompute,
			Buffer: wgpu.BufferBindingLayout{Type: bufferBindingType(b)}}
	}
	bgl, err := d.dev.CreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Label: label, Entries: entries})
	if err != nil {
		mod.Release()
		return nil, &Error{Op: "create bind group layout " + label, Err: err}
	}
	pl, err := d.dev.CreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{Label: label, BindGroupLayouts: []*wgpu.BindGroupLayout{bgl}})
	if err != nil {
		bgl.Release()
		mod.Release()
		return nil, &Error{Op: "create pipeline layout " + label, Err: err}
	}
	pipe, err := d.dev.CreateComputePipeline(&wgpu.ComputePipelineDescriptor{
		Label:   label,
		Layout:  pl,
		Compute: wgpu.ProgrammableStageDescriptor{Module: mod, EntryPoint: sp.Entry},
	})
	if err != nil {
		pl.Release()
		bgl.Release()
		mod.Release()
		return nil, &Error{Op: "create compute pipeline " + label, Err: err}
	}
	return &Pipeline{Key: key, Layout: append([]shaders.Binding(nil), sp.Layout...), pipe: pipe, bgl: bgl, plLayout: pl, mod: mod}, nil
}
