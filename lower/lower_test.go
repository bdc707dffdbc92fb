package lower

import (
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// f32 is the dtype most cases use.
const f32 = serialization.Float32

// inputOf is Input for a builder's graph as a load with a dedicated buffer
// per tensor (mem_obj_id -1) or the exporter's shared objects (>= 0)
// describes it: FLOAT16 held as float32, constants, the prepack outputs.
func inputOf(b *serialization.Builder, o Options) Input {
	g := b.Graph()
	in := Input{Graph: g, Uses: NewUses(g), Tensors: make([]*Tensor, len(g.Values)), Options: o}
	prepacked := map[int32]bool{}
	for _, op := range g.Chain {
		if op.Name == "et_vk.prepack.default" && len(op.Args) == 2 {
			prepacked[op.Args[1]] = true
		}
	}
	for i, v := range g.Values {
		t := v.Tensor
		if v.Kind != serialization.KindTensor || t == nil {
			continue
		}
		dt := t.DataType
		if dt == serialization.Float16 {
			dt = f32
		}
		n := int64(dt.Size())
		for _, d := range t.Dims {
			n *= int64(d)
		}
		c := t.ConstantID >= 0
		in.Tensors[i] = &Tensor{DType: dt, Bytes: n, Constant: c, Transient: !c && t.MemObjID >= 0, Prepacked: prepacked[int32(i)]}
	}
	return in
}

// activations returns a maker of float32 activation tensors of the given
// dims: each with a dedicated buffer (mem_obj_id -1), or with greedy in
// the exporter's shared objects, ids 0 .. objs-1 in turn, as its greedy
// plan reuses them.
func activations(b *serialization.Builder, greedy bool, objs int32) func(dims ...uint32) int32 {
	next := int32(0)
	return func(dims ...uint32) int32 {
		m := int32(-1)
		if greedy {
			m, next = next%objs, next+1
		}
		return b.Tensor(f32, dims, m)
	}
}

// planCase is one table case: a graph, the load's options, and the plan
// it lowers to (Plan.String).
type planCase struct {
	name  string
	opts  Options
	build func(b *serialization.Builder)
	want  string
}

func runPlanCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := serialization.NewBuilder()
			c.build(b)
			in := inputOf(b, c.opts)
			p := Lower(in)
			if got := p.String(); got != c.want {
				t.Errorf("plan\n got %s\nwant %s", got, c.want)
			}
			checkPlan(t, in, p)
		})
	}
}

// checkPlan checks what every plan must be: each op of the chain in
// exactly one node, in chain order, each fused node's members ascending
// and its group's calls the members' ops, and each fallback holding
// exactly its node's members.
func checkPlan(t *testing.T, in Input, p *Plan) {
	t.Helper()
	var seen []int
	for _, n := range p.Nodes {
		checkNode(t, in, n)
		seen = append(seen, n.Ops...)
	}
	want := make([]int, len(in.Graph.Chain))
	for i := range want {
		want[i] = i
	}
	slices.Sort(seen)
	if !slices.Equal(seen, want) {
		t.Errorf("plan covers ops %v, want each of %v once", seen, want)
	}
	for k := 1; k < len(p.Nodes); k++ {
		if p.Nodes[k].Index <= p.Nodes[k-1].Index {
			t.Errorf("node %d at op %d after node at op %d", k, p.Nodes[k].Index, p.Nodes[k-1].Index)
		}
	}
}

func checkNode(t *testing.T, in Input, n Node) {
	t.Helper()
	if len(n.Ops) == 0 || n.Ops[0] != n.Index || !slices.IsSorted(n.Ops) {
		t.Errorf("node at %d has members %v", n.Index, n.Ops)
	}
	if n.Kind != KindFused {
		if len(n.Ops) != 1 || n.Group != nil || n.Fallback != nil || (n.Kind == KindView && ops.ViewOf(in.Graph.Chain[n.Index].Name) == nil) {
			t.Errorf("op node %d: members %v, group %v, fallback %v", n.Index, n.Ops, n.Group, n.Fallback)
		}
		return
	}
	if n.Group == nil || len(n.Group.Calls) != len(n.Ops) {
		t.Fatalf("fused node at %d: group %v for members %v", n.Index, n.Group, n.Ops)
	}
	for k, c := range n.Group.Calls {
		op := in.Graph.Chain[n.Ops[k]]
		if c.Index != n.Ops[k] || c.Name != op.Name || !slices.Equal(c.Args, op.Args) {
			t.Errorf("fused node at %d: call %d is %v, want op %d %s%v", n.Index, k, c, n.Ops[k], op.Name, op.Args)
		}
	}
	if n.Fallback != nil {
		var fb []int
		for _, f := range n.Fallback {
			checkNode(t, in, f)
			fb = append(fb, f.Ops...)
		}
		if !slices.Equal(fb, n.Ops) {
			t.Errorf("fused node at %d: fallback covers %v, want %v", n.Index, fb, n.Ops)
		}
	}
}

