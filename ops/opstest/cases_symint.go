package opstest

import (
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// SymInt cases: sym_size.int on inputs smaller than their serialized
// (upper-bound) dims, the symbolic add/sub/mul/floordiv ops, the guards
// the exporter leaves (no-ops), and a SymInt graph input given as a
// scalar tensor. Outputs are SymInts, returned as
// int64 scalars.
func init() {
	Cases = append(Cases,
		Case{Name: "symint/sym_size/dynamic", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(serialization.Float32, []uint32{8, 6, 3}, -1)
			s0, s1, s2 := b.SymInt(0), b.SymInt(0), b.SymInt(0)
			b.Op("sym_size.int", x, b.Int(0), s0)
			b.Op("sym_size.int", x, b.Int(-1), s1)
			b.Op("aten.sym_size.int", x, b.Int(1), s2)
			p, q, d, a := b.SymInt(0), b.SymInt(0), b.SymInt(0), b.SymInt(0)
			b.Op("mul", s0, s1, p)
			b.Op("floordiv", p, b.Int(-4), q) // negative: rounds toward -inf
			b.Op("sub", q, s2, d)
			b.Op("add", d, b.Int(100), a)
			b.Inputs(x)
			b.Outputs(s0, s1, s2, p, q, a)
			shape := []int64{1 + r.Int64N(8), 1 + r.Int64N(6), 1 + r.Int64N(3)}
			return []*reference.Tensor{RandTensor(r, serialization.Float32, shape, -1, 1)}
		}},
		// The exporter's guards on symbolic sizes, which it normally
		// removes and which do nothing here: a case keeps them in a graph
		// whose SymInt outputs depend on the size they guard.
		Case{Name: "symint/guards", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(serialization.Float32, []uint32{9, 4}, -1)
			s, ok, n := b.SymInt(0), b.SymInt(0), b.SymInt(0)
			b.Op("sym_size.int", x, b.Int(0), s)
			b.Op("aten.sym_constrain_range_for_size.default", s, b.Int(1), b.Int(9))
			b.Op("ge", s, b.Int(1), ok)
			b.Op("aten._assert_scalar.default", ok, b.String("Runtime assertion failed for expression u0 >= 1"))
			b.Op("mul", s, b.Int(4), n)
			b.Inputs(x)
			b.Outputs(s, ok, n)
			return []*reference.Tensor{RandTensor(r, serialization.Float32, []int64{1 + r.Int64N(9), 4}, -1, 1)}
		}},
		Case{Name: "symint/input", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			n := b.SymInt(0)
			sq, fd := b.SymInt(0), b.SymInt(0)
			b.Op("mul", n, n, sq)
			b.Op("floordiv", b.Int(-7), n, fd)
			b.Inputs(n)
			b.Outputs(sq, fd)
			v := reference.New(serialization.Int64, []int64{})
			v.V[0] = float64(1 + r.Int64N(50))
			return []*reference.Tensor{v}
		}},
	)
}
