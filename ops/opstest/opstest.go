// Package opstest is the op conformance suite: every case builds a small
// VkGraph in the real format, runs it through the GPU graph and through the
// plain-Go reference interpreter on the same random inputs, and compares the
// outputs with a per-dtype tolerance.
//
// Cases are data (Case values in per-family tables); Run drives them. Add a
// family by appending to Cases from an init in a cases_<family>.go file.
//
// What a run covers. TestConformance runs every case with its first input
// set under both memory plans in the cpu kernel family, and the cases
// whose graphs hold an op the family decides (FamilyCases) in the gpu
// family too, whatever the adapter. On a CPU adapter outside the long
// sweeps three things are left out: a large case (LargeBytes) runs under
// the exporter's plan only, a family case runs one plan in each family
// (coverFamilies: the other plan in the other family), and the gpu family
// skips the Heavy cases. TestDefaultCoverage proves that every registered
// op still runs under both plans in the cpu family, and every op the
// family decides under both in the gpu family. The long sweeps
// (testenv.Long: WGDELEGATE_TEST_LONG=1, as CI runs) add every seed
// (Seeds), both plans in both families for every case, the Heavy cases in
// the gpu family and the reference against itself. -short, the GPU host's
// op suite (`go test -c ./ops/opstest`, then `ops_opstest.test
// -test.short`), runs what the default runs: on a GPU adapter, every case
// under both plans in both families.
//
// Layout. This package holds the cases, the runner (Run, RunCase), the
// reference comparison and the Backend interface, and links neither graph
// nor the GPU binding (TestPurePackages); the GPU backend (GPU, Load) is
// ops/opstest/gpubackend, which this package's tests import, so that one
// test binary runs every case on the device, and its benchmarks too. The
// tests share one device and run in parallel (testDevice in
// device_test.go); `go test ./ops/opstest` takes about a minute on two
// cores (57–71 s with a little other work on the machine), most of it
// TestConformance's 3,000 case runs and the numerics guard's builds (each
// about a third of its CPU time in compiling kernels), and 106–299 s
// beside two CPU-bound jobs, inside the 10-minute per-binary timeout.
package opstest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/testenv"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Tolerance bounds |got-want| <= Abs + Rel*|want|.
type Tolerance struct{ Abs, Rel float64 }

// DefaultTolerance is the per-dtype tolerance used when a case sets none.
var DefaultTolerance = map[serialization.DataType]Tolerance{
	serialization.Float32: {Abs: 1e-6, Rel: 1e-5},
	serialization.Int32:   {},
	serialization.Int64:   {},
	serialization.Bool:    {},
	serialization.Uint8:   {},
	serialization.Int8:    {},
}

// Case is one conformance case.
type Case struct {
	Name string
	// Build adds values and ops to b (including Inputs and Outputs) and
	// returns random inputs in input order.
	Build func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor
	// Tol overrides DefaultTolerance for float32 and float16 outputs when
	// non-zero.
	Tol Tolerance
	// Heavy marks a case that takes seconds on lavapipe under some kernel
	// family (a K of 70000 and more through the gpu family's tiled kernel,
	// whose barriers lavapipe runs as coroutine switches; 70000 batches of
	// 256-invocation workgroups): FamilyCases leaves it to the long sweeps
	// (testenv.Long), the first family runs it always.
	Heavy bool
	// SubnormalExact: the case's ops are exact on subnormals on every
	// adapter (comparisons, minimum/maximum, where, abs, neg, copies work
	// on the bits), so it gets no subnormal allowance on an adapter that
	// flushes (see subnormal.go).
	SubnormalExact bool
	// only, when set, is the one plan the first input set runs under
	// outside the long sweeps (coverFamilies).
	only Plan
}

// heavy returns c marked Heavy.
func heavy(c Case) Case {
	c.Heavy = true
	return c
}

// Cases is the registry of every family's cases.
var Cases []Case

// Seeds is how many random input sets each case runs in the long sweeps
// (testenv.Long: WGDELEGATE_TEST_LONG=1, as CI runs); the default and
// -short run the first, under both memory plans.
const Seeds = 3

// Backend runs a graph for the suite: the GPU graph (gpubackend.GPU, in
// its own package so that this one does not link graph), the plain-Go
// reference interpreter (Reference), or any other implementation of the
// format. Its arguments are the format's own bytes and public types, so a
// backend can live outside this module.
type Backend interface {
	// Run builds blob (a VH00 delegate blob whose named constants are in
	// named) and runs it once on inputs, in the graph's input order.
	// dispatches is how many kernels it recorded (0 when it has no such
	// notion).
	Run(ctx context.Context, blob []byte, named []serialization.NamedBlob, inputs []*reference.Tensor) (outs []*reference.Tensor, dispatches int, err error)
}

