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
// pipeline up as before: it finds the ones compiled here in the device's
// cache (counted as created, not as hits), and compiles the rest there in
// parallel.
//
// A pipeline compiled here is also warmed up early (see warmUpEarly): its
// first dispatch is submitted on one workgroup, on scratch buffers, as soon
// as the pipeline is ready, so that the driver's first-dispatch work
// (llvmpipe's JIT) runs on the driver's thread during the load instead of
// in the final warm-up.
type pipelinePrefetch struct {
	specs chan prefetchReq
	ready chan prefetched
	done  chan struct{}
	stop  atomic.Bool

	// Loading goroutine only:
	queued map[*shaders.Kernel]bool
	first  map[*shaders.Kernel]int // index in g.pend of the kernel's first dispatch
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
// pendingDispatch at index i of g.pend. It queues the kernel's pipeline for
// background compilation the first time, and warms up whatever pipelines
// have been compiled meanwhile. Re-recording (whose pipelines exist) does
// nothing.
func (g *WebGPUGraph) prefetchPipeline(k *shaders.Kernel, i int) {
	if g.replay {
		return
	}
	p := g.prefetch
	if p == nil {
		p = &pipelinePrefetch{specs: make(chan prefetchReq, prefetchQueue), ready: make(chan prefetched, prefetchQueue),
			done: make(chan struct{}), queued: map[*shaders.Kernel]bool{}, first: map[*shaders.Kernel]int{}}
		g.prefetch = p
		go p.run(g.dev)
	}
	if _, ok := p.first[k]; !ok && g.warmEarly {
		p.first[k] = i
	}
	if !p.queued[k] {
		p.queued[k] = true
		select {
		case p.specs <- prefetchReq{k: k, spec: gpu.PipelineSpec{Label: k.Name, Source: k.Source, Entry: k.Entry, Layout: k.Layout}}:
			if prefetchSync {
				g.warmCompiled(<-p.ready)
			}
		default:
		}
	}
	g.warmReady()
}

// warmReady warms up the pipelines compiled since the last call (see
// warmUpEarly). It does nothing when no prefetch runs.
func (g *WebGPUGraph) warmReady() {
	p := g.prefetch
	if p == nil {
		return
	}
	for {
		select {
		case r := <-p.ready:
			g.warmCompiled(r)
			continue
		default:
		}
		return
	}
}

// warmCompiled warms up a pipeline the prefetch goroutine compiled (nil
// when compilation failed), with its kernel's first dispatch. A kernel is
// queued at its first dispatch, so that dispatch is always recorded by
// then.
func (g *WebGPUGraph) warmCompiled(r prefetched) {
	if !g.warmEarly || r.p == nil || g.warmed[r.p] {
		return
	}
	if i, ok := g.prefetch.first[r.k]; ok {
		g.warmUpEarly(r.p, &g.pend[i])
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

// warmScratchSize is the size of each scratch buffer an early warm-up
// binds. Kernels index runtime-sized arrays, whose minimum binding size is
// one element; WebGPU clamps the accesses past the end.
const warmScratchSize = 16 << 10

// warmUpEarly submits pd's kernel on one workgroup with pipe, without
// waiting, and marks pipe warm so that the final warm-up leaves it out. It
// binds scratch buffers instead of the graph's: one zeroed buffer for every
// input and one buffer per output, with pd's real parameters. The
// dispatch thus touches no buffer of the graph (weights still being
// uploaded, state kept across Executes) and its results are never read;
// the driver builds the same kernel whatever the buffers. Any failure just
// leaves pipe to the final warm-up.
func (g *WebGPUGraph) warmUpEarly(pipe *gpu.Pipeline, pd *pendingDispatch) {
	g.warmed[pipe] = true
	ok := false
	defer func() {
		if !ok {
			delete(g.warmed, pipe)
		}
	}()
	entries := make([]gpu.BindEntry, 0, len(pipe.Layout))
	outs := 0
	for _, b := range pipe.Layout {
		var buf *gpu.Buffer
		switch b {
		case shaders.ReadOnly:
			if g.warmIn == nil {
				var err error
				if g.warmIn, err = g.newBuffer(gpu.Storage, warmScratchSize, "warm-up scratch"); err != nil {
					return
				}
			}
			buf = g.warmIn
		case shaders.ReadWrite:
			for len(g.warmOut) <= outs {
				b, err := g.newBuffer(gpu.Storage, warmScratchSize, "warm-up scratch")
				if err != nil {
					return
				}
				g.warmOut = append(g.warmOut, b)
			}
			buf = g.warmOut[outs]
			outs++
		case shaders.Uniform:
			if pd.paramSize == 0 {
				return
			}
			params, err := g.dev.NewBuffer(gpu.UniformBuf, pd.paramSize, "warm-up params")
			if err != nil {
				return
			}
			defer params.Release() // the device keeps it until the dispatch is done
			if err := g.dev.Write(params, 0, g.arena[pd.paramOffset:pd.paramOffset+pd.paramSize]); err != nil {
				return
			}
			buf = params
		}
		entries = append(entries, gpu.BindEntry{Buf: buf})
	}
	bg, err := g.dev.NewBindGroup(pipe, entries, "warm-up "+pd.kernel.Name)
	if err != nil {
		return
	}
	defer bg.Release()
	if err := g.dev.Submit([]gpu.Dispatch{{Pipeline: pipe, Group: bg, X: 1, Y: 1, Z: 1}}); err != nil {
		g.log.Debug("graph: early warm-up failed", "kernel", pd.kernel.Name, "err", err)
		return
	}
	ok = true
}

// releaseWarmScratch releases the early warm-ups' scratch buffers (the
// device keeps them until the warm-ups are done).
func (g *WebGPUGraph) releaseWarmScratch() {
	if g.warmIn != nil {
		g.releaseOwned(g.warmIn)
		g.warmIn = nil
	}
	for _, b := range g.warmOut {
		g.releaseOwned(b)
	}
	g.warmOut = nil
}
