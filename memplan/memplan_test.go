package memplan

import "testing"

func TestBuild(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		in         []Tensor
		shared     map[int32]int64
		stats      Stats
		placements map[int32]Placement
		wantErr    bool
	}{
		{
			name: "shared object sized to largest user",
			in: []Tensor{
				{ID: 0, NBytes: 40, MemObjID: 0},
				{ID: 1, NBytes: 100, MemObjID: 0},
				{ID: 2, NBytes: 6, MemObjID: 1},
			},
			shared:     map[int32]int64{0: 112, 1: 16},
			stats:      Stats{NumTensors: 3, SharedBufferBytes: 106, NumSharedObjects: 2},
			placements: map[int32]Placement{0: {Shared: true}, 1: {Shared: true}, 2: {Shared: true, MemObjID: 1}},
		},
		{
			name: "negative id and constants are dedicated, deferred has nothing",
			in: []Tensor{
				{ID: 0, NBytes: 16, MemObjID: -1},
				{ID: 1, NBytes: 8, MemObjID: 0, Constant: true},
				{ID: 2, NBytes: 32, MemObjID: -1, Constant: true, Deferred: true},
				{ID: 3, NBytes: 0, MemObjID: -1},
			},
			shared:     map[int32]int64{},
			stats:      Stats{NumTensors: 3, UnsharedTensorBufferBytes: 24, NumDeferred: 1, DeferredBytes: 32},
			placements: map[int32]Placement{0: {Size: 16}, 1: {Size: 16}, 2: {None: true}, 3: {Size: 16}},
		},
		{name: "duplicate id", in: []Tensor{{ID: 1}, {ID: 1}}, wantErr: true},
		{name: "negative size", in: []Tensor{{ID: 1, NBytes: -4}}, wantErr: true},
	}
	for i, c := range cases {
		p, err := Build(c.in)
		if c.wantErr {
			if err == nil {
				t.Errorf("%d %s: want error", i, c.name)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d %s: %v", i, c.name, err)
		}
		if p.Stats != c.stats {
			t.Errorf("%d %s: stats %+v, want %+v", i, c.name, p.Stats, c.stats)
		}
		if len(p.SharedSizes) != len(c.shared) {
			t.Errorf("%d %s: shared %v, want %v", i, c.name, p.SharedSizes, c.shared)
		}
		for id, n := range c.shared {
			if p.SharedSizes[id] != n {
				t.Errorf("%d %s: shared[%d] = %d, want %d", i, c.name, id, p.SharedSizes[id], n)
			}
		}
		for id, want := range c.placements {
			if got := p.Placements[id]; got != want {
				t.Errorf("%d %s: placement[%d] = %+v, want %+v", i, c.name, id, got, want)
			}
		}
	}
}

func TestAllocSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want int64 }{{0, 16}, {1, 16}, {4, 16}, {16, 16}, {17, 32}, {1023, 1024}} {
		if got := AllocSize(c.in); got != c.want {
			t.Errorf("AllocSize(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}
