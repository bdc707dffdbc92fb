package opstest

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/serialization"

	"github.com/wgdelegate/wgdelegate/internal/testenv"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
)

// TestConformance runs every case on the real device against the
// reference, once per kernel family: cpu/... with the lavapipe-shaped
// kernels and gpu/... with the GPU-shaped ones, both forced whatever the
// adapter (ops.Config.Family), so each family is proved on every device.
// The gpu family runs the cases whose graphs hold an op whose kernels the
// family decides (FamilyCases; the Heavy ones only in the long sweeps,
// testenv.Long): no other case's kernels depend on the family.
func TestConformance(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	runFamilies(t, dev, ops.Config{}, Cases)
}

// TestFamilyCases checks that FamilyCases picks the cases of the linear
// family's ops and leaves the others out, so the gpu family's default run
// cannot silently shrink to nothing or grow to everything, and that it
// leaves the Heavy cases to the long sweeps.
func TestFamilyCases(t *testing.T) {
	t.Setenv(testenv.LongEnv, "")
	fc := FamilyCases(Cases)
	in := map[string]bool{}
	for _, c := range fc {
		in[c.Name] = true
	}
	for _, name := range []string{"mm/M1_K4_N33/input/scalar", "linear/1x8_N64/named/nobias/gemv", "dynamic/linear_relu_linear",
		"q8ta_linear/7x16_N7/zp9_4/bias=true/relu=false"} {
		if !in[name] {
			t.Errorf("%s is not among the family cases", name)
		}
	}
	for _, c := range fc {
		if strings.HasPrefix(c.Name, "softmax/") || strings.HasPrefix(c.Name, "add/") {
			t.Errorf("%s is among the family cases", c.Name)
		}
	}
	if len(fc) < 100 || len(fc) >= len(Cases) {
		t.Errorf("%d family cases of %d", len(fc), len(Cases))
	}
	var heavy []Case
	for _, c := range Cases {
		if c.Heavy {
			heavy = append(heavy, c)
			if in[c.Name] {
				t.Errorf("heavy case %s is among the default run's family cases", c.Name)
			}
		}
	}
	if len(heavy) == 0 {
		t.Error("no heavy case")
	}
	// The long sweeps add every heavy case (each is a family case) and
	// nothing else: the other cases are picked the same way in both.
	t.Setenv(testenv.LongEnv, "1")
	if !testing.Short() {
		if n := len(FamilyCases(heavy)); n != len(heavy) {
			t.Errorf("the long sweeps' family cases hold %d of the %d heavy cases", n, len(heavy))
		}
	}
	t.Logf("%d family cases of %d (%d heavy)", len(fc), len(Cases), len(heavy))
}

// TestDefaultCoverage checks what TestConformance covers outside the long
// sweeps on this adapter: every registered op is in a case it runs under
// each memory plan in the cpu family, and every op whose kernels the
// kernel family decides is also in cases the gpu family runs under each
// plan (FamilyCases, plansOf). Moving cases or plans to the long sweeps
// cannot silently drop an op, a plan or a family.
func TestDefaultCoverage(t *testing.T) {
	t.Setenv(testenv.LongEnv, "")
	be := GPU{Dev: testDevice(t)}
	type run struct {
		fam  ops.Family
		plan Plan
	}
	ran := map[string]map[run]bool{}
	large, once := 0, 0
	cpuCases, gpuCases := coverFamilies(be, Cases)
	for _, fc := range []struct {
		fam   ops.Family
		cases []Case
	}{{ops.FamilyCPU, cpuCases}, {ops.FamilyGPU, gpuCases}} {
		for _, c := range fc.cases {
			b := serialization.NewBuilder()
			inputs := c.Build(b, rand.New(rand.NewPCG(1, 0x5eed)))
			plans := plansOf(be, c, b, b.NamedBlobs(), inputs, 1)
			switch {
			case c.only != "":
				once++
			case len(plans) < 2:
				large++
			}
			for _, op := range b.Graph().Chain {
				if ran[op.Name] == nil {
					ran[op.Name] = map[run]bool{}
				}
				for _, p := range plans {
					ran[op.Name][run{fc.fam, p}] = true
				}
			}
		}
	}
	family := map[string]bool{}
	for _, n := range familyOps() {
		family[n] = true
	}
	for _, n := range ops.Names() {
		fams := []ops.Family{ops.FamilyCPU}
		if family[n] {
			fams = append(fams, ops.FamilyGPU)
		}
		for _, f := range fams {
			for _, p := range []Plan{PlanDedicated, PlanExporter} {
				if !ran[n][run{f, p}] {
					t.Errorf("op %s: no case runs it in the %v family under the %s plan outside the long sweeps", n, f, p)
				}
			}
		}
	}
	t.Logf("%d ops, %d cases (%d in the gpu family): %d runs of a large case and %d of a family case under one plan here",
		len(ops.Names()), len(cpuCases), len(gpuCases), large, once)
}

