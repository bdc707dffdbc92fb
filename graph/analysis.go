package graph

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/lower"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/prepack"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Analysis is everything Build decides about a decoded graph without a
// device, from one reading of it: which ops are supported, each tensor's
// size, each constant's bytes (resolved once), which constants are deferred
// and which prepack outputs their et_vk.prepack creates, the graph's inputs
// and the tensors ops read on the host, the consumers of every value, the
// read-before-write check, the memory plan and its limits. Every rejection
// of a graph happens here, before the first GPU object exists (the
// read-before-write error is kept in ReadBeforeWrite so that an op's own,
// more specific, argument error can be reported first).
type Analysis struct {
	Graph *serialization.Graph
	// Tensors holds each tensor value by id (nil for other values).
	Tensors []*TensorInfo
	// Inputs are the graph inputs (tensors and SymInts) in order.
	Inputs []int32
	// Deferred: constants read only through et_vk.prepack or packed, and
	// prepack outputs read only packed (prepack.Deferred): no buffer.
	Deferred map[int32]bool
	// LoadPacked: the weights (constants, or prepack outputs of one) that
	// the ops reading them read only through a packing made at load, as
	// the ops' kernels answer for the load's device profile and kernel
	// choices (ops.LoadPackFor; today FLOAT16 linear weights as packed
	// halves): deferred (no buffer as exported), packed before the first
	// recording. Ascending ids.
	LoadPacked []LoadPacked
	// HalfKV: with Limits.HalfKVCache, the KV caches held as packed
	// halves (ops/attention_f16.go): constants, or et_vk.prepack outputs
	// of one, read only as cache arguments of the KV-cache ops
	// (ops.KVCacheArgs), neither graph inputs nor outputs, with
	// ops.HalfKVCacheDims. Deferred (no float32 buffer); Build makes
	// their packed buffers before recording. Ascending ids.
	HalfKV []int32
	// Lazy: prepack outputs (not graph inputs or outputs) whose buffer
	// their et_vk.prepack creates, with the constant's bytes.
	Lazy map[int32]bool
	// HostRead: tensors whose values an op reads on the host.
	HostRead map[int32]bool
	// Uses are the chain's reads and writes of every value (consumers,
	// producers, graph outputs).
	*lower.Uses
	// Lowered is the plan the graph records (package lower): the chain's
	// ops and the fused ops standing for several, decided once here.
	Lowered *lower.Plan
	// Plan is the exporter's memory plan (see package memplan).
	Plan *memplan.Plan
	// ReadBeforeWrite is the chain's read-before-write error (a tensor read
	// that no input, constant or earlier op provides), or nil. Analyze
	// returns every other rejection; Build reports this one after the ops'
	// own argument checks, which give the more specific error when both
	// apply, and before it makes any bind group or runs anything.
	ReadBeforeWrite error
	// Chunked: the weights held in chunks (graph/chunk.go): constants
	// over the binding limit read only where ops can read chunks, and the
	// et_vk.prepack outputs of them. Deferred.
	Chunked map[int32]bool
	// blocked: per constant over the limit that cannot be chunked, the op
	// that cannot read it in chunks.
	blocked map[int32]string
}

// LoadPacked is a weight packed at load (Analysis.LoadPacked): value ID,
// the first op that reads it packed, and the packing.
type LoadPacked struct {
	ID   int32
	Op   string
	Pack ops.LoadPack
}

// TensorInfo is one tensor value as analysed.
type TensorInfo struct {
	// DType is the device element type, the one ops see (DeviceDType of
	// the serialized dtype: FLOAT16 is held as float32); Stored is the
	// serialized VkTensor.datatype; Host is the dtype the host feeds or
	// receives for a graph input or output (HostDType).
	DType    serialization.DataType
	Stored   serialization.DataType
	Host     serialization.DataType
	Dims     []int64
	Numel    int64
	NBytes   int64
	Constant bool
	ConstID  int32
	MemObjID int32
	Deferred bool
	// Bytes are a constant's bytes in the device dtype: aliasing the blob
	// or the named data, or, for a FLOAT16 constant, its halves widened
	// to float32 (new memory); nil for a zero-size constant or a
	// non-constant.
	Bytes []byte
}

