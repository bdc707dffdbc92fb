package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// inspectOptions are the parsed arguments of "wgdelegate inspect".
type inspectOptions struct {
	model   string
	json    bool
	device  bool
	verbose bool
}

func inspectCommand(args []string, stdout, stderr io.Writer) error {
	var o inspectOptions
	specs := []flagSpec{
		{names: []string{"json"}, set: func(string) error { o.json = true; return nil }},
		{names: []string{"device"}, set: func(string) error { o.device = true; return nil }},
		{names: []string{"verbose", "v"}, set: func(string) error { o.verbose = true; return nil }},
	}
	pos, err := parseArgs("inspect", args, specs)
	if err != nil {
		return err
	}
	if o.model, err = oneModel("inspect", pos); err != nil {
		return err
	}
	mf, err := mapModel(o.model)
	if err != nil {
		return err
	}
	defer mf.Close()
	limits, limitsFrom := wgdelegate.DefaultLimits, "WebGPU default limits"
	if o.device {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		dev, release, err := openDevice(ctx, wgdelegate.DeviceOptions{Logger: newLogger(stderr, o.verbose)})
		if err != nil {
			return err
		}
		limits, limitsFrom = dev.Limits(), dev.AdapterName()+"; float32 subnormals "+dev.Subnormals()
		release()
	}
	if o.json {
		return inspectJSON(stdout, o.model, mf.Bytes(), limits, limitsFrom)
	}
	return inspectModel(stdout, o.model, mf.Bytes(), limits, limitsFrom)
}

// decodedModel is a model file decoded without a GPU: the program (nil for
// a raw blob) and every VulkanBackend delegate graph in it.
type decodedModel struct {
	path    string
	size    int
	program *serialization.Program
	named   *serialization.NamedDataMap
	graphs  []decodedGraph
}

// decodedGraph is one delegate's decoded blob; delegate is its index in the
// program's plan, -1 for a raw blob.
type decodedGraph struct {
	delegate int
	blob     *serialization.Blob
}