// adapterBackend is the reference as a Backend that says whether it runs
// on a CPU adapter, counting its runs.
type adapterBackend struct {
	cpu  bool
	runs *int
}

func (a adapterBackend) Run(ctx context.Context, raw []byte, named []serialization.NamedBlob, inputs []*reference.Tensor) ([]*reference.Tensor, int, error) {
	if a.runs != nil {
		*a.runs++
	}
	return Reference{}.Run(ctx, raw, named, inputs)
}

func (a adapterBackend) CPUAdapter() bool { return a.cpu }

// TestPlansOf checks the plans a case runs under: both for the first
// seed, one each in turn after it, and for a large case (LargeBytes of
// inputs and constants) on a CPU adapter only the exporter's outside the
// long sweeps (which -short turns off).
func TestPlansOf(t *testing.T) {
	both := []Plan{PlanDedicated, PlanExporter}
	exporter := []Plan{PlanExporter}
	build := func(inputBytes, constBytes int) (*serialization.Builder, []*reference.Tensor) {
		b := serialization.NewBuilder()
		if constBytes > 0 {
			b.NamedConst(serialization.Float32, []uint32{uint32(constBytes / 4)}, make([]byte, constBytes))
		}
		return b, []*reference.Tensor{reference.New(serialization.Float32, []int64{int64(inputBytes / 4)})}
	}
	for _, c := range []struct {
		name              string
		be                Backend
		inputs, constants int
		seed              uint64
		long              bool
		want              []Plan
	}{
		{"small/cpu", adapterBackend{cpu: true}, 1024, 0, 1, false, both},
		{"large input/cpu", adapterBackend{cpu: true}, LargeBytes, 0, 1, false, exporter},
		{"large constants/cpu", adapterBackend{cpu: true}, 4, LargeBytes - 4, 1, false, exporter},
		{"under the bound/cpu", adapterBackend{cpu: true}, 4, LargeBytes - 8, 1, false, both},
		{"large/gpu", adapterBackend{}, LargeBytes, 0, 1, false, both},
		{"large/no adapter", Reference{}, LargeBytes, 0, 1, false, both},
		{"large/cpu/long", adapterBackend{cpu: true}, LargeBytes, 0, 1, true, both},
		{"seed 2", adapterBackend{cpu: true}, 1024, 0, 2, false, exporter},
		{"seed 3", adapterBackend{cpu: true}, 1024, 0, 3, false, []Plan{PlanDedicated}},
		{"large/cpu/seed 3", adapterBackend{cpu: true}, LargeBytes, 0, 3, true, []Plan{PlanDedicated}},
	} {
		t.Run(c.name, func(t *testing.T) {
			long := ""
			if c.long {
				long = "1"
			}
			t.Setenv(testenv.LongEnv, long)
			b, inputs := build(c.inputs, c.constants)
			got := plansOf(c.be, Case{}, b, b.NamedBlobs(), inputs, c.seed)
			if testing.Short() && c.long && len(c.want) == 2 {
				c.want = exporter // -short keeps to the default's runs
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("plans %v, want %v", got, c.want)
			}
		})
	}
}

