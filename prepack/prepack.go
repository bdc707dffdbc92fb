package prepack

import (
	"slices"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Op is the prepack operator's name in OperatorCall.name.
const Op = "et_vk.prepack.default"

// Deferred returns the constant tensors that get no buffer of
// their own: those whose only uses are as arg 0 of et_vk.prepack.default,
// or as an argument an op reads through PackWeight (ops.RegisterPacked).
// Every other argument of every op is a direct use, ValueList items
// included, and so is every graph output. Build writes a deferred constant
// straight into each prepack output. Build and the CLI's inspect both use it, so they
// agree.
func Deferred(g *serialization.Graph) map[int32]bool {
	n := int32(len(g.Values))
	prepackSrc := map[int32]bool{}
	direct := map[int32]bool{}
	use := func(id int32) {
		direct[id] = true
		if id >= 0 && id < n && g.Values[id].Kind == serialization.KindValueList {
			for _, it := range g.Values[id].IDs {
				direct[it] = true
			}
		}
	}
	for _, op := range g.Chain {
		if op.Name == Op && len(op.Args) == 2 {
			prepackSrc[op.Args[0]] = true
			continue
		}
		packed := ops.PackedArgs(op.Name)
		for i, a := range op.Args {
			if i < len(op.Args)-1 && slices.Contains(packed, i) && a >= 0 && a < n && g.Values[a].Kind == serialization.KindTensor {
				prepackSrc[a] = true // a packed use: the op makes its own buffer
				continue
			}
			use(a)
		}
	}
	for _, id := range g.OutputIDs {
		use(int32(id))
	}
	deferred := map[int32]bool{}
	for id := range prepackSrc {
		if direct[id] || id < 0 || id >= n {
			continue
		}
		if v := g.Values[id]; v.Kind == serialization.KindTensor && v.Tensor != nil && v.Tensor.IsConstant() {
			deferred[id] = true
		}
	}
	return deferred
}