// DeviceDType is the element type a tensor serialized as dt has on the
// device. FLOAT16 becomes float32: without native f16 arithmetic (lavapipe
// rejects `enable f16`), every op computes fp16 graphs in float32, so no
// kernel needs a half variant. Only the load (constants widened, exactly)
// and the host boundary (HostDType) know about halves. Every other dtype
// is its own.
func DeviceDType(dt serialization.DataType) serialization.DataType {
	if dt == serialization.Float16 {
		return serialization.Float32
	}
	return dt
}

// HostDType is the dtype the host feeds to (or receives from) a graph
// input or output serialized with datatype dt and staging dtype staging:
// for a FLOAT16 tensor the staging dtype when it is float32 or float16
// (force_fp16 exports stage fp16 tensors as float32), float16 when it is
// UNSET; for every other dtype, dt (staging is ignored, as before).
func HostDType(dt, staging serialization.DataType) serialization.DataType {
	if dt == serialization.Float16 && staging == serialization.Float32 {
		return serialization.Float32
	}
	return dt
}

// Limits bound what Analyze accepts: MemoryLimit caps the tensor bytes
// (0: unchecked; Load passes DefaultMemoryLimit(dev)); MaxBufferSize and MaxStorageBufferBindingSize
// are the device's (0: unchecked).
type Limits struct {
	MemoryLimit                 int64
	MaxBufferSize               uint64
	MaxStorageBufferBindingSize uint64
	// Device and Kernels are not limits but the device the load records
	// for and its kernel choices, which decide the weights read only
	// through a packing made at load (Analysis.LoadPacked; the zero
	// values: no device, the default choices).
	Device  ops.DeviceProfile
	Kernels ops.Config
	// HalfKVCache is the load's ops.Config.HalfKVCache: KV caches only
	// the cache ops use are held as packed halves (Analysis.HalfKV).
	HalfKVCache bool
}

// Analyze reads blob once and decides, without a device, everything Build
// needs before it creates GPU objects; named resolves named constants (may
// be nil when every constant is inline). Its errors are Build's.
func Analyze(blob *serialization.Blob, named serialization.NamedData, lim Limits) (*Analysis, error) {
	g := blob.Graph
	names := make([]string, len(g.Chain))
	for i, op := range g.Chain {
		names[i] = op.Name
	}
	// Every op is checked first, and all missing ops are reported at once.
	if err := ops.CheckSupported(names); err != nil {
		return nil, fmt.Errorf("graph: %w: %w", ErrUnsupported, err)
	}
	a := &Analysis{Graph: g, Lazy: map[int32]bool{}, HostRead: map[int32]bool{}}
	a.deferrals(lim)
	if err := a.values(blob, named); err != nil {
		return nil, err
	}
	if err := a.checkIO(); err != nil {
		return nil, err
	}
	for _, op := range g.Chain {
		for _, i := range ops.HostReads(op.Name) {
			if i < len(op.Args) {
				a.HostRead[op.Args[i]] = true
			}
		}
		if op.Name == prepack.Op && len(op.Args) == 2 {
			a.Lazy[op.Args[1]] = true
		}
	}
	for _, id := range a.Inputs {
		delete(a.Lazy, id)
	}
	for _, id := range g.OutputIDs {
		delete(a.Lazy, int32(id))
	}
	a.Uses = lower.NewUses(g)
	need := a.Plan.Stats.TensorBufferBytes()
	for id := range a.Chunked {
		if ti := a.Tensors[id]; ti != nil && ti.Constant {
			need += ti.NBytes // its chunks, made at load
		}
	}
	if limit := lim.MemoryLimit; limit > 0 && need > limit {
		return nil, fmt.Errorf("graph: %w: tensors need %d bytes, over the %d-byte memory limit", ErrUnsupported, need, limit)
	}
	if err := a.checkDeviceLimits(lim); err != nil {
		return nil, err
	}
	a.ReadBeforeWrite = a.checkWrites()
	lowered, err := lowerSafely(a.lowerInput(lim.Kernels))
	if err != nil {
		return nil, err
	}
	a.Lowered = lowered
	return a, nil
}

