package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/prepack"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// PrepackOp is the op whose sources may be deferred.
const PrepackOp = prepack.Op

// maxTensorBytes caps one tensor's size before anything is allocated.
const maxTensorBytes = 1 << 40

// Options configure Load.
type Options struct {
	// NamedData resolves named constants (the .pte's named data merged with
	// any .ptd files). May be nil when every constant is inline.
	NamedData serialization.NamedData
	Logger    *slog.Logger
	// OutputHostTypes, when set, gives the dtype the caller expects for each
	// output, as a .pte program's delegate call declares it. An int32 or
	// float32 device tensor whose host type is int64 or float64 (the
	// exporter's default 64-bit downcast) is widened on readback. Other
	// mismatches are ignored and the device dtype is returned.
	OutputHostTypes []serialization.DataType
	// MemoryLimit caps the tensor bytes a graph may allocate, checked before
	// any buffer is created, so a hostile or mistaken blob cannot exhaust the
	// host (lavapipe's buffers are host memory). 0 means DefaultMemoryLimit.
	MemoryLimit int64
	// SkipWarmup skips the warm-up run at the end of a load (each pipeline
	// dispatched once, one workgroup, so that the first Execute pays no
	// driver first-use costs such as a kernel compile).
	SkipWarmup bool
	// PackedCache is the path of a packed-weight cache file (see package
	// prepack), shared by every graph of the process; "" for none.
	PackedCache string
	// Kernels are the load's kernel choices (the zero value: defaults).
	Kernels ops.Config
}

// DefaultMemoryLimit is the tensor memory a graph may use unless
// Options.MemoryLimit says otherwise.
const DefaultMemoryLimit = 8 << 30

// tensorState is a tensor value as built.
type tensorState struct {
	dtype    serialization.DataType
	dims     []int64
	numel    int64
	nbytes   int64
	constant bool
	deferred bool
	constID  int32
	memObj   int32
	buf      *gpu.Buffer // nil when deferred
	// shared: a transient tensor, one the exporter placed in a shared
	// object (memObj). It is bound to a buffer after each recording, from
	// the lifetimes the recorded dispatches give it (bindTransients), so
	// buf is nil during the first recording and may change at each.
	shared bool
	// materialized: a prepacked (persistent) buffer filled at load.
	materialized bool
	// live is the current shape (see ops.Tensor); liveNumel its size.
	live      []int64
	liveNumel int64
}

// liveBytes is the byte size of the live shape.
func (ts *tensorState) liveBytes() int64 { return ts.liveNumel * int64(ts.dtype.Size()) }

// setLive sets the live shape.
func (ts *tensorState) setLive(dims []int64, numel int64) {
	ts.live = append(ts.live[:0], dims...)
	ts.liveNumel = numel
}

// outputSlot is one graph output and its reused staging buffer.
type outputSlot struct {
	id      int32
	staging *gpu.Buffer            // nil for a SymInt output
	host    serialization.DataType // dtype returned to the caller
	read    int                    // index into reads, -1 for a SymInt
}

// MemoryStats mirrors the reference runtime's memory statistics.
type MemoryStats struct {
	NumTensors                int
	UnsharedTensorBufferBytes int64
	SharedBufferBytes         int64
	NumSharedObjects          int
	TensorBufferBytes         int64
	StagingBufferBytes        int64
	UniformBufferBytes        int64
	NumDispatches             int
	NumCachedPipelines        int
	NumCachedShaders          int
	// NumDeferredConstants counts the weights that got no buffer of their
	// own (prepack.Deferred): constants that only feed prepack or are only
	// read packed, and prepack outputs only read packed;
	// DeferredConstantBytes is what they would have used.
	NumDeferredConstants  int
	DeferredConstantBytes int64
	// PackedWeightBytes is the size of the buffers holding weights in the
	// layouts kernels read (packed at load or from the packed-weight
	// cache); PersistentCopyBytes that of writable copies of constants an
	// op updates in place. Neither is part of the memory plan.
	PackedWeightBytes   int64
	PersistentCopyBytes int64
	// MovedTensors counts the tensors the last recording bound to another
	// shared object than their mem_obj_id: a record-time rewrite (a fused
	// kernel) made a tensor live together with one the exporter let share
	// its buffer, and one of them moved to a free object (see package
	// memplan). AddedSharedObjects and AddedSharedBytes are the shared
	// objects created beyond the exporter's plan because none was free
	// (0 for every chain the project fuses); they are included in
	// NumSharedObjects and SharedBufferBytes.
	MovedTensors       int
	AddedSharedObjects int
	AddedSharedBytes   int64
}

