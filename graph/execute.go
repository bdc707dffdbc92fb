package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/serialization"
)

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
		host := ts.host
		if i < len(hostTypes) {
			switch h := hostTypes[i]; {
			case tensor.Widens(ts.dtype, h):
				host = h
			case ts.half && (h == serialization.Float32 || h == serialization.Float16):
				host = h // a FLOAT16 output as the program declares it
			}
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
	g.recordedIn, g.recordedSym = make([][]int64, len(g.inputs)), make([][]int64, len(g.inputs))
	for i, id := range g.inputs {
		g.recordedIn[i] = g.inputKey(id, nil)
		g.recordedSym[i] = g.symKey(id, nil)
	}
	return nil
}

// NumInputs and NumOutputs give the graph's I/O arity.
func (g *WebGPUGraph) NumInputs() int { return len(g.inputs) }

func (g *WebGPUGraph) NumOutputs() int { return len(g.outputs) }

// InputInfo returns the dtype and shape input i expects: the device dtype,
// except for a FLOAT16 tensor, whose host dtype (its staging dtype, see
// HostDType) is returned; such an input accepts float32 and float16 data
// alike.
func (g *WebGPUGraph) InputInfo(i int) (serialization.DataType, []int64) {
	ts := g.tensors[g.inputs[i]]
	if ts == nil { // a SymInt, passed as a scalar int64 tensor
		return serialization.Int64, []int64{}
	}
	return ts.host, append([]int64(nil), ts.dims...)
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
// input shapes differ from the previous call, the ops are re-recorded for
// them first. When only SymInt values (or input values an op reads on the
// host) differ, only the ops that read them are re-run, and their new
// uniform params written, unless that changes a shape, kernel or grid:
// then everything is re-recorded too. An int64 input feeding an int32
// tensor (the exporter's default downcast) is narrowed with an overflow
// check; float64 into float32 likewise. Execute is safe for concurrent use; calls on one
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
	if err := g.upload(ctx, inputs, -1); err != nil {
		return nil, err
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
		switch {
		case o.host == ts.dtype && ts.half: // a FLOAT16 output staged as float32: halves' values
			data = tensor.RoundHalfBytes(make([]byte, 0, n), m[:n])
		case o.host == ts.dtype:
			data = make([]byte, n)
			copy(data, m[:n])
		case o.host == serialization.Float16: // a FLOAT16 output, computed in float32
			data = tensor.NarrowHalf(make([]byte, 0, n/2), m[:n])
		default:
			data = tensor.Widen(m[:n], ts.dtype)
		}
		if err := o.staging.Unmap(); err != nil {
			return nil, fmt.Errorf("graph: output %d: %w", i, err)
		}
		outs[i] = Tensor{DType: o.host, Shape: append([]int64(nil), ts.live...), Data: data}
	}
	return outs, nil
}

// upload brings the recording up to date with inputs (prepare) and writes
// the tensor inputs to their buffers, but input skip (-1: none), which the
// step takes from the device (a Head's fed token). The caller holds g.mu.
func (g *WebGPUGraph) upload(ctx context.Context, inputs []Tensor, skip int) error {
	if err := g.prepare(ctx, inputs); err != nil {
		return err
	}
	for i, in := range inputs {
		ts := g.tensors[g.inputs[i]]
		if ts == nil || i == skip {
			continue
		}
		data, err := g.hostToDevice(i, in, ts)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			continue
		}
		if err := g.dev.Write(ts.buf, 0, data); err != nil {
			return fmt.Errorf("graph: input %d: %w", i, err)
		}
	}
	return nil
}

// prepare checks the inputs' shapes and SymInt values and brings the
// recording up to date with them: nothing to do, a refresh (new SymInt
// values only) or a full re-record.
func (g *WebGPUGraph) prepare(ctx context.Context, inputs []Tensor) error {
	changed, symChanged := false, false
	for i, in := range inputs {
		id := g.inputs[i]
		ts := g.tensors[id]
		if ts == nil {
			v, err := symIntInput(i, in)
			if err != nil {
				return err
			}
			if old, ok := g.sym[id]; !ok || old != v {
				g.sym[id] = v
			}
		} else {
			if err := g.checkInputShape(i, in, ts); err != nil {
				return err
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
		g.liveKey = g.symKey(id, g.liveKey)
		if !slices.Equal(g.liveKey, g.recordedSym[i]) {
			symChanged = true
			g.recordedSym[i] = append(g.recordedSym[i][:0], g.liveKey...)
		}
	}
	if !changed && !g.stale && symChanged {
		// New SymInt values on the same shapes: usually only uniform
		// params move (refresh.go).
		ok, err := g.refresh(ctx)
		if err != nil {
			g.stale = true
			return fmt.Errorf("graph: refreshing for the new SymInt values: %w", err)
		}
		changed = !ok
	}
	if changed || g.stale {
		if err := g.rerecord(ctx); err != nil {
			g.stale = true // the records are unusable; record again next time
			return fmt.Errorf("graph: recording for the new input shapes: %w", err)
		}
		g.stale = false
	}
	return nil
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
		if in.Shape[j] < 0 {
			return &InputError{Index: i, Msg: fmt.Sprintf("shape %v has a negative size in dim %d", in.Shape, j)}
		}
		if in.Shape[j] > ts.dims[j] {
			return &InputError{Index: i, Msg: fmt.Sprintf("shape %v is larger than the graph's bound %v in dim %d", in.Shape, ts.dims, j)}
		}
	}
	return nil
}

// hostToDevice checks input i's data against its live shape and returns the
// bytes to upload, narrowing 64-bit host data when the device tensor is
// 32-bit. A FLOAT16 tensor (held as float32) takes float16 data widened,
// or float32 (float64) data rounded to half: its values are halves, as
// the reference runtime's staging copy makes them.
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
	case ts.half && in.DType != serialization.Float16:
		data := in.Data
		if in.DType == serialization.Float64 {
			var err error
			if data, err = tensor.Narrow(g.scratch[i][:0], in.Data, in.DType); err != nil {
				return nil, &InputError{Index: i, Msg: err.Error()}
			}
		} else if in.DType != serialization.Float32 {
			break
		}
		out := tensor.RoundHalfBytes(g.scratch[i][:0], data) // in place when narrowed
		g.scratch[i] = out
		return out, nil
	case in.DType == ts.dtype:
		return in.Data, nil
	case in.DType == serialization.Float16 && ts.half:
		out := tensor.WidenHalf(g.scratch[i][:0], in.Data)
		g.scratch[i] = out
		return out, nil
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
	return nil, &InputError{Index: i, Msg: fmt.Sprintf("dtype %v, graph expects %v", in.DType, ts.host)}
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
	for _, h := range g.heads {
		h.closed = true
		h.release()
	}
	g.heads = nil
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
