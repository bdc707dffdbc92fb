package graph

import (
	"log/slog"
	"math"
	"testing"
)

// TestDevicePosCheckUnit: a recording stays clean (new positions need no
// refresh) only while every unit that read a member of the position as
// a value declared it read it on the device, or is a producer; refresh
// re-runs do not count. subSat saturates.
func TestDevicePosCheckUnit(t *testing.T) {
	for _, c := range []struct {
		name        string
		index       int
		refresh     bool
		reads, decl []int32
		wantClean   bool
	}{
		{"declared", 7, false, []int32{5}, []int32{5}, true},
		{"declared without reading", 7, false, nil, []int32{5, 6}, true},
		{"read, not declared", 7, false, []int32{5}, nil, false},
		{"one of two declared", 7, false, []int32{5, 6}, []int32{5}, false},
		{"a producer", 2, false, []int32{5, 6}, nil, true},
		{"a refresh re-run", 7, true, []int32{5}, nil, true},
		{"no member", 7, false, []int32{9}, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &WebGPUGraph{}
			g.log = slog.Default()
			g.devPos = &devicePos{members: map[int32]bool{5: true, 6: true}, producers: map[int]bool{2: true}}
			g.devPos.reset()
			b := &opBuilder{g: g, index: c.index, op: "x"}
			if c.refresh {
				b.refresh = &refreshState{}
			}
			for _, id := range c.reads {
				b.noteMemberRead(id)
			}
			b.devDecl = c.decl
			g.devPos.checkUnit(b)
			if g.devPos.clean != c.wantClean {
				t.Errorf("clean %v, want %v", g.devPos.clean, c.wantClean)
			}
		})
	}
	for _, c := range [][3]int64{{5, 3, 2}, {math.MinInt64, 1, math.MinInt64}, {math.MaxInt64, -1, math.MaxInt64}, {0, math.MinInt64, math.MaxInt64}, {-3, -4, 1}} {
		if got := subSat(c[0], c[1]); got != c[2] {
			t.Errorf("subSat(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}
