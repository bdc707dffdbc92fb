package graph

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
)

// constantBytes returns a constant's bytes, resolved once by Analyze.
func (g *WebGPUGraph) constantBytes(id int32, ts *tensorState) ([]byte, error) {
	if s, ok := g.slices[id]; ok && s.data != nil {
		return s.data, nil
	}
	if g.an == nil || int(id) >= len(g.an.Tensors) || g.an.Tensors[id] == nil || !g.an.Tensors[id].Constant {
		return nil, &ConstantError{ValueID: id, ConstantID: ts.constID, Msg: "constant bytes are only available while the graph is built"}
	}
	return g.an.Tensors[id].Bytes, nil
}

// allocate creates the shared and dedicated buffers and places every
// non-deferred constant with its bytes (weights.go). A prepack output (not
// a graph input or output) is placed by its et_vk.prepack, with the
// constant's bytes (MaterializeConstant).
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
			g.place(placement{id: int32(i), size: uint64(pl.Size), data: data, label: fmt.Sprintf("constant value %d", i)})
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
