package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/lower"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/prepack"
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
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
	// exporter's default 64-bit downcast) is widened on readback; a
	// FLOAT16 tensor is returned as float32 or float16 as declared. Other
	// mismatches are ignored and the output's own host dtype (HostDType)
	// is returned.
	OutputHostTypes []serialization.DataType
	// MemoryLimit caps the tensor bytes a graph may allocate, checked before
	// any buffer is created, so a hostile or mistaken blob cannot exhaust the
	// host (lavapipe's buffers are host memory). 0 means
	// DefaultMemoryLimit(dev).
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
	// MaxBindingSize, when non-zero and below the device's limits, lowers
	// the device's maxStorageBufferBindingSize and maxBufferSize to it for
	// this load: a small weight then counts as too large for one binding
	// and is held in chunks (tests of the chunked paths; graph/chunk.go).
	MaxBindingSize uint64
}

// tensorState is a tensor value as built.
type tensorState struct {
	dtype serialization.DataType // device dtype (TensorInfo.DType)
	// half: serialized FLOAT16, held as float32 on the device; host is the
	// dtype a graph input or output has on the host (TensorInfo.Host).
	half     bool
	host     serialization.DataType
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
	// placed: a weight form that gets its buffer at the next placeWeights
	// (weights.go); buf is nil until then.
	placed bool
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

// WebGPUGraph is a loaded delegate graph, ready to Execute. Its state is
// split by lifetime: what the load fixes (fixedState), the GPU objects
// (gpuResources) and weights (weightState) it made, the current
// recording (recordingState) and what a refresh needs of it
// (refreshRecord), per-Execute scratch (executeScratch), and what only
// the load uses (loadState, dropped when Build returns).
type WebGPUGraph struct {
	fixedState
	gpuResources
	weightState
	recordingState
	refreshRecord
	executeScratch
	loadState

	mu     sync.Mutex
	closed bool
}

// fixedState is what the load fixes for the graph's whole life.
type fixedState struct {
	dev     *gpu.Device
	log     *slog.Logger
	graph   *serialization.Graph
	kernels ops.Config        // the load's kernel choices (ops.Builder.Config)
	profile ops.DeviceProfile // the device's (ops.Builder.DeviceProfile)
	inputs  []int32
	outputs []outputSlot
	// what recording reads of the analysis: host reads (select_as_symint
	// inputs whose values ops read while recording), the memory limit and
	// the exporter plan's tensor bytes (for the buffers bindTransients may
	// add)
	hostRead            map[int32]bool
	lowered             *lower.Plan // the nodes recordOps records (package lower)
	memLimit, planBytes int64
	mutatesState        bool // some op writes a prepacked buffer (a KV cache): state across Executes
}

// gpuResources are the graph's GPU objects, released by Close.
type gpuResources struct {
	tensors  []*tensorState        // per value id; nil for non-tensors
	shared   map[int32]*gpu.Buffer // shared objects (the exporter's, and any bindTransients added)
	owned    []*gpu.Buffer         // every buffer this graph created
	arenaBuf *gpu.Buffer           // the uniform arena
	heads    []*Head               // open Heads, closed with the graph
}

// weightState is how the load holds its weights beyond their buffers as
// exported, kept for re-recordings: packed (ops.Builder.PackWeight),
// persistent copies, half KV caches, chunks.
type weightState struct {
	packCache  *prepack.Cache
	packed     map[string]int32 // cache key -> packed tensor id
	prepackSrc map[int32]int32  // prepack output -> its constant
	weightKeys map[int32]string // constant id -> content ID
	persistent map[int32]int32  // constant id -> its writable copy
	halfKV     map[int32]int32  // KV cache id -> its packed halves (makeHalfKV)
	// Weights held in chunks (chunk.go): the chunked weights, the
	// binding limit, the weight slices (by "src|dim|begin|end", and by
	// id) and the ops' scratch tensors (by op index and key).
	chunked        map[int32]bool
	bindLimit      int64
	sliceKeys      map[string]int32
	slices         map[int32]*sliceState
	scratchTensors map[[2]int]int32
	scratchKeys    map[int32]int       // scratch tensor -> its key
	hostConst      map[hostKey]float64 // constant elements read at load
	packStaging    []*gpu.Buffer       // mapped readbacks the cache holds until Save
	packStats      PackedCacheStats
	packMark       int                   // packCache.Mark() when the load began
	packErrs       []*prepack.CacheError // the cache's problems during the load
	placing        []placement           // placed weight forms waiting for their buffers (weights.go)
}

// recordingState is the current recording (the load's, then each
// re-recording for new input shapes or SymInt values).
type recordingState struct {
	sym             map[int32]int64 // live SymInt values, by value id
	groups          []*gpu.BindGroup
	groupKeys       []bindKey // per group: what it binds (reused by a re-recording)
	kernelPipes     map[*shaders.Kernel]*gpu.Pipeline
	records         []gpu.Dispatch
	reads           []gpu.Readback
	prog            *gpu.Program        // records and reads, prepared for replay
	lastProg        *gpu.Program        // the program the latest Execute or Head step submitted
	dispatchOps     []int               // per record: the chain index of its op
	dispatchKernels []string            // per record: its kernel's name
	dispatchChunks  []int               // per record: the weight chunk it reads, or -1 (chunk.go)
	aliases         map[int32]viewAlias // view outputs sharing their input's buffer
	recordedIn      [][]int64           // per input, the key the records were built for
	stale           bool                // the records do not match any inputs yet
	replay          bool                // re-recording: constants are already written
	rerecords       int
	pend            []pendingDispatch // being recorded
	arena           []byte            // uniforms being recorded
	// devPos is the decoder's position on the device (devicepos.go), nil
	// for none; unbound, per input, a host-read input no dispatch binds
	// (not uploaded).
	devPos  *devicePos
	unbound []bool
}

// refreshRecord is what the recording read of the SymInts, for refresh
// (refresh.go), and what the refreshes did.
type refreshRecord struct {
	opSyms             [][]symRead       // per plan node (by chain index): the SymInt values it read
	opHost             []bool            // per plan node: it read input values on the host
	opPend             [][2]int          // per plan node: its dispatches, indices into lastPend
	lastPend           []pendingDispatch // the recorded dispatches
	lastArena          []byte            // the uniform arena as written
	recordedSym        [][]int64         // per input, the SymInt value or host-read data the params hold
	refreshes, patched int
	rerun, updated     int            // nodes refresh re-ran; of them, through their update functions
	opUnits            []int          // per plan node: the ops, fused ops and views it recorded
	opUpdates          [][]nodeUpdate // per plan node: the update functions they gave
	symSet, symEarly   map[int32]bool // SymInts an op set; read before any op set them
	refreshable        bool           // refresh can bring the recording up to date
}

// executeScratch is Execute's scratch, reused across calls.
type executeScratch struct {
	scratch [][]byte         // per input, for int64/float64 narrowing
	liveKey []int64          // for comparing input keys
	moved   []int            // the inputs whose SymInt or host-read values changed
	hostIn  map[int32]Tensor // host-read inputs' data
	stats   MemoryStats
}

// loadState is what only the load uses (dropped when Build returns).
type loadState struct {
	an   *Analysis
	plan *memplan.Plan
	// prefetch compiles pipelines in the background (see prefetch.go).
	prefetch *pipelinePrefetch
	// warmEarly: pipelines are warmed up as soon as they are compiled
	// (unless SkipWarmup or SymInt inputs); warmed holds those warmed up
	// so far, which the final warm-up leaves out; warmIn and warmOut are
	// the early warm-ups' scratch buffers.
	warmEarly bool
	warmed    map[*gpu.Pipeline]bool
	warmIn    *gpu.Buffer
	warmOut   []*gpu.Buffer
	// uploads deferred and not yet finished, and the bytes finishUploads
	// had the loading goroutine and the driver's thread touch
	uploads          []pendingUpload
	upMain, upDriver int64
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
func Build(ctx context.Context, dev *gpu.Device, blob *serialization.Blob, opts Options) (built *WebGPUGraph, err error) {
	g := &WebGPUGraph{
		fixedState:     fixedState{dev: dev, log: opts.Logger, kernels: opts.Kernels, profile: DeviceProfile(dev), graph: blob.Graph, hostRead: map[int32]bool{}},
		gpuResources:   gpuResources{shared: map[int32]*gpu.Buffer{}},
		recordingState: recordingState{sym: map[int32]int64{}},
		weightState: weightState{packed: map[string]int32{}, prepackSrc: map[int32]int32{}, weightKeys: map[int32]string{}, persistent: map[int32]int32{},
			halfKV: map[int32]int32{}, hostConst: map[hostKey]float64{}, sliceKeys: map[string]int32{}, slices: map[int32]*sliceState{},
			scratchTensors: map[[2]int]int32{}, scratchKeys: map[int32]int{}},
		executeScratch: executeScratch{hostIn: map[int32]Tensor{}},
		loadState:      loadState{warmed: map[*gpu.Pipeline]bool{}},
	}
	g.packCache = openPackedCache(opts.PackedCache, g)
	if g.log == nil {
		g.log = slog.Default()
	}
	defer func() {
		// A panic outside the ops (which have their own guard) is a bug a
		// hostile graph found: an error, like an op's, the graph released.
		if r := recover(); r != nil {
			g.log.Debug("graph: build panicked", "panic", r, "stack", string(debug.Stack()))
			built, err = nil, fmt.Errorf("graph: %w: building panicked: %v", ErrInvalidGraph, r)
		}
		g.stopPrefetch()
		g.releaseWarmScratch()
		g.finishPacking()
		if g.packCache != nil {
			g.packErrs = g.packCache.ErrorsSince(g.packMark)
		}
		// Re-recording (dynamic shapes) writes no constants, so the
		// blob and the named data are not kept.
		g.an, g.plan, g.pend, g.arena = nil, nil, nil, nil
		for _, s := range g.slices {
			s.data = nil // may alias the blob or the named data
		}
		if err != nil {
			g.release()
		}
	}()
	// Every rejection happens in the analysis, before any GPU object
	// exists.
	lim := dev.Limits()
	if l := opts.MaxBindingSize; l > 0 {
		lim.MaxBufferSize = min(lim.MaxBufferSize, l)
		lim.MaxStorageBufferBindingSize = min(lim.MaxStorageBufferBindingSize, l)
	}
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = DefaultMemoryLimit(dev)
	}
	a, err := Analyze(blob, opts.NamedData, Limits{MemoryLimit: opts.MemoryLimit,
		MaxBufferSize: lim.MaxBufferSize, MaxStorageBufferBindingSize: lim.MaxStorageBufferBindingSize,
		Device: g.profile, Kernels: opts.Kernels, HalfKVCache: opts.Kernels.HalfKVCache})
	if err != nil {
		return nil, err
	}
	g.an, g.plan, g.inputs, g.hostRead, g.lowered = a, a.Plan, a.Inputs, a.HostRead, a.Lowered
	g.chunked = a.Chunked
	g.bindLimit = bindLimit(Limits{MaxBufferSize: lim.MaxBufferSize, MaxStorageBufferBindingSize: lim.MaxStorageBufferBindingSize})
	g.memLimit, g.planBytes = opts.MemoryLimit, a.Plan.Stats.TensorBufferBytes()
	g.tensors = make([]*tensorState, len(a.Tensors))
	for i, ti := range a.Tensors {
		if ti == nil {
			continue
		}
		ts := &tensorState{dtype: ti.DType, half: ti.Stored == serialization.Float16, host: ti.Host, dims: ti.Dims, numel: ti.Numel, nbytes: ti.NBytes, constant: ti.Constant,
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
	if err := g.packAtLoad(ctx); err != nil {
		return nil, err
	}
	if err := g.makeHalfKV(); err != nil {
		return nil, err
	}
	if err := g.placeWeights(ctx); err != nil {
		return nil, err
	}
	allocated := time.Now()
	if a.Lowered.DevicePos != nil {
		if err := g.newDevicePos(a.Lowered.DevicePos); err != nil {
			return nil, err
		}
	}
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
	// The weight forms the ops asked for get their buffers (the pack
	// kernels run) now, between the recording and the bind groups.
	if err := g.placeWeights(ctx); err != nil {
		return nil, err
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
