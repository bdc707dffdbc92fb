package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// The JSON inspect --json writes. Field names are stable: tools may rely on
// them; new fields may be added.
type (
	inspectDoc struct {
		File    string      `json:"file"`
		Bytes   int         `json:"bytes"`
		Format  string      `json:"format"` // "pte" or "vh00"
		Program *programDoc `json:"program,omitempty"`
		Limits  limitsDoc   `json:"limits"`
		Graphs  []graphDoc  `json:"graphs"`
	}
	programDoc struct {
		Identifier     string        `json:"identifier"`
		Version        uint32        `json:"version"`
		Plans          []string      `json:"plans"`
		Delegates      []delegateDoc `json:"delegates"`
		NamedDataKeys  int           `json:"named_data_keys"`
		NamedDataBytes int           `json:"named_data_bytes"`
	}
	delegateDoc struct {
		Plan     string `json:"plan"`
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Location string `json:"location"` // "inline" or "segment"
		Bytes    int    `json:"bytes"`
	}
	// limitsDoc says which device limits the graphs were checked against.
	limitsDoc struct {
		From                             string `json:"from"`
		MaxBufferSize                    uint64 `json:"max_buffer_size"`
		MaxStorageBufferBindingSize      uint64 `json:"max_storage_buffer_binding_size"`
		MaxComputeWorkgroupsPerDimension uint32 `json:"max_compute_workgroups_per_dimension"`
	}
	graphDoc struct {
		Delegate      int           `json:"delegate"` // index in the plan's delegates; -1 for a raw blob
		Version       string        `json:"version"`
		NumValues     int           `json:"num_values"`
		NumOps        int           `json:"num_ops"`
		Inputs        []ioDoc       `json:"inputs"`
		Outputs       []ioDoc       `json:"outputs"`
		Ops           []opDoc       `json:"ops"`
		Unsupported   []string      `json:"unsupported_ops"`
		Constants     []constantDoc `json:"constants"`
		Quantized     []quantDoc    `json:"quantized_weights"`
		MemoryPlan    memoryPlanDoc `json:"memory_plan"`
		ExceedsLimits []limitDoc    `json:"exceeds_limits"`
		// Chunked: the weights held in chunks under the limits (too
		// large for one buffer, read only where ops read chunks).
		Chunked []chunkDoc `json:"chunked_weights"`
	}
	chunkDoc struct {
		Value     int32   `json:"value"`     // the constant
		Prepacked []int32 `json:"prepacked"` // its et_vk.prepack outputs
		Bytes     int64   `json:"bytes"`
		Rows      int64   `json:"rows"`
		Chunks    int     `json:"chunks"` // by its own row size
	}
	ioDoc struct {
		Index int    `json:"index"`
		Value uint32 `json:"value"`
		Kind  string `json:"kind"`
		DType string `json:"dtype,omitempty"`
		// DeviceDType and HostDType, when they differ from DType: a
		// FLOAT16 tensor is float32 on the device and may be staged
		// (fed and returned) as float32 (graph.DeviceDType, HostDType).
		DeviceDType string  `json:"device_dtype,omitempty"`
		HostDType   string  `json:"host_dtype,omitempty"`
		Shape       []int64 `json:"shape"`
	}
	opDoc struct {
		Name      string `json:"name"`
		Count     int    `json:"count"`
		Supported bool   `json:"supported"`
	}
	constantDoc struct {
		Index    int     `json:"index"`
		Source   string  `json:"source"` // "inline", "pte" (the program's named data) or "ptd" (needs --data)
		Named    bool    `json:"named"`
		Key      string  `json:"key,omitempty"`
		Offset   uint64  `json:"offset"`
		Bytes    int64   `json:"bytes"` // -1 when unknown
		Values   []int32 `json:"values"`
		Deferred bool    `json:"deferred"`
	}
	quantDoc struct {
		Op          string   `json:"op"`
		OpIndex     int      `json:"op_index"`
		Value       int32    `json:"value"` // the packed weight's value id
		Format      string   `json:"format"`
		Bits        int      `json:"bits"`
		Group       int64    `json:"group_size"` // 0: per channel
		Layout      string   `json:"layout"`
		Dims        []uint32 `json:"dims"`
		Params      int64    `json:"params"`
		WeightBytes int64    `json:"weight_bytes"`
		ScaleBytes  int64    `json:"scale_bytes"`
		SumBytes    int64    `json:"sum_bytes"`
	}
	memoryPlanDoc struct {
		SharedObjects     []sharedObjectDoc `json:"shared_objects"`
		SharedBytes       int64             `json:"shared_bytes"`
		DedicatedTensors  int               `json:"dedicated_tensors"`
		DedicatedBytes    int64             `json:"dedicated_bytes"`
		DeferredConstants int               `json:"deferred_constants"`
		DeferredBytes     int64             `json:"deferred_bytes"`
		TensorBufferBytes int64             `json:"tensor_buffer_bytes"`
		Unplanned         []int32           `json:"unplanned_values"` // tensors of unknown size
	}
	sharedObjectDoc struct {
		MemObjID  int32   `json:"mem_obj_id"`
		Bytes     int64   `json:"bytes"`     // the largest user
		Allocated int64   `json:"allocated"` // rounded up
		Users     []int32 `json:"users"`     // tensor value ids
	}
	limitDoc struct {
		Value    int32  `json:"value"`      // tensor value id, or -1 for a shared object
		MemObjID int32  `json:"mem_obj_id"` // -1 for a dedicated tensor
		Limit    string `json:"limit"`      // e.g. "max_storage_buffer_binding_size"
		Bytes    int64  `json:"bytes"`
		Max      uint64 `json:"max"`
	}
)

