package memplan

import (
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// prepackOp is the op whose outputs the exporter never shares.
const prepackOp = "et_vk.prepack.default"

// ExporterLifetimes returns the span of every tensor the exporter's
// planner plans in g, in its steps: graph inputs start at step 0, op i of
// the chain is step i+1, and graph outputs live until step len(chain)+1
// (the graph's output node). Planned are the non-constant tensors that an
// op or the graph's inputs or outputs refer to (ValueList members count as
// referred to by the op that names the list), except the outputs of
// et_vk.prepack, which the exporter always leaves dedicated.
func ExporterLifetimes(g *serialization.Graph) []Interval {
	n := len(g.Values)
	spans := map[int32]*Span{}
	var order []int32
	prepacked := map[int32]bool{}
	touch := func(id int32, step int) {
		if id < 0 || int(id) >= n {
			return
		}
		v := &g.Values[id]
		if v.Kind == serialization.KindValueList {
			for _, m := range v.IDs {
				if m >= 0 && int(m) < n && g.Values[m].Kind == serialization.KindTensor {
					touchTensor(g, spans, &order, m, step)
				}
			}
			return
		}
		touchTensor(g, spans, &order, id, step)
	}
	for _, id := range g.InputIDs {
		touch(int32(id), 0)
	}
	for i, op := range g.Chain {
		for _, a := range op.Args {
			touch(a, i+1)
		}
		if op.Name == prepackOp && len(op.Args) == 2 {
			prepacked[op.Args[1]] = true
		}
	}
	for _, id := range g.OutputIDs {
		touch(int32(id), len(g.Chain)+1)
	}
	out := make([]Interval, 0, len(order))
	for _, id := range order {
		if prepacked[id] {
			continue
		}
		out = append(out, Interval{ID: id, Bytes: tensorBytes(g.Values[id].Tensor), Span: *spans[id]})
	}
	return out
}

func touchTensor(g *serialization.Graph, spans map[int32]*Span, order *[]int32, id int32, step int) {
	t := g.Values[id].Tensor
	if g.Values[id].Kind != serialization.KindTensor || t == nil || t.ConstantID >= 0 {
		return
	}
	s, ok := spans[id]
	if !ok {
		spans[id] = &Span{First: step, Last: step}
		*order = append(*order, id)
		return
	}
	s.First, s.Last = min(s.First, step), max(s.Last, step)
}

// tensorBytes is t's serialized byte size, saturating on overflow.
func tensorBytes(t *serialization.Tensor) int64 {
	n := int64(t.DataType.Size())
	for _, d := range t.Dims {
		if d != 0 && n > math.MaxInt64/int64(d) {
			return math.MaxInt64
		}
		n *= int64(d)
	}
	return n
}

// PlanLikeExporter rewrites the mem_obj_id of every non-constant tensor of
// g the way ExecuTorch's Vulkan exporter plans memory (MemoryPlanningPass,
// greedy, allow_overlapping_allocations=False): the tensors of
// ExporterLifetimes share objects by Greedy, so a shared object is reused
// as soon as its last reader has run (a chain of ops alternates two
// objects); every other non-constant tensor (prepack outputs, tensors
// nothing refers to) gets -1, a dedicated buffer. It returns the number of
// shared objects. Tests and benchmarks use it to run the project's graphs
// under the plan real exports carry.
func PlanLikeExporter(g *serialization.Graph) int {
	obj, sizes := Greedy(ExporterLifetimes(g))
	for i := range g.Values {
		v := &g.Values[i]
		if v.Kind != serialization.KindTensor || v.Tensor == nil || v.Tensor.ConstantID >= 0 {
			continue
		}
		if o, ok := obj[int32(i)]; ok {
			v.Tensor.MemObjID = o
		} else {
			v.Tensor.MemObjID = -1
		}
	}
	return len(sizes)
}

// PlanDedicated gives every non-constant tensor of g its own buffer
// (mem_obj_id -1), the plan with no sharing at all.
func PlanDedicated(g *serialization.Graph) {
	for i := range g.Values {
		if v := &g.Values[i]; v.Kind == serialization.KindTensor && v.Tensor != nil && v.Tensor.ConstantID < 0 {
			v.Tensor.MemObjID = -1
		}
	}
}