// TotalBytes is tensor + staging + uniform + packed-weight + persistent
// copy bytes: all the device memory the graph holds.
func (s MemoryStats) TotalBytes() int64 {
	return s.TensorBufferBytes + s.StagingBufferBytes + s.UniformBufferBytes + s.PackedWeightBytes + s.PersistentCopyBytes
}

// WebGPUGraph is a loaded delegate graph, ready to Execute.
type WebGPUGraph struct {
	dev   *gpu.Device
	log   *slog.Logger
	graph *serialization.Graph

	tensors []*tensorState  // per value id; nil for non-tensors
	sym     map[int32]int64 // live SymInt values, by value id
	shared  map[int32]*gpu.Buffer
	owned   []*gpu.Buffer // every buffer this graph created, for Close
	groups  []*gpu.BindGroup
	records []gpu.Dispatch
	inputs  []int32
	outputs []outputSlot
	reads   []gpu.Readback
	prog    *gpu.Program // records and reads, prepared for replay
	// per record: the chain index of its op and its kernel's name
	dispatchOps     []int
	dispatchKernels []string
	scratch         [][]byte // per input, for int64/float64 narrowing
	stats           MemoryStats

	// build-time only
	an    *Analysis
	plan  *memplan.Plan
	pend  []pendingDispatch
	arena []byte
	// prefetch compiles pipelines in the background during a load (nil
	// otherwise; see prefetch.go).
	prefetch *pipelinePrefetch
	// warmEarly: pipelines are warmed up as soon as they are compiled
	// (during a load, unless SkipWarmup or SymInt inputs); warmed holds
	// the pipelines warmed up so far, which the final warm-up leaves out.
	warmEarly bool
	warmed    map[*gpu.Pipeline]bool
	// scratch buffers of the early warm-ups
	warmIn  *gpu.Buffer
	warmOut []*gpu.Buffer
	// uploads deferred and not yet finished, and the bytes finishUploads
	// had the loading goroutine and the driver's thread touch
	uploads          []pendingUpload
	upMain, upDriver int64

	// dynamic shapes
	arenaBuf   *gpu.Buffer
	replay     bool      // re-recording: constants are already written
	recordedIn [][]int64 // per input, the key the records were built for
	liveKey    []int64   // scratch for comparing keys
	stale      bool      // the records do not match any inputs yet
	// mutatesState: some op writes into a prepacked buffer (a KV cache),
	// so the graph has state across Execute calls.
	mutatesState bool

	// packed weights (ops.Packer)
	packCache  *prepack.Cache
	packed     map[string]int32 // cache key -> packed tensor id
	prepackSrc map[int32]int32  // prepack output -> its constant
	weightKeys map[int32]string // constant id -> content ID
	persistent map[int32]int32  // constant id -> its writable copy

	// host reads (select_as_symint): inputs whose values ops read while
	// recording, and their data in the current Execute
	hostRead    map[int32]bool
	hostIn      map[int32]Tensor
	hostConst   map[hostKey]float64 // constant elements read at load
	packStaging []*gpu.Buffer       // mapped readbacks the cache holds until Save
	packStats   PackedCacheStats

	// kernels are the load's kernel choices (ops.Configurer)
	kernels ops.Config

	// memory limit and the exporter plan's tensor bytes, for the buffers
	// bindTransients may add
	memLimit, planBytes int64

	// fusion (ops.Fuser)
	consumers map[int32][]int // tensor id -> chain indices of ops reading it
	absorbed  map[int]bool    // ops fused into an earlier op this recording
	rerecords int

	mu     sync.Mutex
	closed bool
}

// Load decodes a VH00 delegate blob and builds it on dev. The blob and the
// named data are only read during Load: constants are written to the GPU
// straight from those bytes, which may then be unmapped.
func Load(ctx context.Context, dev *gpu.Device, blob []byte, opts Options) (*WebGPUGraph, error) {
	b, err := serialization.DecodeBlob(blob)
	if err != nil {
		return nil, err
	}
	return Build(ctx, dev, b, opts)
}

