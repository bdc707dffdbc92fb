package gpu

import (
	"context"
	"encoding/binary"
	"testing"
)

// TestRedundantBindsSkipped replays records whose consecutive dispatches
// share pipelines and bind groups: the pass sets each only when it
// changes (Program.Binds), and every dispatch still runs with its own
// pipeline and buffer (the values read back).
func TestRedundantBindsSkipped(t *testing.T) {
	d := testDev
	p1, p2 := incPipelines(t, d)
	var err error
	var bufs [2]*Buffer
	var groups [2]*BindGroup
	var stage [2]*Buffer
	for i := range bufs {
		if bufs[i], err = d.NewBuffer(Storage, 64*4, "data"); err != nil {
			t.Fatal(err)
		}
		defer bufs[i].Release()
		if groups[i], err = d.NewBindGroup(p1, []BindEntry{{Buf: bufs[i]}}, "data"); err != nil {
			t.Fatal(err)
		}
		defer groups[i].Release()
		if stage[i], err = d.NewBuffer(Staging, 4, "read-back"); err != nil {
			t.Fatal(err)
		}
		defer stage[i].Release()
	}
	g1, g2 := groups[0], groups[1]
	one := func(p *Pipeline, g *BindGroup) Dispatch { return Dispatch{Pipeline: p, Group: g, X: 1, Y: 1, Z: 1} }
	empty := Dispatch{Pipeline: p2, Group: g2, X: 0, Y: 1, Z: 1} // records nothing, sets nothing
	reads := []Readback{{Src: bufs[0], Dst: stage[0], Size: 4}, {Src: bufs[1], Dst: stage[1], Size: 4}}
	words := func() [2]uint32 {
		t.Helper()
		if err := d.Run(context.Background(), nil, reads); err != nil {
			t.Fatal(err)
		}
		var w [2]uint32
		for i, s := range stage {
			m, err := s.Mapped()
			if err != nil {
				t.Fatal(err)
			}
			w[i] = binary.LittleEndian.Uint32(m)
			if err := s.Unmap(); err != nil {
				t.Fatal(err)
			}
		}
		return w
	}
	for _, tc := range []struct {
		name string
		ds   []Dispatch
		want BindCounts
		gain [2]uint32 // what each buffer's first word gains
	}{
		{"one", []Dispatch{one(p1, g1)}, BindCounts{1, 1}, [2]uint32{1, 0}},
		{"same pipeline and group", []Dispatch{one(p1, g1), one(p1, g1), one(p1, g1)}, BindCounts{1, 1}, [2]uint32{3, 0}},
		{"same pipeline, other groups", []Dispatch{one(p1, g1), one(p1, g2), one(p1, g2), one(p1, g1)}, BindCounts{1, 3}, [2]uint32{2, 2}},
		{"other pipelines, same group", []Dispatch{one(p1, g1), one(p2, g1), one(p2, g1), one(p1, g1)}, BindCounts{3, 1}, [2]uint32{6, 0}},
		{"an empty grid between", []Dispatch{one(p1, g1), empty, one(p1, g1)}, BindCounts{1, 1}, [2]uint32{2, 0}},
		{"alternating", []Dispatch{one(p1, g1), one(p2, g2), one(p1, g1), one(p2, g2)}, BindCounts{4, 4}, [2]uint32{2, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := words()
			prog := d.Prepare(tc.ds, nil)
			if err := prog.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := prog.Binds(); got != tc.want {
				t.Errorf("binds %+v, want %+v", got, tc.want)
			}
			after := words()
			if gain := [2]uint32{after[0] - before[0], after[1] - before[1]}; gain != tc.gain {
				t.Errorf("the buffers gained %v, want %v", gain, tc.gain)
			}
		})
	}
}