func inspectJSON(w io.Writer, path string, data []byte, limits wgdelegate.Limits, limitsFrom string) error {
	m, err := decodeModel(path, data)
	if err != nil {
		return err
	}
	doc := inspectDoc{File: path, Bytes: len(data), Format: "vh00", Graphs: []graphDoc{},
		Limits: limitsDoc{From: limitsFrom, MaxBufferSize: limits.MaxBufferSize,
			MaxStorageBufferBindingSize: limits.MaxStorageBufferBindingSize, MaxComputeWorkgroupsPerDimension: limits.MaxComputeWorkgroupsPerDimension}}
	if p := m.program; p != nil {
		doc.Format = "pte"
		pd := &programDoc{Identifier: p.Identifier, Version: p.Version, Plans: append([]string{}, p.Plans...),
			Delegates: []delegateDoc{}, NamedDataKeys: p.NamedData.Len()}
		for _, k := range p.NamedData.Keys() {
			d, _ := p.NamedData.Get(k)
			pd.NamedDataBytes += len(d)
		}
		for _, d := range p.Delegates {
			plan := fmt.Sprint(d.Plan)
			if d.Plan < len(p.Plans) {
				plan = p.Plans[d.Plan]
			}
			pd.Delegates = append(pd.Delegates, delegateDoc{Plan: plan, Index: d.Delegate, ID: d.ID, Location: d.Location.String(), Bytes: len(d.Data)})
		}
		doc.Program = pd
	}
	for _, dg := range m.graphs {
		in := newGraphInfo(dg.blob.Graph)
		in.chunk(limits)
		gd, err := in.doc(m.named, limits)
		if err != nil {
			return err
		}
		gd.Delegate = dg.delegate
		doc.Graphs = append(doc.Graphs, gd)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// doc describes the graph for inspect --json.
func (in *graphInfo) doc(named *serialization.NamedDataMap, limits wgdelegate.Limits) (graphDoc, error) {
	g := in.g
	d := graphDoc{Version: g.Version, NumValues: len(g.Values), NumOps: len(g.Chain),
		Inputs: in.ioDocs(g.InputIDs), Outputs: in.ioDocs(g.OutputIDs), Ops: []opDoc{}, Unsupported: []string{},
		Constants: []constantDoc{}, Quantized: []quantDoc{}, ExceedsLimits: []limitDoc{}, Chunked: []chunkDoc{}}
	for _, c := range in.chunks {
		d.Chunked = append(d.Chunked, chunkDoc{Value: c.ID, Prepacked: append([]int32{}, c.Prepacked...), Bytes: c.Bytes, Rows: c.Rows, Chunks: c.Chunks})
	}
	for _, q := range graph.QuantizedWeights(g) {
		d.Quantized = append(d.Quantized, quantDoc{Op: q.Op, OpIndex: q.OpIndex, Value: q.Weight, Format: q.Format, Bits: q.Bits,
			Group: q.Group, Layout: q.Layout, Dims: append([]uint32{}, g.Values[q.Weight].Tensor.Dims...), Params: q.Params,
			WeightBytes: q.WeightBytes, ScaleBytes: q.ScaleBytes, SumBytes: q.SumBytes})
	}
	counts := map[string]int{}
	var names []string
	for _, op := range g.Chain {
		if counts[op.Name] == 0 {
			names = append(names, op.Name)
		}
		counts[op.Name]++
	}
	sort.Strings(names)
	for _, n := range names {
		_, ok := ops.Lookup(n)
		d.Ops = append(d.Ops, opDoc{Name: n, Count: counts[n], Supported: ok})
		if !ok {
			d.Unsupported = append(d.Unsupported, n)
		}
	}
	for i := range g.Constants {
		c := in.constant(i, named)
		cd := constantDoc{Index: i, Source: c.source, Named: c.named, Key: c.key, Offset: c.offset, Bytes: c.size,
			Values: append([]int32{}, c.users...), Deferred: c.deferred}
		d.Constants = append(d.Constants, cd)
	}
	p, ids, err := in.plan()
	if err != nil {
		return d, err
	}
	s := p.Stats
	mp := memoryPlanDoc{SharedObjects: []sharedObjectDoc{}, SharedBytes: s.SharedBufferBytes, DedicatedBytes: s.UnsharedTensorBufferBytes,
		DeferredConstants: s.NumDeferred, DeferredBytes: s.DeferredBytes, TensorBufferBytes: s.TensorBufferBytes(), Unplanned: []int32{}}
	users := in.sharedUsers(p, ids)
	for _, mo := range p.SharedIDs() {
		var largest int64
		for _, id := range users[mo] {
			largest = max(largest, in.nbytes[id])
		}
		mp.SharedObjects = append(mp.SharedObjects, sharedObjectDoc{MemObjID: mo, Bytes: largest, Allocated: p.SharedSizes[mo], Users: append([]int32{}, users[mo]...)})
	}
	for _, pl := range p.Placements {
		if !pl.Shared && !pl.None {
			mp.DedicatedTensors++
		}
	}
	for id := range in.sizeErr {
		mp.Unplanned = append(mp.Unplanned, id)
	}
	sort.Slice(mp.Unplanned, func(i, j int) bool { return mp.Unplanned[i] < mp.Unplanned[j] })
	d.MemoryPlan = mp
	for _, e := range in.exceeds(limits) {
		d.ExceedsLimits = append(d.ExceedsLimits, limitDoc{Value: e.value, MemObjID: e.memObj, Limit: e.limit, Bytes: e.bytes, Max: e.max})
	}
	return d, nil
}

func (in *graphInfo) ioDocs(ids []uint32) []ioDoc {
	out := []ioDoc{}
	for i, id := range ids {
		d := ioDoc{Index: i, Value: id, Kind: "out of range", Shape: []int64{}}
		if int(id) < len(in.g.Values) {
			v := &in.g.Values[id]
			d.Kind = v.Kind.String()
			if v.Kind == serialization.KindTensor && v.Tensor != nil {
				dt := v.Tensor.DataType
				d.DType = dt.String()
				if dev := graph.DeviceDType(dt); dev != dt {
					d.DeviceDType = dev.String()
				}
				if host := graph.HostDType(dt, v.Tensor.StagingDataType); host != dt {
					d.HostDType = host.String()
				}
				for _, x := range v.Tensor.Dims {
					d.Shape = append(d.Shape, int64(x))
				}
			}
		}
		out = append(out, d)
	}
	return out
}
