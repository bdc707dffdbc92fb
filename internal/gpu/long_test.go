package gpu

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// busyWGSL adds 1 to every element after a long, data-dependent loop (60000
// trips, under the 65535 back-edge cut), so a dispatch takes a while.
const busyWGSL = `
@group(0) @binding(0) var<storage, read_write> d: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= arrayLength(&d)) { return; }
  var x = d[gid.x];
  var h = x ^ 2654435769u;
  for (var i = 0u; i < 60000u; i++) { h = h * 1664525u + 1013904223u; }
  // h is never 1 here in practice, but the compiler cannot know.
  d[gid.x] = x + select(1u, 2u, h == 1u);
}`

// TestRunPastFiveSeconds submits more than 5 s of GPU work in one Run. On
// lavapipe Poll(true) gives up after 5 s and fires map callbacks while the
// work still runs; Run's non-blocking poll loop must still wait for the end,
// so every dispatch's increment is in the result.
func TestRunPastFiveSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("takes over 5 s")
	}
	d := testDev
	p, err := d.Pipeline("busy", busyWGSL, "main", []shaders.Binding{shaders.ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	const n = 64 * 64
	r := newRig(t, d, p, 4*n, true)
	defer r.release()
	buf, st, g := r.buf, r.st, r.bg
	one := Dispatch{Pipeline: p, Group: g, X: n / 64, Y: 1, Z: 1}
	ctx := context.Background()
	// Calibrate on 4 dispatches in one submit (what a long run looks like).
	start := time.Now()
	if err := d.Run(ctx, []Dispatch{one, one, one, one}, nil); err != nil {
		t.Fatal(err)
	}
	per := time.Since(start) / 4
	reps := int(7*time.Second/per) + 1
	if reps > 5000 {
		reps = 5000
	}
	ds := make([]Dispatch, reps)
	for i := range ds {
		ds[i] = one
	}
	start = time.Now()
	if err := d.Run(ctx, ds, []Readback{{Src: buf, Dst: st, Size: 4 * n}}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	m, err := st.Mapped()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if v := binary.LittleEndian.Uint32(m[4*i:]); v != uint32(reps+4) {
			t.Fatalf("element %d = %d after %d dispatches (%v): Run returned before the work ended", i, v, reps+4, took)
		}
	}
	st.Unmap()
	t.Logf("%d dispatches of %v each ran for %v in one Run; all increments present", reps, per, took)
	if took < 5*time.Second {
		t.Logf("note: the run took under 5 s on this machine")
	}
}