// TestRunCaseLargePlans checks that RunCase runs a case under the plans
// plansOf gives: a large one once on a CPU adapter outside the long
// sweeps, a small one twice, and a large one twice elsewhere.
func TestRunCaseLargePlans(t *testing.T) {
	t.Setenv(testenv.LongEnv, "")
	neg := func(n int64) Case {
		return Case{Name: "neg", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(serialization.Float32, []uint32{uint32(n)}, -1)
			y := b.Tensor(serialization.Float32, []uint32{uint32(n)}, -1)
			b.Op("aten.neg.default", x, y)
			b.Inputs(x)
			b.Outputs(y)
			return []*reference.Tensor{RandTensor(r, serialization.Float32, []int64{n}, -1, 1)}
		}}
	}
	for _, c := range []struct {
		name string
		cpu  bool
		n    int64
		want int
	}{
		{"large/cpu", true, LargeBytes / 4, 1},
		{"small/cpu", true, 1024, 2},
		{"large/gpu", false, LargeBytes / 4, 2},
	} {
		runs := 0
		if err := RunCase(adapterBackend{cpu: c.cpu, runs: &runs}, neg(c.n), 1); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if runs != c.want {
			t.Errorf("%s: %d runs, want %d", c.name, runs, c.want)
		}
	}
}

// TestConformanceReference runs the suite with the reference interpreter
// as the backend: the harness itself (building, both memory plans,
// comparing) must agree with itself, and a second backend plugs in with
// one line.
func TestConformanceReference(t *testing.T) {
	if !testenv.Long() || testing.Short() {
		t.Skipf("the reference against itself: a long sweep (%s=1, without -short)", testenv.LongEnv)
	}
	t.Parallel()
	Run(t, Reference{}, Cases)
}

// TestEveryOpHasReference fails when a GPU op has no plain-Go reference.
func TestEveryOpHasReference(t *testing.T) {
	t.Parallel()
	have := map[string]bool{}
	for _, n := range reference.Names() {
		have[n] = true
	}
	for _, n := range ops.Names() {
		if !have[n] {
			t.Errorf("op %s has no reference implementation", n)
		}
	}
}

// TestDynamicReexecute runs each dynamic case's graph once per seed on ONE
// loaded graph, so every Execute sees other live shapes than the previous
// one and must re-record, and compares each against the reference.
func TestDynamicReexecute(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	for _, c := range Cases {
		if !strings.HasPrefix(c.Name, "dynamic/") {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			b := serialization.NewBuilder()
			c.Build(b, rand.New(rand.NewPCG(1, 0x5eed)))
			raw, err := b.Blob()
			if err != nil {
				t.Fatal(err)
			}
			blob, err := serialization.DecodeBlob(raw)
			if err != nil {
				t.Fatal(err)
			}
			g, err := graph.Build(context.Background(), dev, blob, graph.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			for seed := uint64(1); seed <= 8; seed++ {
				inputs := c.Build(serialization.NewBuilder(), rand.New(rand.NewPCG(seed, 0x5eed)))
				want, err := reference.Run(blob, nil, inputs)
				if err != nil {
					t.Fatal(err)
				}
				host := make([]graph.Tensor, len(inputs))
				for i, in := range inputs {
					host[i] = graph.Tensor{DType: in.DType, Shape: in.Shape, Data: in.Encode()}
				}
				got, err := g.Execute(context.Background(), host)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				tol := c.Tol
				if tol == (Tolerance{}) {
					tol = DefaultTolerance[serialization.Float32]
				}
				for i := range want {
					gt, err := reference.Decode(got[i].DType, got[i].Shape, got[i].Data)
					if err != nil {
						t.Fatal(err)
					}
					wt := tol
					if want[i].DType != serialization.Float32 {
						wt = DefaultTolerance[want[i].DType]
					}
					if err := Compare(gt, want[i], wt); err != nil {
						t.Fatalf("seed %d output %d: %v", seed, i, err)
					}
				}
			}
			t.Logf("%d re-recordings over 8 executes", g.Rerecords())
		})
	}
}