// Reference is the Backend of the plain-Go reference interpreter, run
// with Options (the counterparts of kernel choices that change results).
type Reference struct {
	Options reference.Options
}

// Run implements Backend.
func (b Reference) Run(ctx context.Context, raw []byte, named []serialization.NamedBlob, inputs []*reference.Tensor) ([]*reference.Tensor, int, error) {
	blob, nd, err := decode(raw, named)
	if err != nil {
		return nil, 0, err
	}
	outs, err := reference.RunOptions(blob, nd, inputs, b.Options)
	return outs, 0, err
}

// decode decodes a blob and gathers its named data.
func decode(raw []byte, named []serialization.NamedBlob) (*serialization.Blob, *serialization.NamedDataMap, error) {
	blob, err := serialization.DecodeBlob(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("decode: %w", err)
	}
	nd := serialization.NewNamedDataMap()
	for _, nb := range named {
		if err := nd.Add(nb.Key, nb.Data); err != nil {
			return nil, nil, err
		}
	}
	return blob, nd, nil
}

// Run runs every case on backend be and on the reference: the first input
// set under both memory plans (a large case on a CPU adapter under one,
// see LargeBytes), and Seeds sets in the long sweeps (testenv.Long).
func Run(t *testing.T, be Backend, cases []Case) {
	RunAgainst(t, be, Reference{}, cases)
}

// RunAgainst is Run with ref as the reference.
func RunAgainst(t *testing.T, be Backend, ref Reference, cases []Case) {
	seeds := uint64(1)
	if testenv.Long() && !testing.Short() {
		seeds = Seeds
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			for seed := uint64(1); seed <= seeds; seed++ {
				if err := RunCaseAgainst(be, ref, c, seed); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
		})
	}
}

// Plan is a memory plan a case runs under.
type Plan string

const (
	// PlanDedicated gives every non-constant tensor its own buffer.
	PlanDedicated Plan = "dedicated"
	// PlanExporter plans like ExecuTorch's Vulkan exporter
	// (memplan.PlanLikeExporter): shared objects reused as soon as a
	// tensor's last reader has run.
	PlanExporter Plan = "exporter"
)

// plansFor is the plans seed runs under: both for the first seed, then
// one each in turn, so that every case meets both plans and the suite
// costs a third more, not twice as much.
func plansFor(seed uint64) []Plan {
	switch {
	case seed == 1:
		return []Plan{PlanDedicated, PlanExporter}
	case seed%2 == 0:
		return []Plan{PlanExporter}
	}
	return []Plan{PlanDedicated}
}

// LargeBytes is the size from which a case is large: its inputs and
// constants take at least this many bytes (a million float32 values).
// On a backend that runs on a CPU adapter (gpubackend.GPU.CPUAdapter),
// outside the long sweeps (testenv.Long), the first seed runs a large case
// under the exporter's plan only: such a case is there for its size (grids past
// 65535 workgroups, indices past 2^24, long rows), and on lavapipe each
// plan costs it up to seconds of host and kernel time (the 18 largest
// took 19 of the 41 s the cpu family's 2,792 cases took on two busy
// cores). Its ops meet both plans in smaller cases (TestDefaultCoverage),
// and the long sweeps run it under both.
const LargeBytes = 4 << 20

// cpuAdapter is implemented by backends that can say they run on a CPU
// adapter.
type cpuAdapter interface{ CPUAdapter() bool }

// caseBytes is the size of a case's constants and inputs.
func caseBytes(b *serialization.Builder, named []serialization.NamedBlob, inputs []*reference.Tensor) int64 {
	n := int64(len(b.InlineData()))
	for _, nb := range named {
		n += int64(len(nb.Data))
	}
	for _, in := range inputs {
		n += int64(len(in.V)) * int64(in.DType.Size())
	}
	return n
}

// RunCase runs one case with one seed on be and returns the first
// mismatch with the reference. The case runs under a dedicated buffer per
// tensor and under the exporter's greedy memory plan (the first seed both,
// later seeds alternately; a large case's first seed on a CPU adapter
// only the exporter's outside the long sweeps, see LargeBytes); both must
// match the reference and record as many dispatches (a fusion the
// exporter's plan prevented would show there).
func RunCase(be Backend, c Case, seed uint64) error {
	return RunCaseAgainst(be, Reference{}, c, seed)
}