// Build builds an already decoded blob on dev.
func Build(ctx context.Context, dev *gpu.Device, blob *serialization.Blob, opts Options) (_ *WebGPUGraph, err error) {
	g := &WebGPUGraph{dev: dev, log: opts.Logger, kernels: opts.Kernels, graph: blob.Graph, shared: map[int32]*gpu.Buffer{}, sym: map[int32]int64{},
		packed: map[string]int32{}, prepackSrc: map[int32]int32{}, weightKeys: map[int32]string{}, persistent: map[int32]int32{},
		hostRead: map[int32]bool{}, hostIn: map[int32]Tensor{}, hostConst: map[hostKey]float64{}, warmed: map[*gpu.Pipeline]bool{}}
	g.packCache = openPackedCache(opts.PackedCache, g)
	if g.log == nil {
		g.log = slog.Default()
	}
	defer func() {
		g.stopPrefetch()
		g.releaseWarmScratch()
		g.finishPacking()
		// Re-recording (dynamic shapes) writes no constants, so the
		// blob and the named data are not kept.
		g.an, g.plan, g.pend, g.arena = nil, nil, nil, nil
		if err != nil {
			g.release()
		}
	}()
	// Every rejection happens in the analysis, before any GPU object
	// exists.
	lim := dev.Limits()
	a, err := Analyze(blob, opts.NamedData, Limits{MemoryLimit: opts.MemoryLimit,
		MaxBufferSize: lim.MaxBufferSize, MaxStorageBufferBindingSize: lim.MaxStorageBufferBindingSize})
	if err != nil {
		return nil, err
	}
	g.an, g.plan, g.inputs, g.hostRead, g.consumers = a, a.Plan, a.Inputs, a.HostRead, a.Consumers
	g.memLimit, g.planBytes = opts.MemoryLimit, a.Plan.Stats.TensorBufferBytes()
	if g.memLimit <= 0 {
		g.memLimit = DefaultMemoryLimit
	}
	g.tensors = make([]*tensorState, len(a.Tensors))
	for i, ti := range a.Tensors {
		if ti == nil {
			continue
		}
		ts := &tensorState{dtype: ti.DType, dims: ti.Dims, numel: ti.Numel, nbytes: ti.NBytes, constant: ti.Constant,
			deferred: ti.Deferred, constID: ti.ConstID, memObj: ti.MemObjID}
		ts.setLive(ts.dims, ts.numel)
		g.tensors[i] = ts
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Placeholder SymInt values (0) could make an early warm-up dispatch
	// meaningless; such graphs warm up at the end only.
	g.warmEarly = !opts.SkipWarmup && !g.hasSymIntInputs()
	start := time.Now()
	if err := g.allocate(); err != nil {
		return nil, err
	}
	allocated := time.Now()
	tentative := false
	if err := g.recordOps(ctx); err != nil {
		// SymInt inputs hold placeholder values (0) until the first
		// Execute, so a recording that depends on them may fail now and
		// succeed then; the first Execute records again and reports it.
		if !g.hasSymIntInputs() || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		g.log.Debug("graph: load-time recording deferred to the first Execute", "err", err)
		tentative = true
		g.pend, g.arena = nil, nil
	}
	// Transient tensors get their buffers now that the recording has
	// decided who writes what (a tentative recording binds the inputs and
	// outputs, which need buffers before the first Execute records again).
	if err := g.bindTransients(); err != nil {
		return nil, err
	}
	if err := g.finishUploads(); err != nil {
		return nil, err
	}
	g.warmReady() // the pipelines compiled while the weights were copied
	// After the ops' own argument checks, which give the more specific
	// error when both apply.
	if a.ReadBeforeWrite != nil {
		return nil, a.ReadBeforeWrite
	}
	recorded := time.Now()
	if err := g.checkBindings(); err != nil {
		return nil, err
	}
	if err := g.finishDispatches(); err != nil {
		return nil, err
	}
	pipelined := time.Now()
	if err := g.createStaging(opts.OutputHostTypes); err != nil {
		return nil, err
	}
	g.stale = tentative
	g.prog = g.dev.Prepare(g.records, g.reads)
	// Warm-up: run every pipeline once now so that driver-side first-use
	// work (llvmpipe compiles a kernel at its first dispatch) is not paid
	// by the first Execute. Skipped for graphs with state across calls (a
	// KV cache updated in place).
	if !opts.SkipWarmup && !tentative && !g.mutatesState && len(g.records) > 0 {
		if err := g.warmUp(ctx); err != nil {
			return nil, fmt.Errorf("graph: warm-up run: %w", err)
		}
	}
	g.computeStats()
	// Phase times: constants written (queued), ops recorded (packing and
	// packed-weight cache reads included), pipelines created, warm-up run
	// (which also waits for the queued writes).
	g.log.Debug("graph: built", "values", len(g.graph.Values), "ops", len(g.graph.Chain),
		"dispatches", len(g.records), "tensorBytes", g.stats.TensorBufferBytes, "deferred", g.stats.NumDeferredConstants,
		"allocate", allocated.Sub(start), "record", recorded.Sub(allocated), "pipelines", pipelined.Sub(recorded),
		"warmup", time.Since(pipelined))
	return g, nil
}

// DeferredConstants is prepack.Deferred with the ops' packed arguments
// (ops.PackedArgs), kept here for callers that only import graph.
func DeferredConstants(g *serialization.Graph) map[int32]bool {
	return prepack.Deferred(g, ops.PackedArgs)
}

// constantBytes returns a constant's bytes, resolved once by Analyze.
func (g *WebGPUGraph) constantBytes(id int32, ts *tensorState) ([]byte, error) {
	if g.an == nil || int(id) >= len(g.an.Tensors) || g.an.Tensors[id] == nil || !g.an.Tensors[id].Constant {
		return nil, &ConstantError{ValueID: id, ConstantID: ts.constID, Msg: "constant bytes are only available while the graph is built"}
	}
	return g.an.Tensors[id].Bytes, nil
}

// allocate creates the shared and dedicated buffers and writes every
// non-deferred constant into its own buffer. The dedicated buffer of a
// prepack output (not a graph input or output) is made by its et_vk.prepack,
// which creates it with the constant's bytes (MaterializeConstant).
func (g *WebGPUGraph) allocate() error {
	lazy := g.an.Lazy
	for _, id := range g.plan.SharedIDs() {
		b, err := g.newBuffer(gpu.Storage, uint64(g.plan.SharedSizes[id]), fmt.Sprintf("shared %d", id))
		if err != nil {
			return err
		}
		g.shared[id] = b
	}
	for i, ts := range g.tensors {
		if ts == nil {
			continue
		}
		pl := g.plan.Placements[int32(i)]
		switch {
		case pl.None:
		case pl.Shared:
			ts.shared = true // bound after recording (bindTransients)
		case ts.constant:
			data, err := g.constantBytes(int32(i), ts)
			if err != nil {
				return err
			}
			if ts.buf, err = g.newBufferData(uint64(pl.Size), data, fmt.Sprintf("value %d", i)); err != nil {
				return fmt.Errorf("graph: constant value %d: %w", i, err)
			}
		case lazy[int32(i)]:
		default:
			b, err := g.newBuffer(gpu.Storage, uint64(pl.Size), fmt.Sprintf("value %d", i))
			if err != nil {
				return err
			}
			ts.buf = b
		}
	}
	return nil
}

func (g *WebGPUGraph) newBuffer(kind gpu.BufferKind, size uint64, label string) (*gpu.Buffer, error) {
	b, err := g.dev.NewBuffer(kind, size, label)
	if err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	g.owned = append(g.owned, b)
	return b, nil
}

// deferUploadMin is the smallest upload that newBufferData defers.
const deferUploadMin = 1 << 20

// pendingUpload is a buffer begun with gpu.Device.BeginUpload whose bytes
// finishUploads writes.
type pendingUpload struct {
	buf   *gpu.Buffer
	data  []byte
	label string
}

// newBufferData is newBuffer for a Storage buffer that starts with data.
// Its errors are the device's, for the caller to wrap.
//
// On a device with direct uploads (lavapipe) a large upload is deferred:
// the buffer is created now and its bytes copied in by finishUploads,
// after the ops are recorded, so that the pipelines, which recording
// starts compiling in the background, compile while the weights are
// copied. The contents are undefined until finishUploads, which must run
// before any GPU work that reads them.
func (g *WebGPUGraph) newBufferData(size uint64, data []byte, label string) (*gpu.Buffer, error) {
	if g.dev.DirectUploads() && len(data) >= deferUploadMin {
		b, err := g.dev.BeginUpload(size, label)
		if err != nil {
			return nil, err
		}
		g.owned = append(g.owned, b)
		g.uploads = append(g.uploads, pendingUpload{buf: b, data: data, label: label})
		return b, nil
	}
	b, err := g.dev.NewBufferData(size, data, label)
	if err != nil {
		return nil, err
	}
	g.owned = append(g.owned, b)
	return b, nil
}

// finishUploads writes the bytes of the uploads newBufferData deferred.
// Uploading there costs mostly first-touching the buffers' fresh memory,
// so the work is spread over two threads: about half the bytes go to
// buffers that another thread first-touches (gpu.Device.PrepareUpload: a
// prefault goroutine on a CPU adapter, else the driver's thread clearing
// them), one prepared before each buffer this goroutine fills itself, so
// that both threads fault pages at once; those are copied into last.
// Measured on lavapipe, 64 MiB as eight 8 MiB buffers: 42-48 ms touched on
// one thread, 27-29 ms on two (with clears). Between uploads it warms up
// the pipelines compiled meanwhile.
func (g *WebGPUGraph) finishUploads() error {
	ups := g.uploads
	g.uploads = nil
	var mine, theirs []pendingUpload
	var nMine, nTheirs int
	for _, u := range ups {
		if nTheirs < nMine {
			theirs, nTheirs = append(theirs, u), nTheirs+len(u.data)
		} else {
			mine, nMine = append(mine, u), nMine+len(u.data)
		}
	}
	g.upMain += int64(nMine)
	g.upDriver += int64(nTheirs)
	finish := func(u pendingUpload) error {
		if err := g.dev.FinishUpload(u.buf, u.data); err != nil {
			return fmt.Errorf("graph: %s: %w", u.label, err)
		}
		g.warmReady() // submit warm-ups as soon as their pipelines are ready
		return nil
	}
	for i := range max(len(mine), len(theirs)) {
		if i < len(theirs) {
			if err := g.dev.PrepareUpload(theirs[i].buf); err != nil {
				return fmt.Errorf("graph: %s: %w", theirs[i].label, err)
			}
		}
		if i < len(mine) {
			if err := finish(mine[i]); err != nil {
				return err
			}
		}
	}
	for _, u := range theirs {
		if err := finish(u); err != nil {
			return err
		}
	}
	return nil
}

// recordOps runs every op function in chain order.
func (g *WebGPUGraph) recordOps(ctx context.Context) error {
	g.absorbed = map[int]bool{}
	for i, op := range g.graph.Chain {
		if g.absorbed[i] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		fn, _ := ops.Lookup(op.Name)
		b := &opBuilder{Values: ops.Values{G: g.graph, Sym: g.symValue}, g: g, op: op.Name, index: i, ctx: ctx}
		if err := safeCall(fn, b, op.Args); err != nil {
			var ae *ops.ArgError
			if errors.As(err, &ae) && ae.Op == "" {
				ae.Op = op.Name
			}
			return &OpError{Index: i, Name: op.Name, Err: err}
		}
	}
	return nil
}

// symValue is the ops.Values hook for live SymInt values.
func (g *WebGPUGraph) symValue(id int32) (int64, bool) {
	v, ok := g.sym[id]
	return v, ok
}

// safeCall turns a panic in an op implementation into an error, so one buggy
// op cannot take the caller's process down on a hostile graph.
func safeCall(fn ops.Func, b ops.Builder, args []int32) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: op implementation panicked: %v", ErrInvalidGraph, r)
		}
	}()
	return fn(b, args)
}

