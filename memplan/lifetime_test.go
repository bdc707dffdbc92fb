package memplan

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

func TestSpanOverlaps(t *testing.T) {
	t.Parallel()
	for i, c := range []struct {
		a, b Span
		want bool
	}{
		{Span{0, 1}, Span{2, 3}, false},
		{Span{0, 2}, Span{2, 3}, true}, // one step reads one and writes the other
		{Span{-1, -1}, Span{0, 0}, false},
		{Span{0, 9}, Span{3, 4}, true},
		{Span{5, 5}, Span{0, 4}, false},
	} {
		if got := c.a.Overlaps(c.b); got != c.want || c.b.Overlaps(c.a) != c.want {
			t.Errorf("%d: %v overlaps %v = %v, want %v", i, c.a, c.b, got, c.want)
		}
	}
}

func TestGreedy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		in    []Interval
		obj   map[int32]int32
		sizes []int64
	}{
		{
			name: "a chain alternates two objects",
			in: []Interval{
				{ID: 1, Bytes: 64, Span: Span{0, 1}}, // x
				{ID: 2, Bytes: 64, Span: Span{1, 2}}, // t1 = linear(x)
				{ID: 3, Bytes: 64, Span: Span{2, 3}}, // t2 = relu(t1)
				{ID: 4, Bytes: 64, Span: Span{3, 4}}, // t3 = linear(t2)
				{ID: 5, Bytes: 64, Span: Span{4, 5}}, // output
			},
			obj:   map[int32]int32{1: 0, 2: 1, 3: 0, 4: 1, 5: 0},
			sizes: []int64{64, 64},
		},
		{
			name: "largest first; a small tensor reuses a large object",
			in: []Interval{
				{ID: 1, Bytes: 8, Span: Span{0, 1}},
				{ID: 2, Bytes: 100, Span: Span{2, 3}},
				{ID: 3, Bytes: 40, Span: Span{1, 2}},
			},
			obj:   map[int32]int32{2: 0, 3: 1, 1: 0},
			sizes: []int64{100, 40},
		},
		{
			name:  "empty",
			obj:   map[int32]int32{},
			sizes: nil,
		},
	}
	for i, c := range cases {
		obj, sizes := Greedy(c.in)
		if !maps.Equal(obj, c.obj) || !slices.Equal(sizes, c.sizes) {
			t.Errorf("%d %s: got %v %v, want %v %v", i, c.name, obj, sizes, c.obj, c.sizes)
		}
	}
}

