package memplan

import (
	"fmt"
	"sort"
)

// Tensor is one tensor value as the planner sees it.
type Tensor struct {
	ID       int32
	NBytes   int64
	MemObjID int32
	Constant bool
	Deferred bool // no buffer: a constant, or prepack output, read only through prepack or packing
}

// Placement says where one tensor lives.
type Placement struct {
	Shared   bool  // in the shared object MemObjID
	MemObjID int32 // valid when Shared
	Size     int64 // allocated bytes for a dedicated tensor (AllocSize(NBytes))
	None     bool  // deferred: no buffer
}

// Plan is the result of planning.
type Plan struct {
	Placements map[int32]Placement
	// SharedSizes maps each mem_obj_id to its allocation size (AllocSize
	// of the largest user's byte size).
	SharedSizes map[int32]int64
	Stats       Stats
}

// Stats summarises the plan with the reference runtime's memory fields.
type Stats struct {
	NumTensors                int   // tensors with nbytes > 0
	UnsharedTensorBufferBytes int64 // sum of nbytes of dedicated tensors that have a buffer
	SharedBufferBytes         int64 // sum of the per-mem_obj_id maxima
	NumSharedObjects          int
	NumDeferred               int   // deferred tensors: no buffer of their own
	DeferredBytes             int64 // bytes those constants would have used
}

// TensorBufferBytes is shared plus unshared bytes.
func (s Stats) TensorBufferBytes() int64 { return s.SharedBufferBytes + s.UnsharedTensorBufferBytes }

// AllocSize is the size of the buffer allocated for n bytes, as the GPU
// seam allocates it: a multiple of 16 (WebGPU needs multiples of 4 for
// copies and mapping; 16 keeps every buffer vec4-addressable) and at least
// 16 (WebGPU rejects empty bindings).
func AllocSize(n int64) int64 {
	if n < 16 {
		return 16
	}
	return (n + 15) &^ 15
}

// Build plans tensors. Constants are always dedicated, whatever their
// mem_obj_id says, since they take no part in the exporter's planning.
func Build(tensors []Tensor) (*Plan, error) {
	p := &Plan{Placements: make(map[int32]Placement, len(tensors)), SharedSizes: map[int32]int64{}}
	maxUser := map[int32]int64{}
	for _, t := range tensors {
		if t.NBytes < 0 {
			return nil, fmt.Errorf("memplan: tensor %d has negative size %d", t.ID, t.NBytes)
		}
		if _, dup := p.Placements[t.ID]; dup {
			return nil, fmt.Errorf("memplan: tensor %d planned twice", t.ID)
		}
		if t.NBytes > 0 {
			p.Stats.NumTensors++
		}
		switch {
		case t.Deferred:
			p.Placements[t.ID] = Placement{None: true}
			p.Stats.NumDeferred++
			p.Stats.DeferredBytes += t.NBytes
		case t.Constant || t.MemObjID < 0:
			p.Placements[t.ID] = Placement{Size: AllocSize(t.NBytes)}
			p.Stats.UnsharedTensorBufferBytes += t.NBytes
		default:
			p.Placements[t.ID] = Placement{Shared: true, MemObjID: t.MemObjID}
			if cur, ok := maxUser[t.MemObjID]; !ok || t.NBytes > cur {
				maxUser[t.MemObjID] = t.NBytes
			}
		}
	}
	for id, n := range maxUser {
		p.SharedSizes[id] = AllocSize(n)
		p.Stats.SharedBufferBytes += n
	}
	p.Stats.NumSharedObjects = len(maxUser)
	return p, nil
}

// SharedIDs returns the shared object ids in ascending order.
func (p *Plan) SharedIDs() []int32 {
	ids := make([]int32, 0, len(p.SharedSizes))
	for id := range p.SharedSizes {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
