package lower

import "github.com/wgdelegate/wgdelegate/serialization"

// Uses indexes a chain's reads and writes of every value.
type Uses struct {
	// Consumers maps a value to the chain indices of the ops that read it
	// (any argument but the last; ValueList members included), once per
	// argument that reads it, in chain order.
	Consumers map[int32][]int
	// Producers maps a value to the chain index of the op that writes it
	// as its output (the last argument, or a member of that ValueList).
	Producers map[int32]int
	// Outputs are the graph outputs.
	Outputs map[int32]bool
}

// NewUses indexes g's chain.
func NewUses(g *serialization.Graph) *Uses {
	u := &Uses{Consumers: map[int32][]int{}, Producers: map[int32]int{}, Outputs: map[int32]bool{}}
	vals := g.Values
	for _, o := range g.OutputIDs {
		u.Outputs[int32(o)] = true
	}
	for i, op := range g.Chain {
		if len(op.Args) == 0 {
			continue
		}
		if out := op.Args[len(op.Args)-1]; out >= 0 && int(out) < len(vals) {
			u.Producers[out] = i
			if vals[out].Kind == serialization.KindValueList {
				for _, m := range vals[out].IDs {
					u.Producers[m] = i
				}
			}
		}
		for _, arg := range op.Args[:len(op.Args)-1] {
			if arg < 0 || int(arg) >= len(vals) {
				continue
			}
			u.Consumers[arg] = append(u.Consumers[arg], i)
			if vals[arg].Kind == serialization.KindValueList {
				for _, m := range vals[arg].IDs {
					u.Consumers[m] = append(u.Consumers[m], i)
				}
			}
		}
	}
	return u
}
