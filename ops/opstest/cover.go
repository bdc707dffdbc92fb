package opstest

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/testenv"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// familyOps is the ops whose kernels the kernel family decides.
func familyOps() []string { return ops.FamilyOps() }

// holdsFamilyOp reports whether g holds an op whose kernels the kernel
// family decides (familyOps).
func holdsFamilyOp(g *serialization.Graph) bool {
	fam := familyOps()
	for _, op := range g.Chain {
		if slices.Contains(fam, op.Name) {
			return true
		}
	}
	return false
}

// sweeping reports whether the long sweeps run (testenv.Long without
// -short): every seed, every plan.
func sweeping() bool { return testenv.Long() && !testing.Short() }

// Family runs, one plan each. A case of FamilyCases runs twice by default,
// once in each kernel family; under both memory plans in both, that is
// four runs of which two meet every (family, plan) pair the case can meet
// when the families take different plans. On a CPU adapter outside the
// long sweeps, coverFamilies gives such a case one plan in the cpu family
// and the other in the gpu family (Case.only), choosing for each case the
// pair of runs that meets more (op, family, plan) triples not yet met, so
// that every op the family decides still runs under both plans in both
// families (TestDefaultCoverage proves it). The dispatch count check
// across plans (RunCase) then leaves these cases to the long sweeps and
// to a GPU adapter's run, where each runs under both plans in both
// families as before.

// coverFamilies returns the cases the cpu and the gpu kernel family run
// on be (runFamilies): every case in the cpu family, FamilyCases in the
// gpu family. On a CPU adapter outside the long sweeps, a family case that
// is neither Heavy nor large (LargeBytes: one plan already) runs one plan
// in each family, chosen as the section above says; elsewhere every case
// runs the plans plansOf gives it.
func coverFamilies(be Backend, cases []Case) (cpu, gpu []Case) {
	a, ok := be.(cpuAdapter)
	if !ok || !a.CPUAdapter() || sweeping() {
		return cases, FamilyCases(cases)
	}
	type slot struct {
		op     string
		family bool // the gpu family's run; false: the cpu family's
		plan   Plan
	}
	met := map[slot]bool{}
	meet := func(ops []string, family bool, plans ...Plan) {
		for _, op := range ops {
			for _, p := range plans {
				met[slot{op, family, p}] = true
			}
		}
	}
	gain := func(ops []string, cpuPlan, gpuPlan Plan) int {
		n := 0
		for _, op := range ops {
			if !met[slot{op, false, cpuPlan}] {
				n++
			}
			if slices.Contains(familyOps(), op) && !met[slot{op, true, gpuPlan}] {
				n++
			}
		}
		return n
	}
	both := []Plan{PlanDedicated, PlanExporter}
	var covered []int         // indices into cpu of the cases given one plan each
	gpuIndex := map[int]int{} // their indices into gpu
	var opsOf [][]string
	for _, c := range cases {
		b := serialization.NewBuilder()
		inputs := c.Build(b, rand.New(rand.NewPCG(1, 0x5eed)))
		var names []string
		for _, op := range b.Graph().Chain {
			names = append(names, op.Name)
		}
		opsOf = append(opsOf, names)
		family := holdsFamilyOp(b.Graph()) && !c.Heavy
		plans := plansOf(be, c, b, b.NamedBlobs(), inputs, 1)
		cpu = append(cpu, c)
		if !family || len(plans) < 2 {
			meet(names, false, plans...)
			if family {
				meet(names, true, plans...)
				gpu = append(gpu, c)
			}
			continue
		}
		covered = append(covered, len(cpu)-1)
		gpuIndex[len(cpu)-1] = len(gpu)
		gpu = append(gpu, c)
	}
	turn := false
	for _, i := range covered {
		ops := opsOf[i]
		cpuPlan, gpuPlan := PlanDedicated, PlanExporter
		ga, gb := gain(ops, PlanDedicated, PlanExporter), gain(ops, PlanExporter, PlanDedicated)
		if gb > ga || (gb == ga && turn) {
			cpuPlan, gpuPlan = PlanExporter, PlanDedicated
		}
		if ga == gb {
			turn = !turn
		}
		cpu[i].only, gpu[gpuIndex[i]].only = cpuPlan, gpuPlan
		meet(ops, false, cpuPlan)
		meet(ops, true, gpuPlan)
	}
	// A triple no case met (an op of a single family case): the first
	// case that holds the op runs under both plans in both families.
	for _, i := range covered {
		for _, op := range opsOf[i] {
			fam := slices.Contains(familyOps(), op)
			for _, p := range both {
				if !met[slot{op, false, p}] || (fam && !met[slot{op, true, p}]) {
					cpu[i].only, gpu[gpuIndex[i]].only = "", ""
					meet(opsOf[i], false, both...)
					meet(opsOf[i], true, both...)
				}
			}
		}
	}
	return cpu, gpu
}

// plansOf is the plans case c, built as b with named constants named and
// inputs, runs under with seed on be: plansFor(seed), outside the long
// sweeps less the dedicated plan for a large case on a CPU adapter
// (LargeBytes), and for a case coverFamilies gave one plan (c.only), that
// plan.
func plansOf(be Backend, c Case, b *serialization.Builder, named []serialization.NamedBlob, inputs []*reference.Tensor, seed uint64) []Plan {
	plans := plansFor(seed)
	if len(plans) < 2 || sweeping() {
		return plans
	}
	if c.only != "" {
		return []Plan{c.only}
	}
	if a, ok := be.(cpuAdapter); !ok || !a.CPUAdapter() || caseBytes(b, named, inputs) < LargeBytes {
		return plans
	}
	return []Plan{PlanExporter}
}