// createStaging creates one reused MapRead staging buffer per tensor output.
func (g *WebGPUGraph) createStaging(hostTypes []serialization.DataType) error {
	for i, id := range g.graph.OutputIDs {
		if g.graph.Values[id].Kind == serialization.KindSymInt {
			g.outputs = append(g.outputs, outputSlot{id: int32(id), read: -1, host: serialization.Int64})
			continue
		}
		ts := g.tensors[id]
		if ts.buf == nil {
			return fmt.Errorf("graph: %w: output %d (value %d) has no buffer", ErrInvalidGraph, i, id)
		}
		st, err := g.newBuffer(gpu.Staging, uint64(ts.nbytes), fmt.Sprintf("output %d", i))
		if err != nil {
			return err
		}
		host := ts.dtype
		if i < len(hostTypes) && tensor.Widens(ts.dtype, hostTypes[i]) {
			host = hostTypes[i]
		}
		g.outputs = append(g.outputs, outputSlot{id: int32(id), staging: st, host: host, read: len(g.reads)})
		g.reads = append(g.reads, gpu.Readback{Src: ts.buf, Dst: st, Size: gpu.AlignedSize(uint64(ts.liveBytes()))})
	}
	for _, id := range g.inputs {
		var n int64
		if ts := g.tensors[id]; ts != nil {
			n = ts.nbytes
		}
		g.scratch = append(g.scratch, make([]byte, 0, n))
	}
	g.recordedIn = make([][]int64, len(g.inputs))
	for i, id := range g.inputs {
		g.recordedIn[i] = g.inputKey(id, nil)
	}
	return nil
}