// lowerSafely is lower.Lower, with a panic (a bug a hostile graph found)
// turned into an error, like an op's.
func lowerSafely(in lower.Input) (p *lower.Plan, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("graph: %w: lowering panicked: %v", ErrInvalidGraph, r)
		}
	}()
	return lower.Lower(in), nil
}

// lowerInput is what package lower reads of the analysis.
func (a *Analysis) lowerInput(cfg ops.Config) lower.Input {
	in := lower.Input{Graph: a.Graph, Uses: a.Uses, Tensors: make([]*lower.Tensor, len(a.Tensors)),
		Options: lower.Options{NoElementwiseFusion: cfg.NoElementwiseFusion, NoViewAliasing: cfg.NoViewAliasing}}
	prepacked := map[int32]bool{}
	for _, op := range a.Graph.Chain {
		if op.Name == prepack.Op && len(op.Args) == 2 {
			prepacked[op.Args[1]] = true
		}
	}
	for i, ti := range a.Tensors {
		if ti == nil {
			continue
		}
		id := int32(i)
		in.Tensors[i] = &lower.Tensor{DType: ti.DType, Bytes: ti.NBytes, Constant: ti.Constant, Transient: a.Plan.Placements[id].Shared,
			Deferred: ti.Deferred, Prepacked: prepacked[id], Chunked: a.Chunked[id]}
	}
	return in
}

// deferrals decides which values get no buffer of their own (Deferred):
// constants read only through et_vk.prepack or packed
// (prepack.Deferred), the weights held in chunks (Chunked), those read
// only through a packing made at load (LoadPacked) and, with
// lim.HalfKVCache, the half KV caches (HalfKV).
func (a *Analysis) deferrals(lim Limits) {
	g := a.Graph
	a.Deferred = prepack.Deferred(g, ops.PackedArgs)
	a.Chunked, a.blocked = chunkedWeights(g, a.Deferred, lim)
	a.LoadPacked = loadPacked(g, a.Deferred, lim.Device, lim.Kernels)
	if lim.HalfKVCache {
		a.HalfKV = halfKV(g, a.Deferred)
	}
}

// MemoryPlan is the memory plan a load of g under lim (its buffer and
// binding limits, device profile, kernel choices; the zero values: none,
// the defaults) makes, without a device or the constants' bytes: the
// values Analyze defers get no buffer, every other tensor its device size
// (FLOAT16 held as float32) in its dedicated buffer or shared object
// (package memplan). A tensor whose dims or dtype Analyze would reject is
// left out. deferred are the values the load defers. For tools that show
// what a load would allocate (wgdelegate inspect).
func MemoryPlan(g *serialization.Graph, lim Limits) (p *memplan.Plan, deferred map[int32]bool, err error) {
	a := &Analysis{Graph: g}
	a.deferrals(lim)
	var ts []memplan.Tensor
	for i := range g.Values {
		t := g.Values[i].Tensor
		if g.Values[i].Kind != serialization.KindTensor || t == nil {
			continue
		}
		n, err := serialization.TensorNBytes(t)
		if err != nil {
			continue
		}
		id := int32(i)
		n = n / int64(t.DataType.Size()) * int64(DeviceDType(t.DataType).Size())
		ts = append(ts, memplan.Tensor{ID: id, NBytes: n, MemObjID: t.MemObjID, Constant: t.IsConstant(), Deferred: a.Deferred[id]})
	}
	if p, err = memplan.Build(ts); err != nil {
		return nil, nil, fmt.Errorf("graph: memory plan: %w", err)
	}
	return p, a.Deferred, nil
}

