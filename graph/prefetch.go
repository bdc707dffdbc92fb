package graph

import (
	"sync/atomic"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// prefetchQueue bounds the kernels waiting for the prefetch goroutine; a
// kernel that finds the queue full is simply compiled with the rest when the
// load ends.
const prefetchQueue = 256

// pipelinePrefetch compiles a graph's pipelines on one background goroutine
// while its ops are still being recorded, so that shader compilation
// overlaps the weight uploads (which keep the loading goroutine busy) rather
// than following them. finishDispatches stops it and then looks every
// pipeline up as before: the ones compiled here are cache hits for it, the
// rest are compiled there in parallel.
type pipelinePrefetch struct {
	specs chan gpu.PipelineSpec
	done  chan struct{}
	stop  atomic.Bool
	seen  map[*shaders.Kernel]bool
}

// prefetchPipeline queues k's pipeline for background compilation, the
// first time the graph dispatches k. Re-recording (whose pipelines exist)
// does not prefetch.
func (g *WebGPUGraph) prefetchPipeline(k *shaders.Kernel) {
	if g.replay {
		return
	}
	p := g.prefetch
	if p == nil {
		p = &pipelinePrefetch{specs: make(chan gpu.PipelineSpec, prefetchQueue), done: make(chan struct{}),
			seen: map[*shaders.Kernel]bool{}}
		g.prefetch = p
		dev := g.dev
		go func() {
			defer close(p.done)
			for sp := range p.specs {
				if !p.stop.Load() {
					dev.Prefetch([]gpu.PipelineSpec{sp})
				}
			}
		}()
	}
	if p.seen[k] {
		return
	}
	p.seen[k] = true
	select {
	case p.specs <- gpu.PipelineSpec{Label: k.Name, Source: k.Source, Entry: k.Entry, Layout: k.Layout}:
	default:
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