// RunCaseAgainst is RunCase with ref as the reference.
func RunCaseAgainst(be Backend, ref Reference, c Case, seed uint64) error {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	b := serialization.NewBuilder()
	inputs := c.Build(b, r)
	named := b.NamedBlobs()
	var want, alt []*reference.Tensor
	// On an adapter that flushes subnormals the policy's allowance
	// applies (subnormal.go): alt is the reference with subnormal inputs
	// as ±0.
	flush := flushes(be) && !c.SubnormalExact
	dispatches := map[Plan]int{}
	for _, plan := range plansOf(be, c, b, named, inputs, seed) {
		switch plan {
		case PlanDedicated:
			memplan.PlanDedicated(b.Graph())
		case PlanExporter:
			memplan.PlanLikeExporter(b.Graph())
		}
		raw, err := b.Blob()
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		if want == nil {
			if want, _, err = ref.Run(ctx, raw, named, inputs); err != nil {
				return err
			}
			if flush && hasSubnormal(inputs) {
				if alt, _, err = ref.Run(ctx, raw, named, FlushInputs(inputs)); err != nil {
					return fmt.Errorf("reference on flushed inputs: %w", err)
				}
			}
		}
		got, n, err := be.Run(ctx, raw, named, inputs)
		if err != nil {
			return fmt.Errorf("%s plan: %w", plan, err)
		}
		if err := c.compare(got, want, alt, flush); err != nil {
			return fmt.Errorf("%s plan: %w", plan, err)
		}
		dispatches[plan] = n
	}
	if d, e := dispatches[PlanDedicated], dispatches[PlanExporter]; d != 0 && e != 0 && d != e {
		return fmt.Errorf("%d dispatches under dedicated buffers, %d under the exporter's plan", d, e)
	}
	return nil
}

// compare checks every output against the reference's with the case's
// tolerance, and with the subnormal allowance when flush is set (alt: the
// reference on flushed inputs, or nil).
func (c Case) compare(got, want, alt []*reference.Tensor, flush bool) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d outputs, want %d", len(got), len(want))
	}
	for i := range want {
		tol := DefaultTolerance[want[i].DType]
		if c.Tol != (Tolerance{}) && (want[i].DType == serialization.Float32 || want[i].DType == serialization.Float16) {
			tol = c.Tol
		}
		cmp := func() error { return Compare(got[i], want[i], tol) }
		if flush {
			var a *reference.Tensor
			if alt != nil {
				a = alt[i]
			}
			cmp = func() error { return CompareFlushing(got[i], want[i], a, tol) }
		}
		if err := cmp(); err != nil {
			return fmt.Errorf("output %d: %w", i, err)
		}
	}
	return nil
}

// Compare checks got against want element by element. NaNs must match
// NaNs, and an infinite want must be met exactly (a relative tolerance of
// infinity would accept anything).
func Compare(got, want *reference.Tensor, tol Tolerance) error {
	if got.DType != want.DType {
		return fmt.Errorf("dtype %v, want %v", got.DType, want.DType)
	}
	if fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
		return fmt.Errorf("shape %v, want %v", got.Shape, want.Shape)
	}
	bad := 0
	var first error
	for i := range want.V {
		g, w := got.V[i], want.V[i]
		if !elementOK(g, w, tol) {
			bad++
			if first == nil {
				first = fmt.Errorf("element %d: got %v, want %v (diff %g, tol %+v)", i, g, w, math.Abs(g-w), tol)
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d elements differ; first: %w", bad, len(want.V), first)
	}
	return nil
}

// RandTensor returns a tensor of uniform values in [lo, hi) (integers,
// rounded down, for every dtype but float32). The loops are per dtype: the
// large cases' inputs (16 million values) are a good part of what building
// every case costs.
func RandTensor(r *rand.Rand, dt serialization.DataType, shape []int64, lo, hi float64) *reference.Tensor {
	t := reference.New(dt, shape)
	if dt == serialization.Float32 {
		for i := range t.V {
			t.V[i] = float64(float32(lo + r.Float64()*(hi-lo)))
		}
		return t
	}
	for i := range t.V {
		t.V[i] = reference.Round(dt, math.Floor(lo+r.Float64()*(hi-lo)))
	}
	return t
}

// Dims converts a shape to VkTensor dims.
func Dims(shape []int64) []uint32 {
	d := make([]uint32, len(shape))
	for i, s := range shape {
		d[i] = uint32(s)
	}
	return d
}

// mustBlob encodes b; the suite's builders only hold valid values, so an
// encoding error is a bug in a case and panics.
func mustBlob(b *serialization.Builder) []byte {
	raw, err := b.Blob()
	if err != nil {
		panic(fmt.Sprintf("opstest: encoding a case: %v", err))
	}
	return raw
}

// FamilyCases returns the cases whose graphs hold an op whose kernels the
// kernel family decides (ops.FamilyOps): the cases a run under a
// second family must repeat. Outside the long sweeps (testenv.Long) it
// leaves out the Heavy ones.
func FamilyCases(cases []Case) []Case {
	var out []Case
	for _, c := range cases {
		if c.Heavy && (!testenv.Long() || testing.Short()) {
			continue
		}
		b := serialization.NewBuilder()
		c.Build(b, rand.New(rand.NewPCG(1, 0x5eed)))
		if holdsFamilyOp(b.Graph()) {
			out = append(out, c)
		}
	}
	return out
}
