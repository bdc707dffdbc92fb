package wgdelegate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/prepack"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Model is a loaded model: one built graph per VulkanBackend delegate the
// program calls, and the plan that routes values between them. It is safe
// for concurrent use; Execute calls on one graph are serialised.
type Model struct {
	dev     *Device
	release func() // drops the default device reference, if any
	graphs  []*graph.WebGPUGraph
	steps   []step
	inputs  []ioSlot
	outputs []ioSlot
	// direct: one graph whose inputs and outputs are the model's, in order.
	direct bool
	cache  string
	closed atomic.Bool
	// devClosed: the model was closed by its Device's Close.
	devClosed atomic.Bool
	once      sync.Once
	// state is the claim on the model's mutable state (ClaimState).
	state stateOwner
	// verified counts the named data WithVerifyData checked.
	verified VerifyStats
}

// step is one DelegateCall: run g on the values in, store its outputs as out.
type step struct {
	g        *graph.WebGPUGraph
	delegate int
	in, out  []int32
}

// ioSlot is one model input or output: a plan EValue index and its type.
type ioSlot struct {
	value int32
	dtype DataType
	shape []int64
}

// Open loads the model at path: an ExecuTorch .pte program, or a raw VH00
// delegate blob. The file (and any WithDataFiles) is memory-mapped and
// unmapped again once the constants are on the GPU.
//
// A program's execution plan ("forward", or the first plan) must consist of
// DelegateCall instructions to VulkanBackend delegates only; several are
// chained through the plan's values, one delegate's outputs feeding
// another's inputs. Any other instruction is an error, a *PlanError, naming
// it. A program with no instructions at all (as written by tools that only
// carry a delegate) runs its first VulkanBackend delegate directly.
func Open(ctx context.Context, path string, opts ...Option) (*Model, error) {
	mf, err := serialization.MapFile(path)
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	m, err := load(ctx, mf.Bytes(), newConfig(opts))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Load is Open for a model already in memory. The bytes are only read
// during Load.
func Load(ctx context.Context, model []byte, opts ...Option) (*Model, error) {
	return load(ctx, model, newConfig(opts))
}

func load(ctx context.Context, data []byte, c *config) (_ *Model, err error) {
	start := time.Now()
	report := func(p Progress) {
		if c.progress != nil {
			p.Elapsed = time.Since(start)
			c.progress(p)
		}
	}
	log := c.logger
	if log == nil && c.device != nil {
		log = c.device.log
	}
	if log == nil {
		log = slog.Default()
	}
	named := serialization.NewNamedDataMap()
	for i, p := range c.dataFiles {
		df, err := serialization.MapFile(p)
		if err != nil {
			return nil, err
		}
		defer df.Close()
		if err := mergeData(named, df.Bytes()); err != nil {
			return nil, fmt.Errorf("data file %d (%s): %w", i, p, err)
		}
	}
	for i, d := range c.data {
		if err := mergeData(named, d); err != nil {
			return nil, fmt.Errorf("data file %d: %w", len(c.dataFiles)+i, err)
		}
	}
	calls, err := planCalls(data, named)
	if err != nil {
		return nil, err
	}
	// A delegate called several times is built once.
	var total int64
	weights := map[int]int64{} // per delegate, its constants' bytes
	for _, cl := range calls {
		if _, seen := weights[cl.delegate]; !seen {
			weights[cl.delegate] = constantBytes(cl.blob.Graph)
			total += weights[cl.delegate]
		}
	}
	nGraphs := len(weights)
	report(Progress{Phase: PhaseParse, Delegates: nGraphs, BytesTotal: total})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var verified VerifyStats
	if c.verifyData {
		v := newVerifier(named, log)
		checked := map[int]bool{}
		for _, cl := range calls {
			if !checked[cl.delegate] {
				checked[cl.delegate] = true
				if err := v.blob(ctx, cl.delegate, cl.blob); err != nil {
					return nil, err
				}
			}
		}
		verified = v.stats
		log.Debug("wgdelegate: named data verified", "tensors", verified.Tensors, "bytes", verified.Bytes,
			"unverifiable", verified.Unverifiable, "elapsed", verified.Elapsed)
	}

	m := &Model{dev: c.device, cache: c.packedCache, verified: verified}
	if m.dev == nil {
		if m.dev, m.release, err = acquireDefaultDevice(ctx, log); err != nil {
			return nil, err
		}
	}
	if err := m.dev.usable(); err != nil {
		if m.release != nil {
			m.release()
		}
		return nil, err
	}
	defer func() {
		if err != nil {
			m.Close()
			if derr := m.dev.usable(); derr != nil && !errors.Is(err, ErrClosed) {
				// The device was closed during the load: that is why.
				err = fmt.Errorf("%w (the load failed with: %v)", derr, err)
			}
		}
	}()
	var cacheFile string
	if c.packedCache != "" {
		cacheFile = filepath.Join(c.packedCache, PackedCacheFile)
	}
	built := map[int]*graph.WebGPUGraph{}
	var done int64
	for _, cl := range calls {
		g := built[cl.delegate]
		if g == nil {
			report(Progress{Phase: PhaseBuild, Delegate: len(built), Delegates: nGraphs, BytesDone: done, BytesTotal: total})
			g, err = graph.Build(ctx, m.dev.d, cl.blob, graph.Options{NamedData: named, Logger: log, PackedCache: cacheFile, Kernels: c.kernels, MemoryLimit: c.memLimit,
				MaxBindingSize: c.maxBinding, OutputHostTypes: outputHostTypes(cl.blob.Graph, cl.argInfo)})
			if err != nil {
				if len(calls) > 1 {
					return nil, fmt.Errorf("delegate %d: %w", cl.delegate, err)
				}
				return nil, err
			}
			built[cl.delegate] = g
			m.graphs = append(m.graphs, g)
			done += weights[cl.delegate]
		}
		m.steps = append(m.steps, step{g: g, delegate: cl.delegate, in: cl.in, out: cl.out})
	}
	if err := m.route(calls); err != nil {
		return nil, err
	}
	// Registered only now, so that a Device.Close during the build fails
	// the load instead of closing a model still being built.
	if err := m.dev.register(m); err != nil {
		return nil, err
	}
	report(Progress{Phase: PhaseDone, Delegate: nGraphs, Delegates: nGraphs, BytesDone: total, BytesTotal: total})
	log.Debug("wgdelegate: loaded", "delegates", len(m.graphs), "calls", len(m.steps),
		"inputs", len(m.inputs), "outputs", len(m.outputs), "elapsed", time.Since(start))
	return m, nil
}

func mergeData(named *serialization.NamedDataMap, ptd []byte) error {
	fm, err := serialization.ParseFlatTensor(ptd)
	if err != nil {
		return err
	}
	return named.Merge(fm)
}

// constantBytes is the bytes of g's constants (weights), as a progress
// total.
func constantBytes(g *serialization.Graph) int64 {
	var n int64
	for i := range g.Values {
		v := &g.Values[i]
		// Deferred constants count too: they reach the device as a
		// prepack output or a packed weight.
		if v.Kind != serialization.KindTensor || v.Tensor == nil || !v.Tensor.IsConstant() {
			continue
		}
		if b, err := serialization.TensorNBytes(v.Tensor); err == nil {
			n += b
		}
	}
	return n
}

// route sets the model's inputs and outputs and checks that every value a
// call reads, and every plan output, is written first.
func (m *Model) route(calls []call) error {
	if len(calls) == 1 && calls[0].direct {
		g := m.graphs[0]
		m.direct = true
		for i := 0; i < g.NumInputs(); i++ {
			dt, shape := g.InputInfo(i)
			m.inputs = append(m.inputs, ioSlot{value: int32(i), dtype: dt, shape: shape})
		}
		for i := 0; i < g.NumOutputs(); i++ {
			dt, shape := g.OutputInfo(i)
			m.outputs = append(m.outputs, ioSlot{value: int32(i), dtype: dt, shape: shape})
		}
		return nil
	}
	planIn, planOut := calls[0].planIn, calls[0].planOut
	info := map[int32]ioSlot{}
	for _, v := range planIn {
		info[v] = ioSlot{value: v, dtype: serialization.Unset}
	}
	for k, s := range m.steps {
		for j, v := range s.in {
			slot, ok := info[v]
			if !ok {
				return &PlanError{Plan: calls[0].plan, Instruction: -1, Kind: "DelegateCall",
					Msg: fmt.Sprintf("call %d (delegate %d) reads value %d, which no plan input or earlier call provides", k, s.delegate, v)}
			}
			if slot.dtype == serialization.Unset {
				// A plan input: its type is what its first reader expects.
				slot.dtype, slot.shape = s.g.InputInfo(j)
				info[v] = slot
			}
		}
		for j, v := range s.out {
			dt, shape := s.g.OutputInfo(j)
			info[v] = ioSlot{value: v, dtype: dt, shape: shape}
		}
	}
	for _, v := range planIn {
		m.inputs = append(m.inputs, info[v])
	}
	for i, v := range planOut {
		slot, ok := info[v]
		if !ok {
			return &PlanError{Plan: calls[0].plan, Instruction: -1, Msg: fmt.Sprintf("plan output %d (value %d) is never written", i, v)}
		}
		m.outputs = append(m.outputs, slot)
	}
	if len(m.steps) == 1 && slices.Equal(m.steps[0].in, planIn) && slices.Equal(m.steps[0].out, planOut) {
		m.direct = true
	}
	return nil
}

// Execute runs the model on inputs, given in the program's input order,
// and returns its outputs in output order. Inputs must have the dtype and
// shape InputInfo reports, except that int64 data may feed an int32 input
// and float64 data a float32 input (they are narrowed; an int64 that does
// not fit is an error wrapping ErrInput), and a FLOAT16 input takes
// float16, float32 or float64 data (see Float16). Outputs are new tensors
// owned by the caller.
//
// With several delegates, each call's outputs are handed to the calls that
// read them in plan order (through host memory today).
func (m *Model) Execute(ctx context.Context, inputs ...Tensor) ([]Tensor, error) {
	if m.closed.Load() {
		return nil, m.closedErr()
	}
	if len(inputs) != len(m.inputs) {
		return nil, m.inputCountError(len(inputs))
	}
	if m.direct {
		return m.steps[0].g.Execute(ctx, inputs)
	}
	vals := make(map[int32]Tensor, len(m.inputs)+len(m.outputs))
	for i, s := range m.inputs {
		vals[s.value] = inputs[i]
	}
	for k, s := range m.steps {
		in := make([]Tensor, len(s.in))
		for j, v := range s.in {
			in[j] = vals[v]
		}
		outs, err := s.g.Execute(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("wgdelegate: call %d (delegate %d): %w", k, s.delegate, err)
		}
		for j, v := range s.out {
			vals[v] = outs[j]
		}
	}
	outs := make([]Tensor, len(m.outputs))
	for i, s := range m.outputs {
		outs[i] = vals[s.value]
	}
	return outs, nil
}

// inputCountError is the *InputError for n inputs given to a model that
// takes another number: it lists what the model takes.
func (m *Model) inputCountError(n int) error {
	want := make([]string, len(m.inputs))
	for i, s := range m.inputs {
		want[i] = fmt.Sprintf("%v %v", s.dtype, s.shape)
	}
	return &InputError{Index: -1, Msg: fmt.Sprintf("the model takes %d input(s) (%s), got %d", len(m.inputs), strings.Join(want, ", "), n)}
}

// closedErr is the error of a call on a closed model: ErrClosed, saying
// so when the model's Device was closed.
func (m *Model) closedErr() error {
	if m.devClosed.Load() {
		return fmt.Errorf("wgdelegate: the model's Device was closed: %w", ErrClosed)
	}
	return ErrClosed
}

// NumInputs and NumOutputs give the model's I/O arity.
func (m *Model) NumInputs() int { return len(m.inputs) }

// NumOutputs returns the number of outputs Execute returns.
func (m *Model) NumOutputs() int { return len(m.outputs) }

// InputInfo returns the dtype and shape input i expects on the device. An
// int32 (float32) input also accepts int64 (float64) data. For a FLOAT16
// input it is the host dtype (its staging_datatype: float32 for a
// force_fp16 export, else float16), and the input accepts either. An i
// outside [0, NumInputs()) is an *IndexError (ErrIndex); after Close
// it is ErrClosed.
func (m *Model) InputInfo(i int) (DataType, []int64, error) {
	if m.closed.Load() {
		return serialization.Unset, nil, m.closedErr()
	}
	if i < 0 || i >= len(m.inputs) {
		return serialization.Unset, nil, &IndexError{What: "input", Index: i, Count: len(m.inputs)}
	}
	s := m.inputs[i]
	return s.dtype, slices.Clone(s.shape), nil
}

// OutputInfo returns the dtype and (largest) shape of output i as Execute
// returns it. An i outside [0, NumOutputs()) is an *IndexError
// (ErrIndex); after Close it is ErrClosed.
func (m *Model) OutputInfo(i int) (DataType, []int64, error) {
	if m.closed.Load() {
		return serialization.Unset, nil, m.closedErr()
	}
	if i < 0 || i >= len(m.outputs) {
		return serialization.Unset, nil, &IndexError{What: "output", Index: i, Count: len(m.outputs)}
	}
	s := m.outputs[i]
	return s.dtype, slices.Clone(s.shape), nil
}

// NumDelegates returns how many delegate graphs the model built.
func (m *Model) NumDelegates() int { return len(m.graphs) }

// PackedCacheStats sums the packed-weight counters of the model's graphs:
// weights taken from the cache (Hits), packed at load (Misses; Corrupt of
// them had a cache entry that failed its checksum), and the bytes of all
// packed weights.
func (m *Model) PackedCacheStats() PackedCacheStats {
	var s PackedCacheStats
	for _, g := range m.graphs {
		s.Add(g.PackedCacheStats())
	}
	return s
}

// PackedCacheStats counts a model's packed weights.
type PackedCacheStats = graph.PackedCacheStats

// PackedCacheErrors returns what went wrong with the WithPackedCache file
// during the load, none of which failed it: the file could not be read
// (Op PackedCacheOpen), it or some entries were corrupt (errors.Is
// ErrPackedCacheCorrupt; PackedCacheOpen, or PackedCacheVerify once per
// entry), it could not be written (PackedCacheSave: the weights packed at
// load were not kept). Each is also logged. The file is read once per
// process, so the problems of reading it go to the first model loaded
// with it. Nil when there were none, or without a cache.
func (m *Model) PackedCacheErrors() []*PackedCacheError {
	var errs []*PackedCacheError
	for _, g := range m.graphs {
		for _, e := range g.PackedCacheErrors() {
			if !slices.Contains(errs, e) {
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// PackedCacheError is a problem the packed-weight cache worked around; see
// Model.PackedCacheErrors.
type PackedCacheError = prepack.CacheError

// ErrPackedCacheCorrupt: the packed-weight cache file, or an entry of it,
// failed its checks (a PackedCacheError wraps it). Nothing corrupt is
// used: the weights are packed again and the file rewritten.
var ErrPackedCacheCorrupt = prepack.ErrCorrupt

// PackedCacheOp is what a PackedCacheError was doing.
type PackedCacheOp = prepack.CacheOp

// The operations a PackedCacheError reports.
const (
	PackedCacheOpen   = prepack.CacheOpen   // reading the file: the cache started empty
	PackedCacheRead   = prepack.CacheRead   // reading one entry: packed again
	PackedCacheVerify = prepack.CacheVerify // an entry failed its checksum: packed again
	PackedCacheSave   = prepack.CacheSave   // writing the file: new packings not kept
	PackedCachePut    = prepack.CachePut    // an entry dropped: not kept
)

// PackedCache returns the WithPackedCache directory ("" when unset).
func (m *Model) PackedCache() string { return m.cache }

// MemoryStats reports what the model allocated, summed over its delegate
// graphs; the pipeline and shader counts are the device's. After Close it
// is the zero MemoryStats: a closed model holds nothing.
func (m *Model) MemoryStats() MemoryStats {
	var s MemoryStats
	if m.closed.Load() {
		return s
	}
	for _, g := range m.graphs {
		s.Add(g.MemoryStats())
	}
	return s
}

// RecordStats reports the re-recordings and refreshes of the model's
// Executes so far, summed over its delegate graphs.
func (m *Model) RecordStats() RecordStats {
	var s RecordStats
	for _, g := range m.graphs {
		s.Add(g.RecordStats())
	}
	return s
}

// Close releases the model's GPU objects (and its reference to the default
// device, if it uses it). Further Executes, InputInfo and OutputInfo
// return ErrClosed. Close is idempotent.
func (m *Model) Close() error {
	m.once.Do(func() {
		m.closed.Store(true)
		for _, g := range m.graphs {
			g.Close()
		}
		if m.dev != nil {
			m.dev.unregister(m)
		}
		if m.release != nil {
			m.release()
		}
	})
	return nil
}

// The process-wide default device, shared by models loaded without
// WithDevice and closed when the last of them is closed.
var defaultDevice struct {
	sync.Mutex
	dev  *Device
	refs int
}

func acquireDefaultDevice(ctx context.Context, log *slog.Logger) (*Device, func(), error) {
	defaultDevice.Lock()
	defer defaultDevice.Unlock()
	if defaultDevice.dev == nil {
		d, err := OpenDevice(ctx, DeviceOptions{Logger: log})
		if err != nil {
			return nil, nil, err
		}
		defaultDevice.dev = d
	}
	defaultDevice.refs++
	d := defaultDevice.dev
	var once sync.Once
	return d, func() {
		once.Do(func() {
			defaultDevice.Lock()
			defer defaultDevice.Unlock()
			defaultDevice.refs--
			if defaultDevice.refs == 0 {
				defaultDevice.dev.Close()
				defaultDevice.dev = nil
			}
		})
	}, nil
}