// inputKey is what a recording depends on for input id: a tensor's live
// dims, or a SymInt's value. It appends to dst.
func (g *WebGPUGraph) inputKey(id int32, dst []int64) []int64 {
	if ts := g.tensors[id]; ts != nil {
		dst = append(dst[:0], ts.live...)
		if in, ok := g.hostIn[id]; ok && g.hostRead[id] {
			// An op reads this input's values on the host
			// (select_as_symint): they are part of the key.
			dst = append(dst, int64(len(in.Data)))
			for k := 0; k+8 <= len(in.Data); k += 8 {
				dst = append(dst, int64(le64(in.Data[k:])))
			}
			if r := len(in.Data) % 8; r != 0 {
				var w [8]byte
				copy(w[:], in.Data[len(in.Data)-r:])
				dst = append(dst, int64(le64(w[:])))
			}
		}
		return dst
	}
	v, _ := g.symInt(id)
	return append(dst[:0], v)
}

// symInt returns the live value of an Int or SymInt value.
func (g *WebGPUGraph) symInt(id int32) (int64, error) {
	return ops.Values{G: g.graph, Sym: g.symValue}.Int(id)
}

// hasSymIntInputs reports whether any graph input is a SymInt or has its
// values read on the host: the load-time recording then only has
// placeholders.
func (g *WebGPUGraph) hasSymIntInputs() bool {
	for _, id := range g.inputs {
		if g.tensors[id] == nil || g.hostRead[id] {
			return true
		}
	}
	return false
}

