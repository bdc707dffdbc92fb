package gpu

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// inc2WGSL is incWGSL adding 2: a second pipeline with the same layout.
var inc2WGSL = strings.Replace(incWGSL, "+ 1u;", "+ 2u;", 1)

// dispatchesPerRun is how many dispatches one iteration of
// BenchmarkDispatch records in its one compute pass.
const dispatchesPerRun = 200

// incPipelines returns the inc and inc2 pipelines: two pipelines of one
// layout.
func incPipelines(tb testing.TB, d *Device) (inc, inc2 *Pipeline) {
	tb.Helper()
	layout := []shaders.Binding{shaders.ReadWrite}
	inc, err := d.Pipeline("inc", incWGSL, "main", layout)
	if err != nil {
		tb.Fatal(err)
	}
	inc2, err = d.Pipeline("inc2", inc2WGSL, "main", layout)
	if err != nil {
		tb.Fatal(err)
	}
	return inc, inc2
}

// dispatchPatterns are BenchmarkDispatch's record patterns: every dispatch
// on one pipeline and bind group, or alternating between two pipelines or
// between two bind groups.
var dispatchPatterns = []string{"same", "pipelines", "groups"}

// dispatchSetup makes the records of one pattern: n dispatches of groups
// workgroups (64 invocations each, 1..64 groups) of tiny kernels. The
// returned function releases the buffers and bind groups.
func dispatchSetup(tb testing.TB, d *Device, pattern string, groups uint32, n int) ([]Dispatch, func()) {
	tb.Helper()
	p1, p2 := incPipelines(tb, d)
	var bufs []*Buffer
	var bgs []*BindGroup
	release := func() {
		for _, g := range bgs {
			g.Release()
		}
		for _, b := range bufs {
			b.Release()
		}
	}
	for i := 0; i < 2; i++ {
		b, err := d.NewBuffer(Storage, 64*64*4, "data")
		if err != nil {
			release()
			tb.Fatal(err)
		}
		bufs = append(bufs, b)
		g, err := d.NewBindGroup(p1, []BindEntry{{Buf: b}}, "data")
		if err != nil {
			release()
			tb.Fatal(err)
		}
		bgs = append(bgs, g)
	}
	ds := make([]Dispatch, n)
	for i := range ds {
		ds[i] = Dispatch{Pipeline: p1, Group: bgs[0], X: groups, Y: 1, Z: 1}
		switch {
		case pattern == "pipelines" && i%2 == 1:
			ds[i].Pipeline = p2
		case pattern == "groups" && i%2 == 1:
			ds[i].Group = bgs[1]
		}
	}
	return ds, release
}

// BenchmarkDispatch measures what one small dispatch costs inside one
// compute pass and one submit, as Program.Run replays a graph's records:
//
//   - threads: the driver's default worker pool, or CPUThreadsInline;
//   - pattern: one pipeline and bind group throughout ("same"), two
//     pipelines alternating, or two bind groups alternating;
//   - wg: workgroups per dispatch (64 invocations each);
//   - run times a whole Run (encode, submit, execute, wait); encode times
//     only recording the pass and finishing the command buffer, which is
//     then dropped (the CPU cost per dispatch paid on every Execute, since
//     a command buffer cannot be submitted twice).
//
// Run it with
//
//	go test -run '^$' -bench Dispatch -count 5 ./internal/gpu/
func BenchmarkDispatch(b *testing.B) {
	inline, err := Open(context.Background(), Options{CPUThreads: CPUThreadsInline})
	if err != nil {
		b.Fatal(err)
	}
	defer inline.Close()
	for _, th := range []struct {
		name string
		d    *Device
	}{{"default", testDev}, {"inline", inline}} {
		for _, pattern := range dispatchPatterns {
			for _, wg := range []uint32{1, 2, 64} {
				for _, mode := range []string{"run", "encode"} {
					if mode == "encode" && wg != 1 {
						continue // encoding does not depend on the group count
					}
					name := fmt.Sprintf("threads=%s/%s/wg=%d/%s", th.name, pattern, wg, mode)
					b.Run(name, func(b *testing.B) { benchDispatch(b, th.d, pattern, wg, mode == "encode") })
				}
			}
		}
	}
}

func benchDispatch(b *testing.B, d *Device, pattern string, wg uint32, encodeOnly bool) {
	ds, release := dispatchSetup(b, d, pattern, wg, dispatchesPerRun)
	defer release()
	prog := d.Prepare(ds, nil)
	ctx := context.Background()
	if err := prog.Run(ctx); err != nil { // warm up: llvmpipe compiles at first use
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !encodeOnly {
			if err := prog.Run(ctx); err != nil {
				b.Fatal(err)
			}
			continue
		}
		d.mu.Lock()
		err := d.encodeOnly(&prog.p)
		d.mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(ds)), "µs/dispatch")
}
