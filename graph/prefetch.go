package graph

import (
	"sync/atomic"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// prefetchQueue bounds the kernels waiting for the prefetch goroutine (and
// the compiled ones waiting to be warmed up); past it a kernel is simply
// compiled, or warmed up, with the rest when the load ends.
const prefetchQueue = 256

// prefetchSync makes the load wait for each kernel's background compile
// right after queuing it, so that early warm-ups happen deterministically
// (tests only).
var prefetchSync bool

// pipelinePrefetch compiles a graph's pipelines on one background goroutine
// while its ops are still being recorded, so that shader compilation
// overlaps the weight uploads (which keep the loading goroutine busy) rather
// than following them. finishDispatches stops it and then looks every
// pipeline up as before: the ones compiled here are cache hits for it, the
// rest are compiled there in parallel.
//
// A pipeline compiled here is also warmed up early (see warmUpEarly): its
// first eligible dispatch is submitted on one workgroup right away, so that
// the driver's first-dispatch work (llvmpipe's JIT) runs on the driver's
// thread during the load instead of in the final warm-up.
type pipelinePrefetch struct {
	specs chan prefetchReq
	ready chan prefetched
	done  chan struct{}
	stop  atomic.Bool

	// Loading goroutine only:
	queued map[*shaders.Kernel]bool
	pipes  map[*shaders.Kernel]*gpu.Pipeline // compiled, from ready
	first  map[*shaders.Kernel]int           // index in g.pend of the kernel's first dispatch that may warm it up early
}

type prefetchReq struct {
	k    *shaders.Kernel
	spec gpu.PipelineSpec
}

type prefetched struct {
	k *shaders.Kernel
	p *gpu.Pipeline
}

// prefetchPipeline is called for every dispatch recorded during a load, the
// pendingDispatch at index i of g.pend; eligible tells whether it may be
// run early (it writes no state that outlives an Execute). It queues the
// kernel's pipeline for background compilation the first time, and warms up
// whatever pipelines have been compiled meanwhile. Re-recording (whose
// pipelines exist) does nothing.
func (g *WebGPUGraph) prefetchPipeline(k *shaders.Kernel, i int, eligible bool) {
	if g.replay {
		return
	}
	p := g.prefetch
	if p == nil {
		p = &pipelinePrefetch{specs: make(chan prefetchReq, prefetchQueue), ready: make(chan prefetched, prefetchQueue),
			done: make(chan struct{}), queued: map[*shaders.Kernel]bool{}, pipes: map[*shaders.Kernel]*gpu.Pipeline{},
			first: map[*shaders.Kernel]int{}}
		g.prefetch = p
		go p.run(g.dev)
	}
	if _, ok := p.first[k]; !ok && eligible && g.warmEarly {
		p.first[k] = i
	}
	if !p.queued[k] {
		p.queued[k] = true
		select {
		case p.specs <- prefetchReq{k: k, spec: gpu.PipelineSpec{Label: k.Name, Source: k.Source, Entry: k.Entry, Layout: k.Layout}}:
			if prefetchSync {
				r := <-p.ready
				p.pipes[r.k] = r.p
			}
		default:
		}
	}
	for {
		select {
		case r := <-p.ready:
			p.pipes[r.k] = r.p
			continue
		default:
		}
		break
	}
	if !g.warmEarly {
		return
	}
	for k, i := range p.first {
		if pipe := p.pipes[k]; pipe != nil && !g.warmed[pipe] {
			g.warmUpEarly(pipe, &g.pend[i])
		}
	}
}

// run is the prefetch goroutine.
func (p *pipelinePrefetch) run(dev *gpu.Device) {
	defer close(p.done)
	for r := range p.specs {
		if p.stop.Load() {
			continue
		}
		// Sent even when compilation failed (nil), for prefetchSync.
		ps := dev.Prefetch([]gpu.PipelineSpec{r.spec})
		select {
		case p.ready <- prefetched{k: r.k, p: ps[0]}:
		default:
		}
	}
}

// stopPrefetch stops the prefetch goroutine after the pipeline it is
// compiling, if any, and waits for it. Safe to call when none runs.
func (g *WebGPUGraph) stopPrefetch() {
	p := g.prefetch
	if p == nil {
		return
	}
	g.prefetch = nil
	p.stop.Store(true)
	close(p.specs)
	<-p.done
}

// warmUpEarly submits pd on one workgroup with pipe, without waiting, and
// marks pipe warm so that the final warm-up leaves it out. The dispatch
// sees the buffers as they are now (constants written, intermediates not
// yet), which is harmless: like the final warm-up it only writes buffers
// that every Execute rewrites (pd writes no state), and its results are
// never read. Any failure just leaves pipe to the final warm-up.
func (g *WebGPUGraph) warmUpEarly(pipe *gpu.Pipeline, pd *pendingDispatch) {
	g.warmed[pipe] = true
	entries := make([]gpu.BindEntry, 0, len(pd.tensors)+1)
	for _, id := range pd.tensors {
		entries = append(entries, gpu.BindEntry{Buf: g.tensors[id].buf})
	}
	var params *gpu.Buffer
	if pd.paramSize > 0 {
		var err error
		if params, err = g.dev.NewBuffer(gpu.UniformBuf, pd.paramSize, "warm-up params"); err != nil {
			delete(g.warmed, pipe)
			return
		}
		defer params.Release() // the device keeps it until the dispatch is done
		if err := g.dev.Write(params, 0, g.arena[pd.paramOffset:pd.paramOffset+pd.paramSize]); err != nil {
			delete(g.warmed, pipe)
			return
		}
		entries = append(entries, gpu.BindEntry{Buf: params})
	}
	bg, err := g.dev.NewBindGroup(pipe, entries, "warm-up "+pd.kernel.Name)
	if err != nil {
		delete(g.warmed, pipe)
		return
	}
	defer bg.Release()
	if err := g.dev.Submit([]gpu.Dispatch{{Pipeline: pipe, Group: bg, X: 1, Y: 1, Z: 1}}); err != nil {
		g.log.Debug("graph: early warm-up failed", "kernel", pd.kernel.Name, "err", err)
		delete(g.warmed, pipe)
	}
}