// rerecord re-runs every op on the current live input shapes and SymInt
// values and rebuilds the dispatch records. Buffers stay; constants are not
// written again.
func (g *WebGPUGraph) rerecord(ctx context.Context) error {
	isInput := map[int32]bool{}
	for _, id := range g.inputs {
		isInput[id] = true
	}
	for id, ts := range g.tensors {
		if ts != nil && !isInput[int32(id)] {
			ts.setLive(ts.dims, ts.numel)
		}
	}
	for id := range g.sym {
		if !isInput[id] {
			delete(g.sym, id)
		}
	}
	g.replay = true
	defer func() { g.pend, g.arena = nil, nil }()
	if err := g.recordOps(ctx); err != nil {
		return err
	}
	for _, bg := range g.groups {
		bg.Release()
	}
	g.groups, g.records = g.groups[:0], g.records[:0]
	g.dispatchOps, g.dispatchKernels = g.dispatchOps[:0], g.dispatchKernels[:0]
	if err := g.bindTransients(); err != nil {
		return err
	}
	if err := g.checkBindings(); err != nil {
		return err
	}
	if err := g.finishDispatches(); err != nil {
		return err
	}
	for _, o := range g.outputs {
		if o.read >= 0 {
			g.reads[o.read].Size = gpu.AlignedSize(uint64(g.tensors[o.id].liveBytes()))
		}
	}
	g.stats.NumDispatches = len(g.records)
	g.prog.Set(g.records, g.reads)
	g.rerecords++
	return nil
}

// DispatchInfo describes one recorded dispatch.
type DispatchInfo struct {
	Op     int    // chain index of the op that recorded it
	OpName string // that op's name
	Kernel string // the kernel variant
	Groups [3]uint32
}

// Dispatches lists the recorded dispatches in execution order.
func (g *WebGPUGraph) Dispatches() []DispatchInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]DispatchInfo, len(g.records))
	for i, r := range g.records {
		out[i] = DispatchInfo{Op: g.dispatchOps[i], OpName: g.graph.Chain[g.dispatchOps[i]].Name, Kernel: g.dispatchKernels[i], Groups: [3]uint32{r.X, r.Y, r.Z}}
	}
	return out
}

// Rerecords counts how many times Execute re-recorded the graph because its
// live input shapes or SymInt inputs changed.
func (g *WebGPUGraph) Rerecords() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rerecords
}

func (g *WebGPUGraph) computeStats() {
	s := g.plan.Stats
	g.stats.NumTensors = s.NumTensors
	g.stats.UnsharedTensorBufferBytes = s.UnsharedTensorBufferBytes
	g.stats.SharedBufferBytes = s.SharedBufferBytes
	g.stats.NumSharedObjects = s.NumSharedObjects + g.stats.AddedSharedObjects
	g.stats.SharedBufferBytes += g.stats.AddedSharedBytes
	g.stats.TensorBufferBytes = s.TensorBufferBytes() + g.stats.AddedSharedBytes
	g.stats.NumDeferredConstants = s.NumDeferred
	g.stats.DeferredConstantBytes = s.DeferredBytes
	for _, o := range g.outputs {
		if o.staging != nil {
			g.stats.StagingBufferBytes += int64(o.staging.Size())
		}
	}
	g.stats.NumDispatches = len(g.records)
}

// MemoryStats reports what the graph allocated.
func (g *WebGPUGraph) MemoryStats() MemoryStats {
	s := g.stats
	s.NumCachedShaders, s.NumCachedPipelines = g.dev.CacheStats()
	return s
}

