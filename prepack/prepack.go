package prepack

import (
	"slices"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// Op is the prepack operator's name in OperatorCall.name.
const Op = "et_vk.prepack.default"

// Deferred returns the tensors that get no buffer of their own:
//
//   - constants whose only uses are as arg 0 of et_vk.prepack.default, or
//     as a packed argument, one an op reads only through PackWeight:
//     Build writes them straight into each prepack output, or packs them;
//   - prepack outputs (arg 1 of et_vk.prepack.default, dedicated:
//     mem_obj_id -1) whose only uses are such packed arguments: the op packs
//     the constant behind them, so the prepacked copy would never be read.
//
// Every other argument of every op is a direct use, ValueList items
// included, and so is every graph input and output. Build and the CLI's
// inspect both use it (through graph.DeferredConstants), so they agree.
//
// packed lists the argument indices op reads only through PackWeight; the
// graph passes ops.PackedArgs, the registry the ops fill
// (ops.RegisterPacked). It is a function value rather than an import so
// that prepack stays free of ops and of everything ops links. A nil packed
// means no op has packed arguments.
func Deferred(g *serialization.Graph, packed func(op string) []int) map[int32]bool {
	n := int32(len(g.Values))
	prepackSrc := map[int32]bool{}
	prepackDst := map[int32]bool{}
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
			if prepackDst[op.Args[1]] {
				use(op.Args[1]) // prepacked twice: keep it simple, give it a buffer
			}
			prepackDst[op.Args[1]] = true
			continue
		}
		var pargs []int
		if packed != nil {
			pargs = packed(op.Name)
		}
		for i, a := range op.Args {
			if i < len(op.Args)-1 && slices.Contains(pargs, i) && a >= 0 && a < n && g.Values[a].Kind == serialization.KindTensor {
				prepackSrc[a] = true // a packed use: the op makes its own buffer
				continue
			}
			use(a)
		}
	}
	for _, id := range g.OutputIDs {
		use(int32(id))
	}
	for _, id := range g.InputIDs {
		use(int32(id))
	}
	deferred := map[int32]bool{}
	for id := range prepackSrc {
		if direct[id] || prepackDst[id] || id < 0 || id >= n {
			continue
		}
		if v := g.Values[id]; v.Kind == serialization.KindTensor && v.Tensor != nil && v.Tensor.IsConstant() {
			deferred[id] = true
		}
	}
	for id := range prepackDst {
		if direct[id] || id < 0 || id >= n {
			continue
		}
		if v := g.Values[id]; v.Kind == serialization.KindTensor && v.Tensor != nil && !v.Tensor.IsConstant() && v.Tensor.MemObjID < 0 {
			deferred[id] = true
		}
	}
	return deferred
}
