package lower

import (
	"slices"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// The device_pos pass: a decoder's position held on the device.
//
// A decode step's input_pos moves at every step and, with it, every
// SymInt that is input_pos plus an amount that does not depend on it
// (the end of the rope tables' rows, input_pos + S). The ops that read
// them (the rope tables' slices and the ropes reading the whole tables,
// the KV-cache update, the attention's key count and causal offset) can
// read the position from a small buffer in their kernels instead of from
// their uniform params (ops.Builder.DevicePos), so that a step at a new
// position needs no SymInt refresh and no queue write: a pipelined
// greedy step, which takes its token from the previous step's pick on
// the device, takes its position from there too (graph/head.go advances
// it).
//
// The rule: the position is a SymInt graph input, or the SymInt an
// et_vk.select_as_symint reads from a graph input of one element (the
// exporter's input_pos[-1].item()) that nothing else reads; its members
// are the position and, transitively, the outputs of add (either
// operand) or sub (the first) of a member and an Int or a sym_size.int
// of a tensor (position-free). Every member is set by one op and is no
// graph output, and every op that reads a member is one of those add/sub
// producers or a position reader: a FusedRopeCache, FusedRopeTables or
// FusedTableSlice node, or an sdpa_with_kv_cache, update_cache or
// llama.custom_sdpa node. Anything else (an unfused table slice, a view
// whose size moves with the position) leaves the plan without one, and
// the graph refreshes uniform params at every new position as before.
// The graph checks again at every recording that each op reading a
// member read it from the device (ops.Builder.DevicePos), and uses the
// refresh path for that recording when not.

// DevicePos is a plan's position held on the device.
type DevicePos struct {
	// Root is the position's SymInt; Input the graph input it comes
	// from: Root itself, or the one-element tensor that the
	// select_as_symint producing it reads.
	Root, Input int32
	// Members are Root and the SymInts that are Root plus a
	// position-free amount, Root first.
	Members []int32
	// Producers are the chain indices of the ops that set Members (the
	// select_as_symint, the adds and subs), ascending: the graph sets
	// their outputs from the position instead of running them again.
	Producers []int
}

// The ops the pass matches by name.
const (
	selectSymOp   = "et_vk.select_as_symint.default"
	symSizeOp     = "sym_size.int"
	atenSymSizeOp = "aten.sym_size.int"
	updateCacheOp = "update_cache.default"
	customSDPAOp  = "llama.custom_sdpa.default"
)

// devicePos returns the position of the plan of nodes, or nil (see
// above).
func devicePos(in Input, nodes []Node) *DevicePos {
	if in.Options.HostPosition {
		return nil
	}
	g := in.Graph
	// node: chain index -> the top-level node it belongs to.
	node := map[int]*Node{}
	for i := range nodes {
		for _, o := range nodes[i].Ops {
			node[o] = &nodes[i]
		}
	}
	for _, id := range g.InputIDs {
		if int(id) >= len(g.Values) {
			continue
		}
		root, input := int32(id), int32(id)
		switch g.Values[id].Kind {
		case serialization.KindSymInt:
		case serialization.KindTensor:
			cs := in.Uses.Consumers[input]
			if len(cs) != 1 || numel(g.Values[id].Tensor.Dims) != 1 {
				continue
			}
			op := g.Chain[cs[0]]
			if op.Name != selectSymOp || len(op.Args) != 4 || op.Args[0] != input {
				continue
			}
			root = op.Args[3]
		default:
			continue
		}
		if d := positionOf(in, node, root, input); d != nil {
			return d
		}
	}
	return nil
}

// positionOf returns root as a plan's position when it and every SymInt
// derived from it satisfy the rule, nil otherwise.
func positionOf(in Input, node map[int]*Node, root, input int32) *DevicePos {
	g, u := in.Graph, in.Uses
	if !isSymInt(g, root) {
		return nil
	}
	d := &DevicePos{Root: root, Input: input}
	if root != input {
		d.Producers = append(d.Producers, u.Producers[root])
	}
	member := map[int32]bool{}
	for queue := []int32{root}; len(queue) > 0; queue = queue[1:] {
		m := queue[0]
		if member[m] {
			continue
		}
		want := 1 // a member is set by one op, the position input by none
		if m == input {
			want = 0
		}
		if u.Outputs[m] || writers(g, m) != want {
			return nil
		}
		member[m] = true
		d.Members = append(d.Members, m)
		for _, c := range slices.Compact(slices.Clone(u.Consumers[m])) {
			if out, ok := derived(g, c, m); ok {
				queue = append(queue, out)
				d.Producers = append(d.Producers, c)
				continue
			}
			if !positionReader(g, node[c], c) {
				return nil
			}
		}
	}
	slices.Sort(d.Producers)
	d.Producers = slices.Compact(d.Producers)
	return d
}

// derived returns the output of op c when it is a member's add or sub of
// m and a position-free amount.
func derived(g *serialization.Graph, c int, m int32) (int32, bool) {
	op := g.Chain[c]
	if len(op.Args) != 3 || !isSymInt(g, op.Args[2]) {
		return 0, false
	}
	a, b := op.Args[0], op.Args[1]
	switch {
	case op.Name == "add" && a == m && positionFree(g, b), op.Name == "add" && b == m && positionFree(g, a):
	case op.Name == "sub" && a == m && positionFree(g, b):
	default:
		return 0, false
	}
	return op.Args[2], true
}

// positionFree reports whether id is an Int, or a SymInt that a
// sym_size.int of a tensor sets (and no other op).
func positionFree(g *serialization.Graph, id int32) bool {
	if id < 0 || int(id) >= len(g.Values) {
		return false
	}
	switch g.Values[id].Kind {
	case serialization.KindInt:
		return true
	case serialization.KindSymInt:
	default:
		return false
	}
	n := 0
	for _, op := range g.Chain {
		if len(op.Args) > 0 && op.Args[len(op.Args)-1] == id {
			if (op.Name != symSizeOp && op.Name != atenSymSizeOp) || len(op.Args) != 3 {
				return false
			}
			n++
		}
	}
	return n == 1 && !slices.Contains(g.InputIDs, uint32(id))
}

// positionReader reports whether op c, recorded in node n, reads the
// position from the device (see above).
func positionReader(g *serialization.Graph, n *Node, c int) bool {
	if n == nil {
		return false
	}
	switch n.Kind {
	case KindFused:
		switch n.Group.Kind {
		case ops.FusedRopeCache, ops.FusedRopeTables, ops.FusedTableSlice:
			return true
		}
	case KindOp:
		switch g.Chain[c].Name {
		case sdpaOp, updateCacheOp, customSDPAOp:
			return true
		}
	}
	return false
}

// writers counts the ops whose output (last argument) is id.
func writers(g *serialization.Graph, id int32) int {
	n := 0
	for _, op := range g.Chain {
		if len(op.Args) > 0 && op.Args[len(op.Args)-1] == id {
			n++
		}
	}
	return n
}

func isSymInt(g *serialization.Graph, id int32) bool {
	return id >= 0 && int(id) < len(g.Values) && g.Values[id].Kind == serialization.KindSymInt
}

func numel(dims []uint32) int64 {
	n := int64(1)
	for _, d := range dims {
		n *= int64(d)
	}
	return n
}