// NumInputs and NumOutputs give the graph's I/O arity.
func (g *WebGPUGraph) NumInputs() int  { return len(g.inputs) }
func (g *WebGPUGraph) NumOutputs() int { return len(g.outputs) }

// InputInfo returns the dtype and shape input i expects.
func (g *WebGPUGraph) InputInfo(i int) (serialization.DataType, []int64) {
	ts := g.tensors[g.inputs[i]]
	if ts == nil { // a SymInt, passed as a scalar int64 tensor
		return serialization.Int64, []int64{}
	}
	return ts.dtype, append([]int64(nil), ts.dims...)
}

// OutputInfo returns the dtype (as returned to the caller) and shape of
// output i.
func (g *WebGPUGraph) OutputInfo(i int) (serialization.DataType, []int64) {
	ts := g.tensors[g.outputs[i].id]
	if ts == nil {
		return serialization.Int64, []int64{}
	}
	return g.outputs[i].host, append([]int64(nil), ts.dims...)
}

// Execute uploads inputs (in input_ids order), runs every dispatch in one
// compute pass and one submit, and returns the outputs (in output_ids order)
// with their live shapes.
//
// A tensor input may be smaller than its serialized dims (which are upper
// bounds for dynamic shapes) but not larger and not of another rank; a
// SymInt input is passed as a one-element integer tensor. When the live
// input shapes or SymInt values differ from the previous call, the ops are
// re-recorded for them first. An int64 input feeding an int32 tensor (the
// exporter's default downcast) is narrowed with an overflow check; float64
// into float32 likewise. Execute is safe for concurrent use; calls on one
// graph are serialised.
func (g *WebGPUGraph) Execute(ctx context.Context, inputs []Tensor) ([]Tensor, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	if len(inputs) != len(g.inputs) {
		return nil, &InputError{Index: -1, Msg: fmt.Sprintf("graph takes %d inputs, got %d", len(g.inputs), len(inputs))}
	}
	changed := false
	for i, in := range inputs {
		id := g.inputs[i]
		ts := g.tensors[id]
		if ts == nil {
			v, err := symIntInput(i, in)
			if err != nil {
				return nil, err
			}
			if old, ok := g.sym[id]; !ok || old != v {
				g.sym[id] = v
			}
		} else {
			if err := g.checkInputShape(i, in, ts); err != nil {
				return nil, err
			}
			ts.setLive(in.Shape, Numel(in.Shape))
			if g.hostRead[id] {
				g.hostIn[id] = in
			}
		}
		g.liveKey = g.inputKey(id, g.liveKey)
		if !slices.Equal(g.liveKey, g.recordedIn[i]) {
			changed = true
			g.recordedIn[i] = append(g.recordedIn[i][:0], g.liveKey...)
		}
	}
	if changed || g.stale {
		if err := g.rerecord(ctx); err != nil {
			g.stale = true // the records are unusable; record again next time
			return nil, fmt.Errorf("graph: recording for the new input shapes: %w", err)
		}
		g.stale = false
	}
	for i, in := range inputs {
		ts := g.tensors[g.inputs[i]]
		if ts == nil {
			continue
		}
		data, err := g.hostToDevice(i, in, ts)
		if err != nil {
			return nil, err
		}
		if len(data) == 0 {
			continue
		}
		if err := g.dev.Write(ts.buf, 0, data); err != nil {
			return nil, fmt.Errorf("graph: input %d: %w", i, err)
		}
	}
	if err := g.prog.Run(ctx); err != nil {
		return nil, fmt.Errorf("graph: execute: %w", err)
	}
	outs := make([]Tensor, len(g.outputs))
	for i, o := range g.outputs {
		if o.read < 0 {
			v, _ := g.symInt(o.id)
			outs[i] = Int64Tensor([]int64{}, []int64{v})
			continue
		}
		ts := g.tensors[o.id]
		n := ts.liveBytes()
		m, err := o.staging.Mapped()
		if err != nil {
			return nil, fmt.Errorf("graph: output %d: %w", i, err)
		}
		var data []byte
		if o.host == ts.dtype {
			data = make([]byte, n)
			copy(data, m[:n])
		} else {
			data = tensor.Widen(m[:n], ts.dtype)
		}
		if err := o.staging.Unmap(); err != nil {
			return nil, fmt.Errorf("graph: output %d: %w", i, err)
		}
		outs[i] = Tensor{DType: o.host, Shape: append([]int64(nil), ts.live...), Data: data}
	}
	return outs, nil
}

