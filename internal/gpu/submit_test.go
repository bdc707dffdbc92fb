package gpu

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// TestSubmitPipelined submits step t+1 before waiting for step t, the way
// a decode loop overlaps steps: each step copies the previous step's
// result into its input (SetPre), increments it, and reads the result
// back into its own staging buffer of a ring of two. Every readback must
// show the value of its own step, so the queue order, the pre copies and
// the maps of both staging buffers are what they should be.
func TestSubmitPipelined(t *testing.T) {
	d := testDev
	ctx := context.Background()
	p, err := d.Pipeline("inc", incWGSL, "main", []shaders.Binding{shaders.ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	in, err := d.NewBuffer(Storage, 4, "in")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	carry, err := d.NewBuffer(Storage, 4, "carry")
	if err != nil {
		t.Fatal(err)
	}
	defer carry.Release()
	g, err := d.NewBindGroup(p, []BindEntry{{Buf: in}}, "inc")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	var st [2]*Buffer
	var progs [2]*Program
	for i := range st {
		if st[i], err = d.NewBuffer(Staging, 4, "ring"); err != nil {
			t.Fatal(err)
		}
		defer st[i].Release()
		// The input is incremented, then saved as the carry and read back.
		progs[i] = d.Prepare([]Dispatch{{Pipeline: p, Group: g, X: 1, Y: 1, Z: 1}}, []Readback{{Src: in, Dst: st[i], Size: 4}})
	}
	// The carry is what the next step starts from: a second program copies
	// the input into it after each step (a readback into a storage
	// buffer is not allowed, so a one-copy program stands in).
	save := d.Prepare(nil, nil)
	save.SetPre([]Copy{{Src: in, Dst: carry, Size: 4}})
	if err := d.Write(in, 0, []byte{10, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	const steps = 9
	var pending []int
	want := uint32(10)
	for s := 0; s < steps; s++ {
		pr := progs[s%2]
		if s > 0 {
			// The host overwrites the input (as an Execute uploading a
			// stale token would); the pre copy must put the carry back.
			if err := d.Write(in, 0, []byte{0xe8, 3, 0, 0}); err != nil {
				t.Fatal(err)
			}
			pr.SetPre([]Copy{{Src: carry, Dst: in, Size: 4}})
		}
		if s >= 2 { // a ring of two: wait for the step that used this staging buffer
			want++
			checkStep(t, d, st[pending[0]%2], want, pending[0])
			pending = pending[1:]
		}
		if err := pr.Submit(); err != nil {
			t.Fatalf("step %d: %v", s, err)
		}
		if err := save.Submit(); err != nil {
			t.Fatal(err)
		}
		pending = append(pending, s)
	}
	for _, s := range pending {
		want++
		checkStep(t, d, st[s%2], want, s)
	}
	// Waiting on a staging buffer with no map is an error, not a hang.
	if err := d.WaitMapped(ctx, []Readback{{Src: in, Dst: st[0], Size: 4}}); err == nil {
		t.Error("WaitMapped on an unmapped staging buffer: no error")
	}
	// A pre copy into a staging buffer is refused at submission.
	bad := d.Prepare(nil, nil)
	bad.SetPre([]Copy{{Src: in, Dst: st[0], Size: 4}})
	if err := bad.Submit(); err == nil {
		t.Error("pre copy into a staging buffer: no error")
	}
}

// checkStep waits for step s's readback and checks its value.
func checkStep(t *testing.T, d *Device, st *Buffer, want uint32, s int) {
	t.Helper()
	if err := d.WaitMapped(context.Background(), []Readback{{Dst: st, Size: 4}}); err != nil {
		t.Fatalf("step %d: %v", s, err)
	}
	m, err := st.Mapped()
	if err != nil {
		t.Fatalf("step %d: %v", s, err)
	}
	if got := binary.LittleEndian.Uint32(m); got != want {
		t.Errorf("step %d read back %d, want %d", s, got, want)
	}
	if err := st.Unmap(); err != nil {
		t.Fatal(err)
	}
}