func TestPlace(t *testing.T) {
	t.Parallel()
	pool := map[int32]int64{0: 64, 1: 64}
	cases := []struct {
		name  string
		uses  []Use
		pool  map[int32]int64
		obj   map[int32]int32
		extra map[int32]int64
		moved int
	}{
		{
			name: "the exporter's plan without conflict is kept",
			uses: []Use{
				{ID: 1, Bytes: 64, Span: Span{-1, 0}, Used: true, Object: 1},
				{ID: 2, Bytes: 64, Span: Span{0, 1}, Used: true, Object: 0},
				{ID: 3, Bytes: 64, Span: Span{1, 2}, Used: true, Object: 1},
			},
			pool: pool,
			obj:  map[int32]int32{1: 1, 2: 0, 3: 1},
		},
		{
			// x (1) -> linear+relu fused -> t2 (1, clashes with x) ->
			// linear+relu fused -> t4 (1) -> linear -> y (0).
			name: "a fused chain moves every other tensor",
			uses: []Use{
				{ID: 1, Bytes: 64, Span: Span{-1, 0}, Used: true, Object: 1},
				{ID: 2, Bytes: 64, Object: 0}, // absorbed: never bound
				{ID: 3, Bytes: 64, Span: Span{0, 1}, Used: true, Object: 1},
				{ID: 4, Bytes: 64, Object: 0},
				{ID: 5, Bytes: 64, Span: Span{1, 2}, Used: true, Object: 1},
				{ID: 6, Bytes: 64, Span: Span{2, 3}, Used: true, Object: 0},
			},
			pool:  pool,
			obj:   map[int32]int32{1: 1, 2: 0, 3: 0, 4: 0, 5: 1, 6: 0},
			moved: 1,
		},
		{
			name: "the smallest free object that fits",
			uses: []Use{
				{ID: 1, Bytes: 16, Span: Span{0, 5}, Used: true, Object: 2},
				{ID: 2, Bytes: 16, Span: Span{1, 2}, Used: true, Object: 2},
			},
			pool:  map[int32]int64{0: 100, 1: 20, 2: 16},
			obj:   map[int32]int32{1: 2, 2: 1},
			moved: 1,
		},
		{
			name: "no free object: one is added",
			uses: []Use{
				{ID: 1, Bytes: 64, Span: Span{0, 2}, Used: true, Object: 0},
				{ID: 2, Bytes: 64, Span: Span{1, 3}, Used: true, Object: 0},
				{ID: 3, Bytes: 80, Span: Span{1, 3}, Used: true, Object: 1},
			},
			pool:  pool,
			obj:   map[int32]int32{1: 0, 3: 2, 2: 1},
			extra: map[int32]int64{2: 80},
			moved: 2,
		},
	}
	for i, c := range cases {
		b, err := Place(c.uses, c.pool)
		if err != nil {
			t.Fatalf("%d %s: %v", i, c.name, err)
		}
		if c.extra == nil {
			c.extra = map[int32]int64{}
		}
		if !maps.Equal(b.Object, c.obj) || !maps.Equal(b.Extra, c.extra) || b.Moved != c.moved {
			t.Errorf("%d %s: got %v extra %v moved %d, want %v extra %v moved %d", i, c.name, b.Object, b.Extra, b.Moved, c.obj, c.extra, c.moved)
		}
	}
}

func TestPlaceRejects(t *testing.T) {
	t.Parallel()
	for i, uses := range [][]Use{
		{{ID: 1, Bytes: -1}},
		{{ID: 1, Span: Span{3, 2}, Used: true}},
		{{ID: 1}, {ID: 1}},
	} {
		if _, err := Place(uses, nil); err == nil {
			t.Errorf("%d: %+v: no error", i, uses)
		}
	}
}

// TestPlaceRandom checks on random lifetimes and pools that Place never
// binds two tensors with overlapping spans to one object, never puts a
// tensor in a smaller object, keeps a conflict-free assignment as it is,
// and adds nothing when the pool is a valid plan of the same lifetimes.
func TestPlaceRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 500 {
		n := 1 + r.IntN(30)
		var ivs []Interval
		for id := range n {
			a, b := r.IntN(40)-1, r.IntN(40)-1
			ivs = append(ivs, Interval{ID: int32(id), Bytes: int64(4 * (1 + r.IntN(8))), Span: Span{min(a, b), max(a, b)}})
		}
		obj, sizes := Greedy(ivs)
		pool := map[int32]int64{}
		for o, s := range sizes {
			pool[int32(o)] = s
		}
		// The greedy plan itself: nothing moves, nothing is added.
		uses := make([]Use, n)
		for k, iv := range ivs {
			uses[k] = Use{ID: iv.ID, Bytes: iv.Bytes, Span: iv.Span, Used: true, Object: obj[iv.ID]}
		}
		b, err := Place(uses, pool)
		if err != nil {
			t.Fatal(err)
		}
		if b.Moved != 0 || len(b.Extra) != 0 {
			t.Fatalf("iter %d: a valid plan was changed: moved %d, extra %v", iter, b.Moved, b.Extra)
		}
		// Random preferred objects: Place must repair them.
		for k := range uses {
			uses[k].Object = int32(r.IntN(len(sizes)))
		}
		if b, err = Place(uses, pool); err != nil {
			t.Fatal(err)
		}
		size := maps.Clone(pool)
		maps.Copy(size, b.Extra)
		for k, u := range uses {
			o := b.Object[u.ID]
			if size[o] < u.Bytes {
				t.Fatalf("iter %d: tensor %d (%d bytes) in object %d of %d bytes", iter, u.ID, u.Bytes, o, size[o])
			}
			for _, v := range uses[k+1:] {
				if b.Object[v.ID] == o && u.Span.Overlaps(v.Span) {
					t.Fatalf("iter %d: tensors %d %v and %d %v share object %d", iter, u.ID, u.Span, v.ID, v.Span, o)
				}
			}
		}
	}
}

