package opstest

import (
	"math/rand/v2"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/testenv"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestCoverFamilies checks the plans coverFamilies gives on a CPU adapter
// outside the long sweeps: two family cases of the same ops take opposite
// plans in the two families, a family case whose family op no other case
// holds keeps both plans in both, the other cases (no family op, Heavy)
// keep theirs, and the gpu family gets FamilyCases; on another adapter and
// in the long sweeps no case is given one plan.
func TestCoverFamilies(t *testing.T) {
	chain := func(name string, heavy bool, opNames ...string) Case {
		return Case{Name: name, Heavy: heavy, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(serialization.Float32, []uint32{4}, -1)
			for _, n := range opNames {
				y := b.Tensor(serialization.Float32, []uint32{4}, -1)
				b.Op(n, x, y)
				x = y
			}
			return nil
		}}
	}
	const mm, linear, neg = "aten.mm.default", "aten.linear.default", "aten.neg.default"
	cases := []Case{
		chain("mm1", false, mm, neg),
		chain("neg", false, neg),
		chain("mm2", false, neg, mm),
		chain("linear", false, linear),
		chain("heavy", true, mm),
	}
	only := func(cs []Case) map[string]Plan {
		m := map[string]Plan{}
		for _, c := range cs {
			m[c.Name] = c.only
		}
		return m
	}
	for _, c := range []struct {
		name     string
		be       Backend
		long     string
		cpu, gpu map[string]Plan
	}{
		{"cpu adapter", adapterBackend{cpu: true}, "",
			map[string]Plan{"mm1": PlanDedicated, "neg": "", "mm2": PlanExporter, "linear": "", "heavy": ""},
			map[string]Plan{"mm1": PlanExporter, "mm2": PlanDedicated, "linear": ""}},
		{"gpu adapter", adapterBackend{}, "",
			map[string]Plan{"mm1": "", "neg": "", "mm2": "", "linear": "", "heavy": ""},
			map[string]Plan{"mm1": "", "mm2": "", "linear": ""}},
		{"cpu adapter/long", adapterBackend{cpu: true}, "1",
			map[string]Plan{"mm1": "", "neg": "", "mm2": "", "linear": "", "heavy": ""},
			map[string]Plan{"mm1": "", "mm2": "", "linear": "", "heavy": ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(testenv.LongEnv, c.long)
			if testing.Short() && c.long != "" {
				t.Skip("-short keeps to the default's runs")
			}
			cpu, gpu := coverFamilies(c.be, cases)
			for _, v := range []struct {
				fam       string
				got, want map[string]Plan
			}{{"cpu", only(cpu), c.cpu}, {"gpu", only(gpu), c.gpu}} {
				if len(v.got) != len(v.want) {
					t.Errorf("%s family: cases %v, want %v", v.fam, v.got, v.want)
					continue
				}
				for name, p := range v.want {
					if g, ok := v.got[name]; !ok || g != p {
						t.Errorf("%s family: %s has one plan %q (present %v), want %q", v.fam, name, g, ok, p)
					}
				}
			}
		})
	}
}
