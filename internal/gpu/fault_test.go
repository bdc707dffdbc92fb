package gpu

import (
	"context"
	"errors"
	"testing"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// TestDeviceLoss: after the device is lost, runs, writes and new objects
// fail with errors (no crash); a new device works.
func TestDeviceLoss(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := newIncRig(t, d, 64, true) // released with the lost device
	p, buf, st, g := r.p, r.buf, r.st, r.bg
	run := func() error {
		return d.Run(ctx, []Dispatch{{Pipeline: p, Group: g, X: 1, Y: 1, Z: 1}}, []Readback{{Src: buf, Dst: st, Size: 64}})
	}
	if err := run(); err != nil {
		t.Fatal(err)
	}
	d.Destroy()
	err1 := run()
	err2 := d.Write(buf, 0, make([]byte, 16))
	t.Logf("after loss: run %v; write %v", err1, err2)
	if !errors.Is(err1, ErrDeviceLost) || !errors.Is(err2, ErrDeviceLost) || !d.Lost() {
		t.Errorf("after loss: run %v, write %v; want ErrDeviceLost", err1, err2)
	}
	if _, err := d.NewBuffer(Storage, 16, "x"); !errors.Is(err, ErrDeviceLost) {
		t.Errorf("NewBuffer after loss: %v", err)
	}
	g.Release()
	buf.Release()
	st.Release()
	d.Close()

	d2, err := Open(ctx, Options{})
	if err != nil {
		t.Fatalf("new device after a loss: %v", err)
	}
	defer d2.Close()
	if _, err := d2.Pipeline("inc", incWGSL, "main", []shaders.Binding{shaders.ReadWrite}); err != nil {
		t.Fatal(err)
	}
}
