package gpu

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// profileProgram prepares three dispatches of the inc kernel over n words,
// plus one with an empty grid.
func profileProgram(t *testing.T, n int) *Program {
	t.Helper()
	d := testDev
	r := newIncRig(t, d, uint64(4*n), false)
	t.Cleanup(r.release)
	p, bg := r.p, r.bg
	wg := uint32((n + 63) / 64)
	return d.Prepare([]Dispatch{
		{Pipeline: p, Group: bg, X: wg, Y: 1, Z: 1},
		{Pipeline: p, Group: bg, X: wg, Y: 1, Z: 1},
		{Pipeline: p, Group: bg, X: 0, Y: 1, Z: 1},
		{Pipeline: p, Group: bg, X: wg, Y: 1, Z: 1},
	}, nil)
}

func checkProfile(t *testing.T, prog *Program, wantSource string) {
	t.Helper()
	durs, source, err := prog.Profile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("source %s, durations %v", source, durs)
	if source != wantSource {
		t.Errorf("source %q, want %q", source, wantSource)
	}
	if len(durs) != 4 {
		t.Fatalf("%d durations, want 4", len(durs))
	}
	for _, i := range []int{0, 1, 3} {
		if durs[i] <= 0 {
			t.Errorf("dispatch %d took %v, want > 0", i, durs[i])
		}
	}
	if durs[2] != 0 {
		t.Errorf("empty dispatch took %v, want 0", durs[2])
	}
}

func TestProfile(t *testing.T) {
	want := ProfileCPU
	if testDev.HasTimestamps() {
		want = ProfileTimestamp
		period, err := testDev.TimestampPeriod(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("timestamp queries available; period %g ns", period)
		if period <= 0 {
			t.Fatalf("period %g", period)
		}
	} else {
		t.Log("no timestamp queries on this adapter: CPU timing")
	}
	checkProfile(t, profileProgram(t, 1<<16), want)
}

// forceCPUProfile makes d's profiling time on the CPU, when cpu, until
// the test ends.
func forceCPUProfile(t *testing.T, d *Device, cpu bool) {
	d.mu.Lock()
	d.prof.forceCPU = cpu
	d.mu.Unlock()
	t.Cleanup(func() {
		d.mu.Lock()
		d.prof.forceCPU = false
		d.mu.Unlock()
	})
}

func TestProfileCPUFallback(t *testing.T) {
	forceCPUProfile(t, testDev, true)
	checkProfile(t, profileProgram(t, 1<<16), ProfileCPU)
}

// TestProfileChunks times more dispatches than one query set holds, and
// leaves no buffers behind.
func TestProfileChunks(t *testing.T) {
	before := testDev.LiveObjects()
	prog := profileProgram(t, 64)
	// Repeat the first record past one query set's worth.
	base := prog.p.dispatches[0]
	prog.p.dispatches = prog.p.dispatches[:0]
	for range profileChunk + 5 {
		prog.p.dispatches = append(prog.p.dispatches, base)
	}
	durs, _, err := prog.Profile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(durs) != profileChunk+5 {
		t.Fatalf("%d durations, want %d", len(durs), profileChunk+5)
	}
	for i, x := range durs {
		if x <= 0 {
			t.Fatalf("dispatch %d: %v", i, x)
		}
	}
	after := testDev.LiveObjects()
	// profileProgram's buffer and bind group are released at cleanup.
	if after.Buffers != before.Buffers+1 || after.BindGroups != before.BindGroups+1 {
		t.Errorf("live objects %+v, before %+v", after, before)
	}
}

func TestProfileCancelled(t *testing.T) {
	prog := profileProgram(t, 64)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := prog.Profile(ctx); err == nil {
		t.Fatal("no error with a cancelled context")
	}
	// The device still works.
	if _, _, err := prog.Profile(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestProfilePass times the program's dispatches in one pass, with
// timestamps and with the CPU fallback: the pass runs every non-empty
// dispatch once, in order (three dependent increments leave 3 in every
// word), reports a positive time, and leaves no GPU objects behind.
func TestProfilePass(t *testing.T) {
	for _, cpu := range []bool{false, true} {
		want := ProfileCPU
		if testDev.HasTimestamps() && !cpu {
			want = ProfileTimestamp
		}
		t.Run(want, func(t *testing.T) {
			d := testDev
			forceCPUProfile(t, d, cpu)
			const n = 1 << 12
			p, err := d.Pipeline("inc", incWGSL, "main", []shaders.Binding{shaders.ReadWrite})
			if err != nil {
				t.Fatal(err)
			}
			before := d.LiveObjects()
			r := newIncRig(t, d, 4*n, true) // the pipeline is p, from the cache
			defer r.release()
			buf, st, bg := r.buf, r.st, r.bg
			if err := d.Write(buf, 0, make([]byte, 4*n)); err != nil {
				t.Fatal(err)
			}
			wg := uint32(n / 64)
			prog := d.Prepare([]Dispatch{
				{Pipeline: p, Group: bg, X: wg, Y: 1, Z: 1},
				{Pipeline: p, Group: bg, X: 0, Y: 1, Z: 1},
				{Pipeline: p, Group: bg, X: wg, Y: 1, Z: 1},
				{Pipeline: p, Group: bg, X: wg, Y: 1, Z: 1},
			}, nil)
			dur, source, err := prog.ProfilePass(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("source %s, one pass %v", source, dur)
			if source != want {
				t.Errorf("source %q, want %q", source, want)
			}
			if dur <= 0 {
				t.Errorf("one pass took %v, want > 0", dur)
			}
			if err := d.Run(context.Background(), nil, []Readback{{Src: buf, Dst: st, Size: 4 * n}}); err != nil {
				t.Fatal(err)
			}
			m, err := st.Mapped()
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				if v := binary.LittleEndian.Uint32(m[4*i:]); v != 3 {
					t.Fatalf("word %d = %d after the pass, want 3 (each non-empty dispatch once)", i, v)
				}
			}
			if err := st.Unmap(); err != nil {
				t.Fatal(err)
			}
			r.release()
			if after := d.LiveObjects(); after != before {
				t.Errorf("live objects %+v after the pass, %+v before", after, before)
			}
		})
	}
}
