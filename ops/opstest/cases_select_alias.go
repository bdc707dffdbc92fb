package opstest

import (
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// selectAliasCases are select_copy from a dim of size 1, which the graph
// turns into a view of the input (no dispatch) unless NoViewAliasing: the
// last token of a one-token decode step before the final norm. The
// source is a transient (relu's output, which dies at the select under
// the exporter's plan) and the view is read by one more op; saved is the
// dispatches the view saves (TestSelectAlias).
var selectAliasCases = map[string]int{}

func init() {
	for _, s := range []struct {
		name         string
		shape        []int64
		dim, index   int64
		saved        int
		negateOutput bool
	}{
		{"select_alias/size1_last", []int64{1, 1, 64}, 1, -1, 1, true},
		{"select_alias/size1_first_dim", []int64{1, 5, 3}, 0, 0, 1, true},
		{"select_alias/size1_graph_output", []int64{2, 1, 4}, -2, 0, 1, false},
		{"select_alias/size3_copies", []int64{2, 3, 4}, 1, -1, 0, true},
	} {
		s := s
		selectAliasCases[s.name] = s.saved
		Cases = append(Cases, Case{Name: s.name, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, s.shape, -2, 2)
			x := b.Tensor(f, Dims(s.shape), -1)
			b.Inputs(x)
			h := b.Tensor(f, Dims(s.shape), -1)
			b.Op("aten.relu.default", x, h)
			d := s.dim
			if d < 0 {
				d += int64(len(s.shape))
			}
			od := append(append([]int64(nil), s.shape[:d]...), s.shape[d+1:]...)
			sel := b.Tensor(f, Dims(od), -1)
			b.Op("aten.select_copy.int", h, b.Int(s.dim), b.Int(s.index), sel)
			out := sel
			if s.negateOutput {
				out = b.Tensor(f, Dims(od), -1)
				b.Op("aten.neg.default", sel, out)
			}
			b.Outputs(out)
			return []*reference.Tensor{xv}
		}})
	}
}
