// Package opstest is the op conformance suite: every case builds a small
// VkGraph in the real format, runs it through the GPU graph and through the
// plain-Go reference interpreter on the same random inputs, and compares the
// outputs with a per-dtype tolerance.
//
// Cases are data (Case values in per-family tables); Run drives them. Add a
// family by appending to Cases from an init in a cases_<family>.go file.
package opstest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops"
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
	// Tol overrides DefaultTolerance for float32 outputs when non-zero.
	Tol Tolerance
}

// Cases is the registry of every family's cases.
var Cases []Case

// Seeds is how many random input sets each case runs.
const Seeds = 3

// Run runs every case on dev and on the reference.
func Run(t *testing.T, dev *gpu.Device, cases []Case) { RunWith(t, dev, cases, ops.Config{}) }

// RunWith is Run with the graphs loaded with kernel choices cfg.
func RunWith(t *testing.T, dev *gpu.Device, cases []Case, cfg ops.Config) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			for seed := uint64(1); seed <= Seeds; seed++ {
				if err := RunCaseWith(dev, c, seed, cfg); err != nil {
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

// RunCase runs one case with one seed and returns the first mismatch. The
// case runs under a dedicated buffer per tensor and under the exporter's
// greedy memory plan (the first seed both, later seeds alternately); both
// must match the reference and record as many dispatches (a fusion the
// exporter's plan prevented would show there).
func RunCase(dev *gpu.Device, c Case, seed uint64) error {
	return RunCaseWith(dev, c, seed, ops.Config{})
}

// RunCaseWith is RunCase with the graphs loaded with kernel choices cfg.
func RunCaseWith(dev *gpu.Device, c Case, seed uint64, cfg ops.Config) error {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	b := serialization.NewBuilder()
	inputs := c.Build(b, r)
	named := serialization.NewNamedDataMap()
	for _, nb := range b.NamedBlobs() {
		if err := named.Add(nb.Key, nb.Data); err != nil {
			return err
		}
	}
	var want []*reference.Tensor
	dispatches := map[Plan]int{}
	for _, plan := range plansFor(seed) {
		switch plan {
		case PlanDedicated:
			memplan.PlanDedicated(b.Graph())
		case PlanExporter:
			memplan.PlanLikeExporter(b.Graph())
		}
		blobBytes, err := b.Blob()
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		blob, err := serialization.DecodeBlob(blobBytes)
		if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		if want == nil {
			if want, err = reference.Run(blob, named, inputs); err != nil {
				return err
			}
		}
		n, err := runPlan(dev, c, blob, graph.Options{NamedData: named, Kernels: cfg}, inputs, want)
		if err != nil {
			return fmt.Errorf("%s plan: %w", plan, err)
		}
		dispatches[plan] = n
	}
	if d, e := dispatches[PlanDedicated], dispatches[PlanExporter]; d != 0 && e != 0 && d != e {
		return fmt.Errorf("%d dispatches under dedicated buffers, %d under the exporter's plan", d, e)
	}
	return nil
}

// runPlan builds blob on dev, executes it on inputs and compares with want;
// it returns how many dispatches the graph recorded.
func runPlan(dev *gpu.Device, c Case, blob *serialization.Blob, opts graph.Options, inputs, want []*reference.Tensor) (int, error) {
	g, err := graph.Build(context.Background(), dev, blob, opts)
	if err != nil {
		return 0, fmt.Errorf("gpu build: %w", err)
	}
	defer g.Close()
	hostIn := make([]graph.Tensor, len(inputs))
	for i, in := range inputs {
		hostIn[i] = graph.Tensor{DType: in.DType, Shape: in.Shape, Data: in.Encode()}
	}
	got, err := g.Execute(context.Background(), hostIn)
	if err != nil {
		return 0, fmt.Errorf("gpu execute: %w", err)
	}
	for i := range want {
		gt, err := reference.Decode(got[i].DType, got[i].Shape, got[i].Data)
		if err != nil {
			return 0, err
		}
		tol := DefaultTolerance[want[i].DType]
		if c.Tol != (Tolerance{}) && want[i].DType == serialization.Float32 {
			tol = c.Tol
		}
		if err := Compare(gt, want[i], tol); err != nil {
			return 0, fmt.Errorf("output %d: %w", i, err)
		}
	}
	return len(g.Dispatches()), nil
}

// Compare checks got against want element by element. NaNs must match NaNs.
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
		if math.IsNaN(w) || math.IsNaN(g) {
			if math.IsNaN(w) != math.IsNaN(g) {
				bad++
				if first == nil {
					first = fmt.Errorf("element %d: got %v, want %v", i, g, w)
				}
			}
			continue
		}
		if math.IsInf(w, 0) && g == w {
			continue
		}
		if math.Abs(g-w) > tol.Abs+tol.Rel*math.Abs(w) {
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

// RandTensor returns a tensor of uniform values in [lo, hi) (integers for
// integer dtypes).
func RandTensor(r *rand.Rand, dt serialization.DataType, shape []int64, lo, hi float64) *reference.Tensor {
	t := reference.New(dt, shape)
	for i := range t.V {
		v := lo + r.Float64()*(hi-lo)
		t.V[i] = reference.Round(dt, math.Floor(v)*boolf(dt != serialization.Float32)+v*boolf(dt == serialization.Float32))
	}
	return t
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Dims converts a shape to VkTensor dims.
func Dims(shape []int64) []uint32 {
	d := make([]uint32, len(shape))
	for i, s := range shape {
		d[i] = uint32(s)
	}
	return d
}