// loadPacked finds the weights Analysis.LoadPacked describes, adds them to
// deferred and returns them: the values prepack.Deferred defers when the
// ops' load-packed arguments (ops.LoadPackArgs) count as packed uses,
// beyond those it defers anyway (deferred), whose every such use the op
// confirms for this weight, device and choices (ops.LoadPackFor).
func loadPacked(g *serialization.Graph, deferred map[int32]bool, p ops.DeviceProfile, cfg ops.Config) []LoadPacked {
	var out []LoadPacked
	withLoad := prepack.Deferred(g, func(op string) []int {
		return append(slices.Clone(ops.PackedArgs(op)), ops.LoadPackArgs(op)...)
	})
	for id := range withLoad {
		if deferred[id] || id < 0 || int(id) >= len(g.Values) || g.Values[id].Tensor == nil {
			continue
		}
		t := g.Values[id].Tensor
		w := ops.WeightInfo{DType: t.DataType, Dims: make([]int64, len(t.Dims))}
		for i, d := range t.Dims {
			w.Dims[i] = int64(d)
		}
		var packs []LoadPacked
		if !loadPackUses(g, id, w, p, cfg, &packs, 0) || len(packs) == 0 {
			continue
		}
		deferred[id] = true
		for _, lp := range packs {
			lp.ID = id
			out = append(out, lp)
		}
	}
	slices.SortFunc(out, func(x, y LoadPacked) int { return cmp.Compare(x.ID, y.ID) })
	return out
}

// loadPackUses adds to packs the distinct load packings the uses of id (a
// weight described by w) read it through, following et_vk.prepack to its
// output's uses, and reports whether every use reads it packed: at load
// (ops.LoadPackFor) or through the op's own packing (ops.PackedArgs).
func loadPackUses(g *serialization.Graph, id int32, w ops.WeightInfo, p ops.DeviceProfile, cfg ops.Config, packs *[]LoadPacked, depth int) bool {
	if depth > 1 {
		return false // a prepack of a prepack output: keep it simple
	}
	for _, op := range g.Chain {
		if len(op.Args) == 0 {
			continue
		}
		for i, a := range op.Args[:len(op.Args)-1] {
			if a != id {
				continue
			}
			switch {
			case op.Name == prepack.Op && i == 0:
				if !loadPackUses(g, op.Args[1], w, p, cfg, packs, depth+1) {
					return false
				}
			case slices.Contains(ops.PackedArgs(op.Name), i):
			default:
				lp, ok := ops.LoadPackFor(op.Name, i, w, p, cfg)
				if !ok {
					return false
				}
				if !slices.ContainsFunc(*packs, func(x LoadPacked) bool { return x.Pack.Name == lp.Name }) {
					*packs = append(*packs, LoadPacked{Op: op.Name, Pack: lp})
				}
			}
		}
	}
	return true
}

