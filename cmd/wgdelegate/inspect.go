package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/prepack"
	"github.com/wgdelegate/wgdelegate/serialization"
)

func inspectCommand(args []string, stdout io.Writer) error {
	pos, err := parseArgs("inspect", args, nil)
	if err != nil {
		return err
	}
	path, err := oneModel("inspect", pos)
	if err != nil {
		return err
	}
	mf, err := serialization.MapFile(path)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	defer mf.Close()
	return inspectModel(stdout, path, mf.Bytes())
}

// inspectModel prints everything inspect shows about the model in data. For
// a .pte without a VulkanBackend delegate it prints the program and then
// returns the error naming the delegates it does have.
func inspectModel(w io.Writer, path string, data []byte) error {
	var (
		blob  []byte
		named *serialization.NamedDataMap
	)
	fmt.Fprintf(w, "file %s (%d bytes)\n", path, len(data))
	switch wgdelegate.Detect(data) {
	case wgdelegate.FormatBlob:
		fmt.Fprintln(w, "format VH00 delegate blob")
		blob = data
	case wgdelegate.FormatProgram:
		fmt.Fprintln(w, "format ExecuTorch .pte program")
		p, err := serialization.ParseProgram(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		printProgram(w, p)
		if blob, err = p.DelegateBlob(serialization.VulkanBackendID); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		named = p.NamedData
	default:
		return fmt.Errorf("%s: %s", path, describeUnknown(data[:min(len(data), 8)]))
	}
	b, err := serialization.DecodeBlob(blob)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	in := newGraphInfo(b.Graph)
	printHeader(w, b)
	in.printValues(w)
	in.printOps(w)
	in.printConstants(w, named)
	in.printIO(w)
	return in.printPlan(w)
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
	nbytes   map[int32]int64   // tensor value id -> byte size, when computable
	sizeErr  map[int32]error   // tensor value id -> why its size is unknown
	deferred map[int32]bool    // constant value ids that get no buffer
	users    map[int32][]int32 // constant id -> tensor value ids
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
			in.nbytes[id] = n
		}
		if v.Tensor.IsConstant() {
			in.users[v.Tensor.ConstantID] = append(in.users[v.Tensor.ConstantID], id)
		}
	}
	in.deferred = prepack.Deferred(g)
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
			t.row(fmt.Sprintf("  %d", i), v.Kind, tt.DataType, list(tt.Dims), tt.ConstantID, tt.MemObjID, "-")
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
	for i, c := range in.g.Constants {
		users := in.users[int32(i)]
		// The runtime reads as many bytes as the tensor needs; fall back to
		// the recorded length when no value uses the entry.
		size, known := int64(c.Length), true
		if len(users) > 0 {
			size, known = 0, false
			for _, id := range users {
				if n, ok := in.nbytes[id]; ok {
					size, known = max(size, n), true
				}
			}
		}
		sizeStr := "?"
		if known {
			sizeStr = fmt.Sprint(size)
		}
		src, loc := "inline", fmt.Sprintf("offset %d", c.Offset)
		if c.IsNamed() {
			loc = c.NamedKey
			src = "ptd"
			if named != nil {
				if _, ok := named.Get(c.NamedKey); ok {
					src = "pte"
				}
			}
		}
		deferred := "-"
		if len(users) > 0 {
			deferred = "yes"
			for _, id := range users {
				if !in.deferred[id] {
					deferred = "no"
				}
			}
		}
		t.row(fmt.Sprintf("  %d", i), src, loc, sizeStr, list(users), deferred)
	}
	t.flush()
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
				t.row(fmt.Sprintf("  %d", i), id, v.Kind, v.Tensor.DataType, list(v.Tensor.Dims))
			} else {
				t.row(fmt.Sprintf("  %d", i), id, v.Kind, "-", "-")
			}
		}
		t.flush()
	}
}

// plan runs memplan on the graph's tensors of known size, with the runtime's
// deferral rule. ids are those tensors' value ids, ascending.
func (in *graphInfo) plan() (*memplan.Plan, []int32, error) {
	var tensors []memplan.Tensor
	var ids []int32
	for id := range in.nbytes {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		tt := in.g.Values[id].Tensor
		tensors = append(tensors, memplan.Tensor{ID: id, NBytes: in.nbytes[id], MemObjID: tt.MemObjID,
			Constant: tt.IsConstant(), Deferred: in.deferred[id]})
	}
	p, err := memplan.Build(tensors)
	if err != nil {
		return nil, nil, fmt.Errorf("memory plan: %w", err)
	}
	return p, ids, nil
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
		users := map[int32][]int32{}
		for _, id := range ids {
			if pl := p.Placements[id]; pl.Shared {
				users[pl.MemObjID] = append(users[pl.MemObjID], id)
			}
		}
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