// symIntInput reads a SymInt input given as a one-element integer tensor.
func symIntInput(i int, in Tensor) (int64, error) {
	if Numel(in.Shape) != 1 {
		return 0, &InputError{Index: i, Msg: fmt.Sprintf("a SymInt input takes a one-element integer tensor, got shape %v", in.Shape)}
	}
	switch {
	case in.DType == serialization.Int64 && len(in.Data) == 8:
		return int64(le64(in.Data)), nil
	case in.DType == serialization.Int32 && len(in.Data) == 4:
		return int64(int32(uint32(in.Data[0]) | uint32(in.Data[1])<<8 | uint32(in.Data[2])<<16 | uint32(in.Data[3])<<24)), nil
	}
	return 0, &InputError{Index: i, Msg: fmt.Sprintf("a SymInt input takes an int32 or int64 scalar, got %v with %d bytes", in.DType, len(in.Data))}
}

// checkInputShape checks a tensor input's live shape against its bound.
func (g *WebGPUGraph) checkInputShape(i int, in Tensor, ts *tensorState) error {
	if len(in.Shape) != len(ts.dims) {
		return &InputError{Index: i, Msg: fmt.Sprintf("shape %v has rank %d, graph expects rank %d (at most %v)", in.Shape, len(in.Shape), len(ts.dims), ts.dims)}
	}
	for j := range in.Shape {
		if in.Shape[j] < 0 || in.Shape[j] > ts.dims[j] {
			return &InputError{Index: i, Msg: fmt.Sprintf("shape %v is larger than the graph's bound %v in dim %d", in.Shape, ts.dims, j)}
		}
	}
	return nil
}

// hostToDevice checks input i's data against its live shape and returns the
// bytes to upload, narrowing 64-bit host data when the device tensor is
// 32-bit.
func (g *WebGPUGraph) hostToDevice(i int, in Tensor, ts *tensorState) ([]byte, error) {
	hostSize := in.DType.Size()
	if hostSize == 0 {
		return nil, &InputError{Index: i, Msg: fmt.Sprintf("unknown dtype %v", in.DType)}
	}
	numel := Numel(in.Shape)
	if int64(len(in.Data)) != numel*int64(hostSize) {
		return nil, &InputError{Index: i, Msg: fmt.Sprintf("%d data bytes for %d %v elements", len(in.Data), numel, in.DType)}
	}
	switch {
	case in.DType == ts.dtype:
		return in.Data, nil
	case tensor.Narrows(in.DType, ts.dtype):
		out, err := tensor.Narrow(g.scratch[i][:0], in.Data, in.DType)
		if err != nil {
			msg := err.Error()
			if oe := (*tensor.OverflowError)(nil); errors.As(err, &oe) {
				msg = fmt.Sprintf("element %d = %d overflows the graph's int32 tensor", oe.Index, oe.Value)
			}
			return nil, &InputError{Index: i, Msg: msg}
		}
		g.scratch[i] = out
		return out, nil
	}
	return nil, &InputError{Index: i, Msg: fmt.Sprintf("dtype %v, graph expects %v", in.DType, ts.dtype)}
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// Close releases every GPU object the graph created. The device's shared
// pipeline cache stays with the device.
func (g *WebGPUGraph) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	g.release()
	return nil
}

func (g *WebGPUGraph) release() {
	for _, bg := range g.groups {
		bg.Release()
	}
	g.groups = nil
	g.records = nil
	for i := len(g.owned) - 1; i >= 0; i-- {
		g.owned[i].Release()
	}
	g.owned = nil
}

// warmUp dispatches each of the graph's pipelines once, with its first
// record's bindings and a single workgroup, in one submit. That is enough
// for the driver to finish building every kernel (llvmpipe compiles at the
// first dispatch); running the whole graph instead would cost a full
// inference at every load (as long as the load itself on a model with
// large convolution weights). The partial results are overwritten by the
// first Execute: every dispatch's outputs are rewritten by every Execute
// of a graph without state across calls, the only kind warmed up.
func (g *WebGPUGraph) warmUp(ctx context.Context) error {
	return g.dev.Run(ctx, g.warmUpDispatches(), nil)
}

// warmUpDispatches returns the dispatches of the warm-up run.
func (g *WebGPUGraph) warmUpDispatches() []gpu.Dispatch {
	seen := map[*gpu.Pipeline]bool{}
	var ds []gpu.Dispatch
	for _, r := range g.records {
		if seen[r.Pipeline] || g.warmed[r.Pipeline] {
			continue
		}
		seen[r.Pipeline] = true
		r.X, r.Y, r.Z = 1, 1, 1
		ds = append(ds, r)
	}
	return ds
}