// decodeModel decodes data. For a .pte without a VulkanBackend delegate it
// returns the program with the error naming the delegates it has.
func decodeModel(path string, data []byte) (*decodedModel, error) {
	m := &decodedModel{path: path, size: len(data)}
	switch wgdelegate.Detect(data) {
	case wgdelegate.FormatBlob:
		b, err := serialization.DecodeBlob(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		m.graphs = []decodedGraph{{delegate: -1, blob: b}}
		return m, nil
	case wgdelegate.FormatProgram:
	default:
		return nil, fmt.Errorf("%s: %s", path, describeUnknown(data[:min(len(data), 8)]))
	}
	p, err := serialization.ParseProgram(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m.program, m.named = p, p.NamedData
	if _, err := p.DelegateBlob(serialization.VulkanBackendID); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	plan := max(slices.Index(p.Plans, "forward"), 0) // as wgdelegate.Open picks it
	for _, d := range p.Delegates {
		if d.ID != serialization.VulkanBackendID || d.Plan != plan {
			continue
		}
		b, err := serialization.DecodeBlob(d.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: delegate %d: %w", path, d.Delegate, err)
		}
		m.graphs = append(m.graphs, decodedGraph{delegate: d.Delegate, blob: b})
	}
	return m, nil
}

// inspectModel prints everything inspect shows about the model in data. For
// a .pte without a VulkanBackend delegate it prints the program and then
// returns the error naming the delegates it does have.
func inspectModel(w io.Writer, path string, data []byte, limits wgdelegate.Limits, limitsFrom string) error {
	fmt.Fprintf(w, "file %s (%d bytes)\n", path, len(data))
	m, err := decodeModel(path, data)
	if m != nil && m.program != nil {
		fmt.Fprintln(w, "format ExecuTorch .pte program")
		printProgram(w, m.program)
	} else if m != nil {
		fmt.Fprintln(w, "format VH00 delegate blob")
	}
	if err != nil {
		return err
	}
	for _, dg := range m.graphs {
		if len(m.graphs) > 1 {
			fmt.Fprintf(w, "\n=== VulkanBackend delegate %d ===\n", dg.delegate)
		}
		in := newGraphInfo(dg.blob.Graph)
		in.chunk(limits)
		printHeader(w, dg.blob)
		in.printValues(w)
		in.printOps(w)
		in.printConstants(w, m.named)
		in.printQuantized(w)
		in.printIO(w)
		if err := in.printPlan(w); err != nil {
			return err
		}
		in.printLimits(w, limits, limitsFrom)
	}
	return nil
}

func printProgram(w io.Writer, p *serialization.Program) {
	fmt.Fprintln(w, "\nprogram")
	t := newTable(w)
	t.row("  identifier", p.Identifier)
	t.row("  version", p.Version)
	if h := p.Header; h != nil {
		t.row("  eh00 header", fmt.Sprintf("length %d, program_size %d, segment_base_offset %d, segment_data_size %d",
			h.Length, h.ProgramSize, h.SegmentBaseOffset, h.SegmentDataSize))
	} else {
		t.row("  eh00 header", "none")
	}
	t.row("  execution plans", list(p.Plans))
	t.row("  inline delegate data", len(p.InlineData))
	t.row("  segments", len(p.Segments))
	var namedBytes int
	for _, k := range p.NamedData.Keys() {
		d, _ := p.NamedData.Get(k)
		namedBytes += len(d)
	}
	t.row("  named data", fmt.Sprintf("%d keys, %d bytes", p.NamedData.Len(), namedBytes))
	if len(p.ExternalTensors) > 0 {
		t.row("  external tensors", len(p.ExternalTensors))
	}
	t.flush()

	fmt.Fprintln(w, "\ndelegates")
	if len(p.Delegates) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	t = newTable(w)
	t.row("  PLAN", "INDEX", "ID", "LOCATION", "BYTES", "COMPILE SPECS")
	for _, d := range p.Delegates {
		plan := fmt.Sprint(d.Plan)
		if d.Plan < len(p.Plans) {
			plan = p.Plans[d.Plan]
		}
		specs := make([]string, len(d.CompileSpecs))
		for i, cs := range d.CompileSpecs {
			specs[i] = fmt.Sprintf("%s(%d bytes)", cs.Key, len(cs.Value))
		}
		cs := "-"
		if len(specs) > 0 {
			cs = strings.Join(specs, " ")
		}
		t.row("  "+plan, d.Delegate, d.ID, fmt.Sprintf("%v %d", d.Location, d.Index), len(d.Data), cs)
	}
	t.flush()
}

func printHeader(w io.Writer, b *serialization.Blob) {
	h := b.Header
	fmt.Fprintln(w, "\nVH00 header")
	t := newTable(w)
	t.row("  header_size", h.HeaderSize)
	t.row("  flatbuffer_offset", h.FlatbufferOffset)
	t.row("  flatbuffer_size", h.FlatbufferSize)
	t.row("  bytes_offset", h.BytesOffset)
	t.row("  bytes_size", h.BytesSize)
	t.flush()

	g := b.Graph
	fmt.Fprintln(w, "\ngraph")
	t = newTable(w)
	t.row("  version", fmt.Sprintf("%q", g.Version))
	t.row("  values", len(g.Values))
	t.row("  ops", len(g.Chain))
	t.row("  constants", len(g.Constants))
	t.row("  shaders", len(g.Shaders))
	t.row("  storage_type_override", enumOrDefault(g.StorageTypeOverride))
	t.row("  memory_layout_override", enumOrDefault(g.MemoryLayoutOverride))
	t.flush()
}

func enumOrDefault(v uint8) string {
	if v == serialization.DefaultStorage {
		return "default"
	}
	return fmt.Sprint(v)
}

// graphInfo is a decoded graph plus what inspect derives from it.
type graphInfo struct {
	g        *serialization.Graph
	nbytes   map[int32]int64 // tensor value id -> byte size, when computable
	sizeErr  map[int32]error // tensor value id -> why its size is unknown
	deferred map[int32]bool  // constant value ids that get no buffer
	memPlan  *memplan.Plan   // what the load allocates (graph.MemoryPlan)
	planErr  error
	users    map[int32][]int32 // constant id -> tensor value ids
	// chunks: the weights held in chunks under the limits checked
	// (graph.ChunkedWeights; their values are deferred too).
	chunks []graph.WeightChunks
}

// chunk plans the graph as a load under l does (graph.MemoryPlan): the
// weights held in chunks (too large for one buffer, read only where ops
// read chunks) are deferred, with no buffer of their own, and not over any
// limit.
func (in *graphInfo) chunk(l wgdelegate.Limits) {
	lim := graph.Limits{MaxBufferSize: l.MaxBufferSize, MaxStorageBufferBindingSize: l.MaxStorageBufferBindingSize}
	in.chunks = graph.ChunkedWeights(in.g, lim)
	in.memPlan, in.deferred, in.planErr = graph.MemoryPlan(in.g, lim)
}

func newGraphInfo(g *serialization.Graph) *graphInfo {
	in := &graphInfo{g: g, nbytes: map[int32]int64{}, sizeErr: map[int32]error{}, users: map[int32][]int32{}}
	for i := range g.Values {
		v := &g.Values[i]
		if v.Kind != serialization.KindTensor || v.Tensor == nil {
			continue
		}
		id := int32(i)
		if n, err := serialization.TensorNBytes(v.Tensor); err != nil {
			in.sizeErr[id] = err
		} else {
			// What the device allocates: a FLOAT16 tensor is held as
			// float32 (graph.DeviceDType), twice its serialized size.
			dt := v.Tensor.DataType
			in.nbytes[id] = n / int64(dt.Size()) * int64(graph.DeviceDType(dt).Size())
		}
		if v.Tensor.IsConstant() {
			in.users[v.Tensor.ConstantID] = append(in.users[v.Tensor.ConstantID], id)
		}
	}
	in.memPlan, in.deferred, in.planErr = graph.MemoryPlan(g, graph.Limits{})
	return in
}

func (in *graphInfo) sizeString(id int32) string {
	if n, ok := in.nbytes[id]; ok {
		return fmt.Sprint(n)
	}
	return "?"
}

func (in *graphInfo) printValues(w io.Writer) {
	fmt.Fprintln(w, "\nvalues")
	if len(in.g.Values) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	t := newTable(w)
	t.row("  ID", "KIND", "DTYPE", "DIMS", "CONSTANT_ID", "MEM_OBJ_ID", "VALUE")
	for i := range in.g.Values {
		v := &in.g.Values[i]
		if v.Kind == serialization.KindTensor && v.Tensor != nil {
			tt := v.Tensor
			t.row(fmt.Sprintf("  %d", i), v.Kind, dtypeLabel(tt), list(tt.Dims), tt.ConstantID, tt.MemObjID, "-")
			continue
		}
		t.row(fmt.Sprintf("  %d", i), v.Kind, "-", "-", "-", "-", scalarString(v))
	}
	t.flush()
}

// scalarString formats a non-tensor value.
func scalarString(v *serialization.Value) string {
	switch v.Kind {
	case serialization.KindInt:
		return fmt.Sprint(v.Int)
	case serialization.KindDouble:
		return fmt.Sprint(v.Double)
	case serialization.KindBool:
		return fmt.Sprint(v.Bool)
	case serialization.KindIntList:
		return list(v.Ints)
	case serialization.KindDoubleList:
		return list(v.Doubles)
	case serialization.KindBoolList:
		return list(v.Bools)
	case serialization.KindValueList:
		return "ids " + list(v.IDs)
	case serialization.KindString:
		return fmt.Sprintf("%q", v.String)
	case serialization.KindSymInt:
		return fmt.Sprintf("initial %d", v.SymInt)
	}
	return "-"
}

func (in *graphInfo) printOps(w io.Writer) {
	fmt.Fprintln(w, "\nops")
	if len(in.g.Chain) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	t := newTable(w)
	t.row("  INDEX", "NODE", "NAME", "ARGS")
	for i, op := range in.g.Chain {
		t.row(fmt.Sprintf("  %d", i), op.NodeID, op.Name, list(op.Args))
	}
	t.flush()
}

// constantInfo is what inspect shows about one VkBytes entry.
type constantInfo struct {
	source   string // "inline", "pte" or "ptd"
	named    bool
	key      string
	offset   uint64
	size     int64 // -1 when unknown
	users    []int32
	deferred bool // every user is deferred (false when there are none)
}

// constant describes constant i. The runtime reads as many bytes as the
// tensor needs; the recorded length is used when no value uses the entry.
func (in *graphInfo) constant(i int, named *serialization.NamedDataMap) constantInfo {
	c := in.g.Constants[i]
	ci := constantInfo{source: "inline", offset: c.Offset, size: int64(c.Length), users: in.users[int32(i)]}
	if len(ci.users) > 0 {
		ci.size = -1
		for _, id := range ci.users {
			if n, ok := in.nbytes[id]; ok {
				ci.size = max(ci.size, n)
			}
		}
		ci.deferred = true
		for _, id := range ci.users {
			if !in.deferred[id] {
				ci.deferred = false
			}
		}
	}
	if c.IsNamed() {
		ci.named, ci.key, ci.source = true, c.NamedKey, "ptd"
		if named != nil {
			if _, ok := named.Get(c.NamedKey); ok {
				ci.source = "pte"
			}
		}
	}
	return ci
}

// printConstants lists the VkBytes table. SOURCE says where a constant's
// bytes come from: the blob's inline region, the .pte's own named data, or a
// .ptd that must be passed with --data.
func (in *graphInfo) printConstants(w io.Writer, named *serialization.NamedDataMap) {
	fmt.Fprintln(w, "\nconstants")
	if len(in.g.Constants) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	t := newTable(w)
	t.row("  INDEX", "SOURCE", "KEY/OFFSET", "BYTES", "VALUES", "DEFERRED")
	for i := range in.g.Constants {
		c := in.constant(i, named)
		sizeStr := "?"
		if c.size >= 0 {
			sizeStr = fmt.Sprint(c.size)
		}
		loc := fmt.Sprintf("offset %d", c.offset)
		if c.named {
			loc = c.key
		}
		deferred := "-"
		if len(c.users) > 0 {
			deferred = "no"
			if c.deferred {
				deferred = "yes"
			}
		}
		t.row(fmt.Sprintf("  %d", i), c.source, loc, sizeStr, list(c.users), deferred)
	}
	t.flush()
}

// printQuantized lists the weights of weight-quantized ops: format, group
// size, shape, bytes on the device (packed weight, scales, sums) and bytes
// per weight. Nothing is printed for a graph without any.
func (in *graphInfo) printQuantized(w io.Writer) {
	qs := graph.QuantizedWeights(in.g)
	if len(qs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nquantized weights")
	t := newTable(w)
	t.row("  OP", "VALUE", "FORMAT", "GROUP", "DIMS", "WEIGHT", "SCALES", "SUMS", "BYTES/WEIGHT")
	var params, bytes int64
	for _, q := range qs {
		group := "channel"
		if q.Group > 0 {
			group = fmt.Sprint(q.Group)
		}
		t.row(fmt.Sprintf("  %d %s", q.OpIndex, q.Op), q.Weight, q.Format, group, list(in.g.Values[q.Weight].Tensor.Dims),
			q.WeightBytes, q.ScaleBytes, q.SumBytes, fmt.Sprintf("%.3f", bytesPerWeight(q.Bytes(), q.Params)))
		params += q.Params
		bytes += q.Bytes()
	}
	t.flush()
	fmt.Fprintf(w, "  %d weights, %d parameters, %d bytes: %.3f bytes per weight (float32: 4)\n", len(qs), params, bytes, bytesPerWeight(bytes, params))
}

// bytesPerWeight is bytes / params, 0 for no params.
func bytesPerWeight(bytes, params int64) float64 {
	if params == 0 {
		return 0
	}
	return float64(bytes) / float64(params)
}

// dtypeLabel is a tensor's serialized dtype, with "(f32 on device)" for
// FLOAT16, which the device holds as float32 (graph.DeviceDType).
func dtypeLabel(t *serialization.Tensor) string {
	if dev := graph.DeviceDType(t.DataType); dev != t.DataType {
		return fmt.Sprintf("%v(%v on device)", t.DataType, dev)
	}
	return t.DataType.String()
}

// ioDTypeLabel is dtypeLabel for a graph input or output, adding what the
// host feeds or receives when it differs (graph.HostDType: a force_fp16
// tensor staged as float32).
func ioDTypeLabel(t *serialization.Tensor) string {
	if host := graph.HostDType(t.DataType, t.StagingDataType); host != t.DataType {
		return fmt.Sprintf("%s,host:%v", dtypeLabel(t), host)
	}
	return dtypeLabel(t)
}

func (in *graphInfo) printIO(w io.Writer) {
	for _, sec := range []struct {
		name string
		ids  []uint32
	}{{"inputs", in.g.InputIDs}, {"outputs", in.g.OutputIDs}} {
		fmt.Fprintln(w, "\n"+sec.name)
		if len(sec.ids) == 0 {
			fmt.Fprintln(w, "  none")
			continue
		}
		t := newTable(w)
		t.row("  INDEX", "VALUE", "KIND", "DTYPE", "DIMS")
		for i, id := range sec.ids {
			if int(id) >= len(in.g.Values) {
				t.row(fmt.Sprintf("  %d", i), id, "out of range", "-", "-")
				continue
			}
			v := &in.g.Values[id]
			if v.Kind == serialization.KindTensor && v.Tensor != nil {
				t.row(fmt.Sprintf("  %d", i), id, v.Kind, ioDTypeLabel(v.Tensor), list(v.Tensor.Dims))
			} else {
				t.row(fmt.Sprintf("  %d", i), id, v.Kind, "-", "-")
			}
		}
		t.flush()
	}
}

// plan is the graph's memory plan as a load makes it (graph.MemoryPlan)
// and the ids of the tensors it plans (those of known size), ascending.
func (in *graphInfo) plan() (*memplan.Plan, []int32, error) {
	if in.planErr != nil {
		return nil, nil, fmt.Errorf("memory plan: %w", in.planErr)
	}
	var ids []int32
	for id := range in.nbytes {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return in.memPlan, ids, nil
}

// printPlan prints what loading the graph would allocate.
func (in *graphInfo) printPlan(w io.Writer) error {
	p, ids, err := in.plan()
	if err != nil {
		return err
	}
	s := p.Stats
	fmt.Fprintln(w, "\nmemory plan")
	t := newTable(w)
	t.row("  shared objects", fmt.Sprintf("%d, %d bytes", s.NumSharedObjects, s.SharedBufferBytes))
	dedicated := 0
	for _, pl := range p.Placements {
		if !pl.Shared && !pl.None {
			dedicated++
		}
	}
	t.row("  dedicated tensors", fmt.Sprintf("%d, %d bytes", dedicated, s.UnsharedTensorBufferBytes))
	t.row("  deferred constants", fmt.Sprintf("%d, %d bytes", s.NumDeferred, s.DeferredBytes))
	t.row("  tensor buffer bytes", s.TensorBufferBytes())
	t.flush()

	if len(p.SharedSizes) > 0 {
		users := in.sharedUsers(p, ids)
		fmt.Fprintln(w)
		t = newTable(w)
		t.row("  MEM_OBJ_ID", "BYTES", "ALLOCATED", "USERS")
		for _, mo := range p.SharedIDs() {
			var maxUser int64
			for _, id := range users[mo] {
				maxUser = max(maxUser, in.nbytes[id])
			}
			t.row(fmt.Sprintf("  %d", mo), maxUser, p.SharedSizes[mo], list(users[mo]))
		}
		t.flush()
	}

	var rows [][]any
	for _, id := range ids {
		pl := p.Placements[id]
		if pl.Shared {
			continue
		}
		kind := "tensor"
		switch {
		case pl.None:
			kind = "deferred constant"
		case in.g.Values[id].Tensor.IsConstant():
			kind = "constant"
		}
		alloc := "-"
		if !pl.None {
			alloc = fmt.Sprint(pl.Size)
		}
		rows = append(rows, []any{fmt.Sprintf("  %d", id), kind, in.nbytes[id], alloc})
	}
	if len(rows) > 0 {
		fmt.Fprintln(w)
		t = newTable(w)
		t.row("  VALUE", "PLACEMENT", "BYTES", "ALLOCATED")
		for _, r := range rows {
			t.row(r...)
		}
		t.flush()
	}
	if len(in.sizeErr) > 0 {
		var bad []int32
		for id := range in.sizeErr {
			bad = append(bad, id)
		}
		sort.Slice(bad, func(i, j int) bool { return bad[i] < bad[j] })
		fmt.Fprintf(w, "\n  not planned (size unknown): values %s: %v\n", list(bad), in.sizeErr[bad[0]])
	}
	return nil
}

// sharedUsers maps each shared mem_obj_id to its tensors' value ids.
func (in *graphInfo) sharedUsers(p *memplan.Plan, ids []int32) map[int32][]int32 {
	users := map[int32][]int32{}
	for _, id := range ids {
		if pl := p.Placements[id]; pl.Shared {
			users[pl.MemObjID] = append(users[pl.MemObjID], id)
		}
	}
	return users
}

// limitExceeded is one buffer the device would refuse.
type limitExceeded struct {
	value, memObj int32 // -1 when not applicable
	limit         string
	bytes         int64
	max           uint64
}

// exceeds lists the tensors and shared objects larger than the device's
// buffer or storage-binding limits. Every tensor is bound as a storage
// buffer, so the binding limit applies to all of them.
func (in *graphInfo) exceeds(l wgdelegate.Limits) []limitExceeded {
	var out []limitExceeded
	check := func(value, memObj int32, n int64) {
		switch {
		case l.MaxBufferSize > 0 && uint64(n) > l.MaxBufferSize:
			out = append(out, limitExceeded{value, memObj, "max_buffer_size", n, l.MaxBufferSize})
		case l.MaxStorageBufferBindingSize > 0 && uint64(n) > l.MaxStorageBufferBindingSize:
			out = append(out, limitExceeded{value, memObj, "max_storage_buffer_binding_size", n, l.MaxStorageBufferBindingSize})
		}
	}
	p, ids, err := in.plan()
	if err != nil {
		return nil
	}
	for _, id := range ids {
		if pl := p.Placements[id]; !pl.Shared && !pl.None {
			check(id, -1, pl.Size)
		}
	}
	for _, mo := range p.SharedIDs() {
		check(-1, mo, p.SharedSizes[mo])
	}
	return out
}

// printLimits prints the weights held in chunks and the buffers over the
// device's limits, if any.
func (in *graphInfo) printLimits(w io.Writer, l wgdelegate.Limits, from string) {
	ex := in.exceeds(l)
	fmt.Fprintf(w, "\ndevice limits (%s)\n", from)
	if len(in.chunks) > 0 {
		t := newTable(w)
		t.row("  CHUNKED WEIGHT", "BYTES", "ROWS", "HELD IN")
		for _, c := range in.chunks {
			what := fmt.Sprintf("value %d", c.ID)
			if len(c.Prepacked) > 0 {
				what += fmt.Sprintf(" (prepacked %v)", c.Prepacked)
			}
			t.row("  "+what, c.Bytes, c.Rows, fmt.Sprintf("%d chunks", c.Chunks))
		}
		t.flush()
	}
	if len(ex) == 0 {
		fmt.Fprintf(w, "  every buffer fits (max_buffer_size %d, max_storage_buffer_binding_size %d)\n", l.MaxBufferSize, l.MaxStorageBufferBindingSize)
		return
	}
	t := newTable(w)
	t.row("  BUFFER", "BYTES", "EXCEEDS", "MAX")
	for _, e := range ex {
		what := fmt.Sprintf("value %d", e.value)
		if e.value < 0 {
			what = fmt.Sprintf("mem_obj_id %d", e.memObj)
		}
		t.row("  "+what, e.bytes, e.limit, e.max)
	}
	t.flush()
}
