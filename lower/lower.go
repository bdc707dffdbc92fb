package lower

import (
	"slices"
	"strconv"
	"strings"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Kind is what a plan node records.
type Kind uint8

const (
	// KindOp records one op of the chain through its registered function.
	KindOp Kind = iota
	// KindFused records a fused op (Group) through the kernel registered
	// for its kind (ops.RegisterFused), or its Fallback when the kernel
	// does not take the live shapes.
	KindFused
	// KindView is a view op whose output shares its input's buffer when
	// the op's View says the bytes are the input's (the views pass); the
	// op records its copy otherwise.
	KindView
)

func (k Kind) String() string {
	switch k {
	case KindOp:
		return "op"
	case KindFused:
		return "fused"
	case KindView:
		return "view"
	}
	return "kind?"
}

// Node is one step of a plan: one op of the chain, or a fused op standing
// for several (see the pass list in doc.go).
type Node struct {
	Kind Kind
	// Index is the chain index of the op the node records at (its
	// anchor: the first of its members).
	Index int
	// Ops are the chain indices of the ops the node stands for, ascending;
	// Ops[0] == Index.
	Ops []int
	// Group is a KindFused node's fused op: its kind and members.
	Group *ops.Group
	// Fallback is what a KindFused node records instead when its kernel
	// records nothing at the live shapes (its guard fails): its members
	// as the later passes lower them on their own. Nil for a group whose
	// kernel records any prefix of its members (the elementwise chains).
	Fallback []Node
}

// Plan is a chain lowered: the nodes to record, in order.
type Plan struct {
	Nodes []Node
}

// Tensor is what a pass knows of a tensor value: the analysis' facts
// about its storage, decided before any device object exists.
type Tensor struct {
	// DType is the device dtype (FLOAT16 is held as float32).
	DType serialization.DataType
	// Bytes is the serialized (upper-bound) size on the device.
	Bytes    int64
	Constant bool
	// Transient: placed in one of the exporter's shared objects, bound to
	// a buffer after each recording from the lifetimes the recording
	// gives it (memplan.Place), so a fused kernel may read one transient
	// and write another the exporter let share an object.
	Transient bool
	// Deferred: no buffer as exported (read only packed, in chunks, as
	// half KV caches, or through et_vk.prepack).
	Deferred bool
	// Prepacked: an et_vk.prepack output, a persistent buffer holding a
	// constant's bytes.
	Prepacked bool
	// Chunked: a weight held in chunks.
	Chunked bool
}

// Input is what Lower reads: the decoded graph, its uses, the analysis'
// facts per value (nil for a value that is no tensor) and the load's
// choices.
type Input struct {
	Graph   *serialization.Graph
	Uses    *Uses
	Tensors []*Tensor
	Options Options
}

// Options are the load's choices that change a plan.
type Options struct {
	// NoElementwiseFusion leaves the elementwise chains, SiLU and the
	// add/mul epilogues, and the decode-step fusions unfused (ops.Config).
	NoElementwiseFusion bool
	// NoViewAliasing records a copy for every view op (ops.Config).
	NoViewAliasing bool
}

// pass is one pass of the plan: it finds the groups it fuses among the
// planner's free ops and claims them (planner.fuse).
type pass struct {
	name string
	run  func(p *planner)
}

// passes are the passes in the order they run: a pass claims before the
// ones after it, and a guarded group's fallback is what the ones after
// it make of its members (see doc.go).
var passes []pass

func init() {
	// In init: a pass's fallbacks lower regions with the passes after it.
	passes = []pass{
		{"views", views},
		{"rope_cache", ropeCache},
		{"rope_tables", ropeTablesPass},
		{"norm_linears", normLinears},
		{"linear_epilogue", linearEpilogue},
		{"elementwise", elementwise},
	}
}

// Lower turns the analysed chain in into a plan, running every pass in
// order (doc.go).
func Lower(in Input) *Plan {
	all := make([]int, len(in.Graph.Chain))
	for i := range all {
		all[i] = i
	}
	return &Plan{Nodes: lowerRegion(in, all, 0)}
}

// lowerRegion runs passes[from:] over the chain indices region (ascending)
// and returns the region's nodes in chain order: the groups the passes
// fused, and every other op on its own.
func lowerRegion(in Input, region []int, from int) []Node {
	p := &planner{in: in, g: in.Graph, from: from, free: map[int]bool{}, groups: map[int]*Node{}}
	for _, i := range region {
		p.free[i] = true
	}
	p.region = region
	for k := from; k < len(passes); k++ {
		p.pass = k
		passes[k].run(p)
	}
	var nodes []Node
	for _, i := range region {
		if n, ok := p.groups[i]; ok {
			nodes = append(nodes, *n)
		} else if p.free[i] {
			nodes = append(nodes, Node{Kind: KindOp, Index: i, Ops: []int{i}})
		}
	}
	return nodes
}

// planner is the state of one lowering of a region of the chain.
type planner struct {
	in     Input
	g      *serialization.Graph
	region []int        // the chain indices lowered, ascending
	free   map[int]bool // the region's ops no group has claimed yet
	groups map[int]*Node
	from   int // the first pass run
	pass   int // the pass running
}

// fuse claims members (ascending chain indices, all free) as one fused op
// of kind. With guarded set its fallback is what the passes after the
// running one make of the members.
func (p *planner) fuse(kind string, members []int, guarded bool, set func(g *ops.Group)) *Node {
	members = slices.Clone(members)
	g := &ops.Group{Kind: kind}
	for _, i := range members {
		op := p.g.Chain[i]
		g.Calls = append(g.Calls, ops.Call{Index: i, Name: op.Name, Args: slices.Clone(op.Args)})
		p.free[i] = false
	}
	if set != nil {
		set(g)
	}
	n := &Node{Kind: KindFused, Index: members[0], Ops: members, Group: g}
	if guarded {
		n.Fallback = lowerRegion(p.in, members, p.pass+1)
	}
	p.groups[members[0]] = n
	return n
}

// String lays the plan out on one line, for tests and logs: an op node is
// its chain index, a view node view[index]; a fused node is its kind (less
// the "wgd.fused." prefix) and members, then its fallback in braces when
// it has one:
//
//	0 elementwise[1 2 3] norm_linears[4 5 6]{4 5 6} view[7] 8
func (p *Plan) String() string { return nodesString(p.Nodes) }

func nodesString(nodes []Node) string {
	var s []string
	for _, n := range nodes {
		switch n.Kind {
		case KindOp:
			s = append(s, strconv.Itoa(n.Index))
			continue
		case KindView:
			s = append(s, "view["+strconv.Itoa(n.Index)+"]")
			continue
		}
		m := make([]string, len(n.Ops))
		for i, o := range n.Ops {
			m[i] = strconv.Itoa(o)
		}
		f := strings.TrimPrefix(n.Group.Kind, "wgd.fused.") + "[" + strings.Join(m, " ") + "]"
		if n.Fallback != nil {
			f += "{" + nodesString(n.Fallback) + "}"
		}
		s = append(s, f)
	}
	return strings.Join(s, " ")
}
