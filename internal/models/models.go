package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Files is an encoded model: a .pte program and, when its weights are kept
// apart, the .ptd file that holds them (nil otherwise).
type Files struct {
	PTE, PTD []byte
}

// Encode writes b's graph as the payload of a VulkanBackend delegate in a
// .pte. With separateWeights the named constants go in a .ptd, as large
// models ship their weights; otherwise they are the .pte's own named data,
// one self-contained file.
func Encode(b *serialization.Builder, separateWeights bool) (Files, error) {
	blob, err := b.Blob()
	if err != nil {
		return Files{}, fmt.Errorf("encoding the delegate blob: %w", err)
	}
	opts := serialization.PTEOptions{Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: blob}}}
	if !separateWeights {
		opts.NamedData = b.NamedBlobs()
	}
	var f Files
	if f.PTE, err = serialization.EncodePTE(opts); err != nil {
		return Files{}, fmt.Errorf("encoding the .pte: %w", err)
	}
	if separateWeights {
		if f.PTD, err = serialization.EncodePTD(b.NamedBlobs()); err != nil {
			return Files{}, fmt.Errorf("encoding the .ptd: %w", err)
		}
	}
	return f, nil
}

// RunReference encodes b and interprets the graph on the plain-Go
// reference, in float64, with inputs in the graph's input order (a SymInt
// input is a one-element tensor).
func RunReference(b *serialization.Builder, inputs []*reference.Tensor) ([]*reference.Tensor, error) {
	return RunReferenceOptions(b, inputs, reference.Options{})
}

// RunReferenceOptions is RunReference with the reference's opts.
func RunReferenceOptions(b *serialization.Builder, inputs []*reference.Tensor, opts reference.Options) ([]*reference.Tensor, error) {
	raw, err := b.Blob()
	if err != nil {
		return nil, err
	}
	blob, err := serialization.DecodeBlob(raw)
	if err != nil {
		return nil, err
	}
	named := serialization.NewNamedDataMap()
	for _, nb := range b.NamedBlobs() {
		if err := named.Add(nb.Key, nb.Data); err != nil {
			return nil, err
		}
	}
	return reference.RunOptions(blob, named, inputs, opts)
}

// ToReference converts a host tensor (a model input or output) to a
// reference tensor.
func ToReference(t wgdelegate.Tensor) (*reference.Tensor, error) {
	return reference.Decode(t.DType, t.Shape, t.Data)
}

// OpCounts lists the graph's operators in chain order of first use, with
// how often each is called.
func OpCounts(b *serialization.Builder) []OpCount {
	var out []OpCount
	idx := map[string]int{}
	for _, op := range b.Graph().Chain {
		i, ok := idx[op.Name]
		if !ok {
			i = len(out)
			idx[op.Name] = i
			out = append(out, OpCount{Name: op.Name})
		}
		out[i].Count++
	}
	return out
}

// OpCount is one operator and how many times a graph calls it.
type OpCount struct {
	Name  string
	Count int
}

// Tolerance is how far a GPU result may be from the reference: element i
// passes when |got - want| <= Abs + Rel·|want|.
type Tolerance struct{ Abs, Rel float64 }

// Tol is the tolerance the examples and end-to-end tests check against:
// 1e-3 relative, the bar for reductions and matmuls, with an absolute
// floor of 1e-5 for values near zero, where a relative error means little.
var Tol = Tolerance{Abs: 1e-5, Rel: 1e-3}

// Diff is how a GPU output compares with the reference.
type Diff struct {
	// MaxAbs is the largest |got - want|.
	MaxAbs float64
	// MaxRel is the largest |got - want| / (|want| + Abs/Rel): the
	// relative error, with values smaller than Abs/Rel in magnitude
	// compared as if they were that size. An output passes when MaxRel
	// <= Rel.
	MaxRel float64
	// Bad counts the elements outside the tolerance; First describes the
	// first of them.
	Bad   int
	First string
}

func (d Diff) String() string {
	return fmt.Sprintf("max abs err %.3g, max rel err %.3g", d.MaxAbs, d.MaxRel)
}