// TestUses checks the consumers (once per reading argument, ValueList
// members too), producers (ValueList outputs' members too) and outputs.
func TestUses(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(f32, []uint32{4}, -1)
	y := b.Tensor(f32, []uint32{4}, -1)
	z := b.Tensor(f32, []uint32{4}, -1)
	q, k := b.Tensor(f32, []uint32{4}, -1), b.Tensor(f32, []uint32{4}, -1)
	b.Inputs(x)
	b.Op("aten.mul.Tensor", x, x, y)         // 0
	b.Op("test.split", y, b.ValueList(q, k)) // 1
	b.Op("test.cat", b.ValueList(q, k), z)   // 2
	b.Outputs(z)
	u := NewUses(b.Graph())
	if got := u.Consumers[x]; !slices.Equal(got, []int{0, 0}) {
		t.Errorf("consumers of x: %v, want [0 0]", got)
	}
	if got := u.Consumers[q]; !slices.Equal(got, []int{2}) {
		t.Errorf("consumers of q: %v, want [2]", got)
	}
	for id, want := range map[int32]int{y: 0, q: 1, k: 1, z: 2} {
		if got, ok := u.Producers[id]; !ok || got != want {
			t.Errorf("producer of %d: %d %v, want %d", id, got, ok, want)
		}
	}
	if _, ok := u.Producers[x]; ok {
		t.Errorf("input x has a producer")
	}
	if !u.Outputs[z] || u.Outputs[y] {
		t.Errorf("outputs %v, want only %d", u.Outputs, z)
	}
}

// TestPlanEveryOp: a chain no pass fuses is one node per op.
func TestPlanEveryOp(t *testing.T) {
	runPlanCases(t, []planCase{
		{name: "empty", build: func(b *serialization.Builder) {}, want: ""},
		{name: "two_ops", build: func(b *serialization.Builder) {
			x, y, z := b.Tensor(f32, []uint32{4}, -1), b.Tensor(f32, []uint32{4}, -1), b.Tensor(f32, []uint32{4}, -1)
			b.Inputs(x)
			b.Op("aten.softmax.int", x, b.Int(0), b.Bool(false), y)
			b.Op("aten.softmax.int", y, b.Int(0), b.Bool(false), z)
			b.Outputs(z)
		}, want: "0 1"},
	})
}

// FuzzLower lowers mutated decode-step graphs (an op argument pointing at
// another value, a tensor's dims, dtype or mem_obj_id changed) and checks
// that nothing panics and every plan keeps its shape: each op in exactly
// one node, in chain order, each fallback holding its node's members.
func FuzzLower(f *testing.F) {
	seeds := []func(b *serialization.Builder){
		ropeGraph{sliced: true}.build, ropeGraph{greedy: true}.build,
		normGraph{swiglu: true, linears: 1}.build, normGraph{linears: 3, q4: true}.build,
		epiGraph{tail: silu}.build, epiGraph{tail: relu, greedy: true}.build,
		func(b *serialization.Builder) {
			x := b.Tensor(f32, []uint32{4, 8}, -1)
			b.Inputs(x)
			b.Outputs(ewChain(b, x, []int32{0, 1, 0}, un("relu"), scal("mul", 2), un("neg"))[2])
		},
	}
	for i := range seeds {
		f.Add(uint8(i), uint8(0), uint8(0), int16(0), uint8(0), uint8(0), uint16(1), int8(-1), int8(-1), false)
	}
	f.Fuzz(func(t *testing.T, seed, op, arg uint8, newID int16, val, dim uint8, dimVal uint16, dtype, memObj int8, noFusion bool) {
		b := serialization.NewBuilder()
		seeds[int(seed)%len(seeds)](b)
		g := b.Graph()
		if len(g.Chain) > 0 && newID != 0 {
			o := &g.Chain[int(op)%len(g.Chain)]
			if len(o.Args) > 0 {
				id := int32(newID) % int32(len(g.Values))
				if id < 0 {
					id += int32(len(g.Values))
				}
				o.Args[int(arg)%len(o.Args)] = id
			}
		}
		if v := &g.Values[int(val)%len(g.Values)]; v.Kind == serialization.KindTensor && v.Tensor != nil {
			if len(v.Tensor.Dims) > 0 {
				v.Tensor.Dims[int(dim)%len(v.Tensor.Dims)] = uint32(dimVal % 9)
			}
			if dtype >= 0 && dtype <= 7 {
				v.Tensor.DataType = serialization.DataType(dtype)
			}
			if memObj >= -1 {
				v.Tensor.MemObjID = int32(memObj % 3)
			}
		}
		in := inputOf(b, Options{NoElementwiseFusion: noFusion})
		checkPlan(t, in, Lower(in))
	})
}