// mlpGraph is x -> linear -> relu -> linear -> relu -> linear -> y with
// weights behind et_vk.prepack, every tensor dedicated as written.
func mlpGraph() (*serialization.Graph, map[string]int32) {
	b := serialization.NewBuilder()
	f := serialization.Float32
	ids := map[string]int32{}
	x := b.Tensor(f, []uint32{2, 4}, -1)
	ids["x"] = x
	cur := x
	for l := range 3 {
		c, _ := b.NamedConst(f, []uint32{4, 4}, make([]byte, 64))
		w := b.Tensor(f, []uint32{4, 4}, -1)
		b.Op(prepackOp, c, w)
		ids["w"+string(rune('0'+l))] = w
		h := b.Tensor(f, []uint32{2, 4}, -1)
		b.Op("aten.linear.default", cur, w, b.Null(), h)
		ids["h"+string(rune('0'+l))] = h
		cur = h
		if l < 2 {
			g := b.Tensor(f, []uint32{2, 4}, -1)
			b.Op("aten.relu.default", h, g)
			ids["g"+string(rune('0'+l))] = g
			cur = g
		}
	}
	b.Tensor(f, []uint32{9}, 3) // nothing refers to it
	b.Inputs(x)
	b.Outputs(cur)
	return b.Graph(), ids
}

func TestPlanLikeExporter(t *testing.T) {
	t.Parallel()
	g, ids := mlpGraph()
	if n := PlanLikeExporter(g); n != 2 {
		t.Fatalf("%d shared objects, want 2", n)
	}
	mem := func(name string) int32 { return g.Values[ids[name]].Tensor.MemObjID }
	// Greedy takes equal sizes by id: x, h0, g0, h1, g1, h2.
	want := map[string]int32{"x": 0, "h0": 1, "g0": 0, "h1": 1, "g1": 0, "h2": 1, "w0": -1, "w1": -1, "w2": -1}
	for name, m := range want {
		if got := mem(name); got != m {
			t.Errorf("%s: mem_obj_id %d, want %d", name, got, m)
		}
	}
	if m := g.Values[len(g.Values)-1].Tensor.MemObjID; m != -1 {
		t.Errorf("an unreferenced tensor has mem_obj_id %d, want -1", m)
	}
	for i, v := range g.Values {
		if v.Kind == serialization.KindTensor && v.Tensor.ConstantID >= 0 && v.Tensor.MemObjID != -1 {
			t.Errorf("constant %d got mem_obj_id %d", i, v.Tensor.MemObjID)
		}
	}
	PlanDedicated(g)
	for i, v := range g.Values {
		if v.Kind == serialization.KindTensor && v.Tensor.MemObjID != -1 {
			t.Errorf("dedicated plan: value %d has mem_obj_id %d", i, v.Tensor.MemObjID)
		}
	}
}

// TestExporterLifetimes checks the steps: inputs from 0, op i at i+1,
// outputs to len(chain)+1, ValueList members with the op naming the list.
func TestExporterLifetimes(t *testing.T) {
	t.Parallel()
	b := serialization.NewBuilder()
	f := serialization.Float32
	x := b.Tensor(f, []uint32{3}, -1)
	y := b.Tensor(f, []uint32{3}, -1)
	list := b.ValueList(x, y)
	z := b.Tensor(f, []uint32{6}, -1)
	b.Op("aten.cat.default", list, b.Int(0), z)
	w := b.Tensor(f, []uint32{6}, -1)
	b.Op("aten.relu.default", z, w)
	b.Inputs(x, y)
	b.Outputs(w)
	got := ExporterLifetimes(b.Graph())
	want := []Interval{{ID: x, Bytes: 12, Span: Span{0, 1}}, {ID: y, Bytes: 12, Span: Span{0, 1}},
		{ID: z, Bytes: 24, Span: Span{1, 2}}, {ID: w, Bytes: 24, Span: Span{2, 3}}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