// halfKV finds the caches Analysis.HalfKV describes, adds them to deferred
// and returns them: the values prepack.Deferred defers when only the
// KV-cache ops' cache arguments count as packed uses, beyond those it
// defers anyway (deferred), that are float32 or FLOAT16 with
// ops.HalfKVCacheDims. A value any other op reads (even packed), or a
// graph input or output, is a direct use there, so it stays float32.
func halfKV(g *serialization.Graph, deferred map[int32]bool) []int32 {
	var out []int32
	for id := range prepack.Deferred(g, ops.KVCacheArgs) {
		if deferred[id] || id < 0 || int(id) >= len(g.Values) {
			continue
		}
		t := g.Values[id].Tensor
		if t == nil || DeviceDType(t.DataType) != serialization.Float32 {
			continue
		}
		dims := make([]int64, len(t.Dims))
		for i, d := range t.Dims {
			dims[i] = int64(d)
		}
		if ops.HalfKVCacheDims(dims) {
			deferred[id] = true
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// values sizes every tensor (overflow-checked), resolves every constant's
// bytes and plans memory.
func (a *Analysis) values(blob *serialization.Blob, named serialization.NamedData) error {
	vals := a.Graph.Values
	a.Tensors = make([]*TensorInfo, len(vals))
	var plan []memplan.Tensor
	widened := map[string][]byte{} // named key and length -> a FLOAT16 constant widened
	for i := range vals {
		v := &vals[i]
		if v.Kind != serialization.KindTensor || v.Tensor == nil {
			continue
		}
		t := v.Tensor
		id := int32(i)
		if !t.DataType.Valid() {
			return invalidf("value %d: tensor dtype %v", i, t.DataType)
		}
		ti := &TensorInfo{DType: DeviceDType(t.DataType), Stored: t.DataType, Host: HostDType(t.DataType, t.StagingDataType),
			Constant: t.ConstantID >= 0, ConstID: t.ConstantID, MemObjID: t.MemObjID, Deferred: a.Deferred[id]}
		ti.Dims = make([]int64, len(t.Dims))
		ti.Numel = 1
		for j, d := range t.Dims {
			ti.Dims[j] = int64(d)
			if d != 0 && ti.Numel > maxTensorBytes/int64(d) {
				return invalidf("value %d: tensor dims %v overflow", i, t.Dims)
			}
			ti.Numel *= int64(d)
		}
		ti.NBytes = ti.Numel * int64(ti.DType.Size())
		if ti.NBytes > maxTensorBytes {
			return invalidf("value %d: tensor of %d bytes is too large", i, ti.NBytes)
		}
		if ti.Constant {
			b, err := resolveConstant(blob, named, id, t)
			if err != nil {
				return err
			}
			if ti.Stored != ti.DType && b != nil { // FLOAT16: widened once, here
				// Values of one named key (a tied embedding and
				// classifier) share one widened copy.
				c := a.Graph.Constants[ti.ConstID]
				wk := fmt.Sprintf("%s|%d", c.NamedKey, len(b))
				if w, ok := widened[wk]; ok && c.IsNamed() {
					b = w
				} else {
					b = tensor.WidenHalf(make([]byte, 0, ti.NBytes), b)
					if c.IsNamed() {
						widened[wk] = b
					}
				}
			}
			ti.Bytes = b
		}
		a.Tensors[i] = ti
		plan = append(plan, memplan.Tensor{ID: id, NBytes: ti.NBytes, MemObjID: ti.MemObjID, Constant: ti.Constant, Deferred: ti.Deferred})
	}
	p, err := memplan.Build(plan)
	if err != nil {
		return fmt.Errorf("graph: %w: %w", ErrInvalidGraph, err)
	}
	a.Plan = p
	return nil
}

// resolveConstant returns constant tensor id's (t's) serialized bytes,
// inline in the blob's constant region or named data looked up by key
// (serialization.Blob.ResolveConstant), aliasing the caller's (usually
// memory-mapped) bytes; its error is a *ConstantError naming the value and
// the key.
func resolveConstant(blob *serialization.Blob, named serialization.NamedData, id int32, t *serialization.Tensor) ([]byte, error) {
	b, err := blob.ResolveConstant(t, named)
	if err == nil {
		return b, nil
	}
	ce := &ConstantError{ValueID: id, ConstantID: t.ConstantID, Msg: err.Error()}
	if int(t.ConstantID) < len(blob.Graph.Constants) {
		if c := blob.Graph.Constants[t.ConstantID]; c.IsNamed() {
			ce.Key = c.NamedKey
		}
	}
	var fe *serialization.FormatError
	switch {
	case errors.Is(err, serialization.ErrMissingKey) && named == nil:
		ce.Msg = "no named data was provided (pass the .pte or .ptd that holds it)"
	case errors.Is(err, serialization.ErrMissingKey):
		ce.Msg = "key not found in named data"
	case errors.As(err, &fe):
		ce.Msg = fe.Msg
	}
	return nil, ce
}

// checkIO requires inputs to be non-constant tensors or SymInts, and
// outputs tensors or SymInts, and records the inputs.
func (a *Analysis) checkIO() error {
	g := a.Graph
	n := len(g.Values)
	for i, id := range g.InputIDs {
		if int(id) < n && g.Values[id].Kind == serialization.KindSymInt {
			a.Inputs = append(a.Inputs, int32(id))
			continue
		}
		if int(id) >= n || a.Tensors[id] == nil {
			return fmt.Errorf("graph: %w: input %d (value %d) is not a tensor or SymInt", ErrUnsupported, i, id)
		}
		if a.Tensors[id].Constant {
			return invalidf("input %d (value %d) is a constant", i, id)
		}
		a.Inputs = append(a.Inputs, int32(id))
	}
	for i, id := range g.OutputIDs {
		if int(id) < n && g.Values[id].Kind == serialization.KindSymInt {
			continue
		}
		if int(id) >= n || a.Tensors[id] == nil {
			return fmt.Errorf("graph: %w: output %d (value %d) is not a tensor or SymInt", ErrUnsupported, i, id)
		}
	}
	return nil
}

// checkDeviceLimits rejects a tensor or shared memory object larger than
// the device can bind or allocate (a weight held in chunks has no buffer
// of its own), naming the op that needs it whole.
func (a *Analysis) checkDeviceLimits(lim Limits) error {
	check := func(id, memObj int32, size int64) error {
		n := memplan.AllocSize(size)
		if lim.MaxBufferSize > 0 && uint64(n) > lim.MaxBufferSize {
			return &LimitError{ValueID: id, MemObjID: memObj, Bytes: n, Limit: lim.MaxBufferSize, Name: "maxBufferSize", Op: a.limitOp(id)}
		}
		if lim.MaxStorageBufferBindingSize > 0 && uint64(n) > lim.MaxStorageBufferBindingSize {
			return &LimitError{ValueID: id, MemObjID: memObj, Bytes: n, Limit: lim.MaxStorageBufferBindingSize, Name: "maxStorageBufferBindingSize", Op: a.limitOp(id)}
		}
		return nil
	}
	largest := map[int32]int32{} // mem obj -> its largest user
	for i, ti := range a.Tensors {
		if ti == nil {
			continue
		}
		pl := a.Plan.Placements[int32(i)]
		switch {
		case pl.None:
		case pl.Shared:
			if u, ok := largest[pl.MemObjID]; !ok || a.Tensors[u].NBytes < ti.NBytes {
				largest[pl.MemObjID] = int32(i)
			}
		default:
			if err := check(int32(i), -1, pl.Size); err != nil {
				return err
			}
		}
	}
	for _, obj := range a.Plan.SharedIDs() {
		if err := check(largest[obj], obj, a.Plan.SharedSizes[obj]); err != nil {
			return err
		}
	}
	return nil
}

// checkWrites rejects a chain that reads a tensor before anything writes
// it: every tensor an op reads (any argument but the last, ValueList
// members included) and every graph output must be an input, a constant,
// or the output (last argument) of an earlier op.
func (a *Analysis) checkWrites() error {
	written := make([]bool, len(a.Tensors))
	for id, ti := range a.Tensors {
		if ti != nil && ti.Constant {
			written[id] = true
		}
	}
	for _, id := range a.Inputs {
		written[id] = true
	}
	vals := a.Graph.Values
	// tensors calls fn for id if it is a tensor, or for each tensor member
	// of a ValueList.
	tensors := func(id int32, fn func(int32) error) error {
		if id < 0 || int(id) >= len(vals) {
			return nil
		}
		if a.Tensors[id] != nil {
			return fn(id)
		}
		if vals[id].Kind == serialization.KindValueList {
			for _, m := range vals[id].IDs {
				if m >= 0 && int(m) < len(vals) && a.Tensors[m] != nil {
					if err := fn(m); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	for i, op := range a.Graph.Chain {
		if len(op.Args) == 0 {
			continue
		}
		for _, arg := range op.Args[:len(op.Args)-1] {
			err := tensors(arg, func(id int32) error {
				if !written[id] {
					return &OpError{Index: i, Name: op.Name, Err: fmt.Errorf("%w: %w: value %d is read but no input, constant or earlier op provides it", ErrInvalidGraph, ErrReadBeforeWrite, id)}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		tensors(op.Args[len(op.Args)-1], func(id int32) error { written[id] = true; return nil })
	}
	for i, id := range a.Graph.OutputIDs {
		if a.Tensors[id] != nil && !written[id] {
			return fmt.Errorf("graph: %w: %w: output %d (value %d) is never written", ErrInvalidGraph, ErrReadBeforeWrite, i, id)
		}
	}
	return nil
}