// Compare compares a GPU output with the reference's value for it. The
// error reports a dtype or shape mismatch, or elements outside tol.
func Compare(got wgdelegate.Tensor, want *reference.Tensor, tol Tolerance) (Diff, error) {
	var d Diff
	if got.DType != want.DType {
		return d, fmt.Errorf("dtype %v, want %v", got.DType, want.DType)
	}
	if fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
		return d, fmt.Errorf("shape %v, want %v", got.Shape, want.Shape)
	}
	g, err := ToReference(got)
	if err != nil {
		return d, err
	}
	floor := tol.Abs / tol.Rel
	for i, w := range want.V {
		e := math.Abs(g.V[i] - w)
		if math.IsNaN(e) && !(math.IsNaN(g.V[i]) && math.IsNaN(w)) {
			e = math.Inf(1)
		}
		if math.IsNaN(e) || (math.IsInf(w, 0) && g.V[i] == w) {
			continue
		}
		d.MaxAbs = max(d.MaxAbs, e)
		d.MaxRel = max(d.MaxRel, e/(math.Abs(w)+floor))
		if e > tol.Abs+tol.Rel*math.Abs(w) {
			if d.Bad == 0 {
				d.First = fmt.Sprintf("element %d: got %g, want %g", i, g.V[i], w)
			}
			d.Bad++
		}
	}
	if d.Bad > 0 {
		return d, fmt.Errorf("%d of %d elements outside %g abs + %g rel (%v); first: %s",
			d.Bad, len(want.V), tol.Abs, tol.Rel, d, d.First)
	}
	return d, nil
}

// rng draws deterministic weights.
type rng struct{ r *rand.Rand }

func newRNG(seed uint64) *rng { return &rng{rand.New(rand.NewPCG(seed, 0x77656967687473))} }

// normal returns n values from N(0, scale²).
func (r *rng) normal(n int64, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.r.NormFloat64() * scale)
	}
	return v
}

// uniform returns n values in [lo, hi).
func (r *rng) uniform(n int64, lo, hi float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(lo + (hi-lo)*r.r.Float64())
	}
	return v
}

// f32bytes returns v's little-endian bytes, the layout of tensor data.
func f32bytes(v []float32) []byte {
	return wgdelegate.FromFloat32([]int64{int64(len(v))}, v).Data
}

// dims converts a shape to the serialized uint32 dims.
func dims(s ...int64) []uint32 {
	d := make([]uint32, len(s))
	for i, x := range s {
		d[i] = uint32(x)
	}
	return d
}

// weight adds v as a float32 named constant of the given shape.
func weight(b *serialization.Builder, v []float32, shape ...int64) int32 {
	id, _ := b.NamedConst(serialization.Float32, dims(shape...), f32bytes(v))
	return id
}

// Plan is a memory plan a test graph runs under.
type Plan string

const (
	// PlanAsBuilt keeps the mem_obj_ids the model was written with.
	PlanAsBuilt Plan = "as-built"
	// PlanDedicated gives every non-constant tensor its own buffer.
	PlanDedicated Plan = "dedicated"
	// PlanExporter plans like ExecuTorch's Vulkan exporter: greedy, shared
	// objects reused as soon as a tensor's last reader has run
	// (memplan.PlanLikeExporter).
	PlanExporter Plan = "exporter"
)

// Plans are the plans every test graph runs under: no sharing at all, and
// the exporter's greedy plan that real exports carry.
var Plans = []Plan{PlanDedicated, PlanExporter}

// ApplyPlan rewrites the mem_obj_ids of b's graph for plan p, in place.
func ApplyPlan(b *serialization.Builder, p Plan) {
	switch p {
	case PlanDedicated:
		memplan.PlanDedicated(b.Graph())
	case PlanExporter:
		memplan.PlanLikeExporter(b.Graph())
	}
}

// i32bytes returns v's little-endian bytes.
func i32bytes(v []int32) []byte {
	return wgdelegate.FromInt32([]int64{int64(len(v))}, v).Data
}
