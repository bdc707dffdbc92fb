package opstest

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// The subnormal policy (README, "Numerics on every adapter"): WGSL lets an
// adapter flush float32 subnormals (magnitudes below 2^-126) to zero.
// Where the adapter does (gpu.AdapterInfo.Subnormals, probed at Open), an
// arithmetic result whose exact value is subnormal may be ±0, and a
// subnormal input may act as ±0; nothing else may differ. Comparisons,
// minimum/maximum, where, abs, neg and copies work on the bits and stay
// exact (a Case with SubnormalExact gets no allowance). On an adapter that
// keeps subnormals (lavapipe) the comparison is exact as before.

// minNormal32 is the smallest normal float32, 2^-126.
const minNormal32 = 0x1p-126

// isSubnormal32 reports whether v is a nonzero float32 subnormal.
func isSubnormal32(v float64) bool { return v != 0 && math.Abs(v) < minNormal32 }

// flusher is implemented by a Backend that can tell whether its adapter
// flushes float32 subnormals, so that the suite applies the subnormal
// allowance (gpubackend.GPU).
type flusher interface{ FlushesSubnormals() bool }

// flushes reports whether be's results get the subnormal allowance.
func flushes(be Backend) bool {
	f, ok := be.(flusher)
	return ok && f.FlushesSubnormals()
}

// FlushInputs returns ts with every float32 subnormal value replaced by
// zero of its sign: the inputs as an adapter that flushes operands sees
// them (other dtypes are returned as they are).
func FlushInputs(ts []*reference.Tensor) []*reference.Tensor {
	out := make([]*reference.Tensor, len(ts))
	for i, t := range ts {
		out[i] = t
		if t.DType != serialization.Float32 {
			continue
		}
		var c *reference.Tensor
		for j, v := range t.V {
			if !isSubnormal32(v) {
				continue
			}
			if c == nil {
				c = reference.New(t.DType, t.Shape)
				copy(c.V, t.V)
			}
			c.V[j] = math.Copysign(0, v)
		}
		if c != nil {
			out[i] = c
		}
	}
	return out
}

// CompareFlushing is Compare with a flushing adapter's allowance: element
// i of got passes when it passes Compare against want[i], or against
// alt[i] (alt: the reference on FlushInputs' inputs, nil when the inputs
// hold no subnormal), or is ±0 where want[i] or alt[i] is a float32
// subnormal. Integer and bool outputs get alt only. Shapes and dtypes must
// match as Compare's.
func CompareFlushing(got, want, alt *reference.Tensor, tol Tolerance) error {
	if err := Compare(got, want, tol); err == nil {
		return nil
	}
	if got.DType != want.DType || fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
		return Compare(got, want, tol)
	}
	if alt != nil && (alt.DType != want.DType || fmt.Sprint(alt.Shape) != fmt.Sprint(want.Shape)) {
		return fmt.Errorf("flushed-input reference: dtype %v shape %v, want %v %v", alt.DType, alt.Shape, want.DType, want.Shape)
	}
	float := want.DType == serialization.Float32 || want.DType == serialization.Float16
	bad := 0
	var first error
	for i := range want.V {
		g := got.V[i]
		ok := elementOK(g, want.V[i], tol) || (float && g == 0 && isSubnormal32(want.V[i]))
		if alt != nil {
			ok = ok || elementOK(g, alt.V[i], tol) || (float && g == 0 && isSubnormal32(alt.V[i]))
		}
		if !ok {
			bad++
			if first == nil {
				first = fmt.Errorf("element %d: got %v, want %v (flushing adapter: or ±0 for a subnormal, or %v with subnormal inputs as ±0)",
					i, g, want.V[i], altValue(alt, i))
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d elements differ; first: %w", bad, len(want.V), first)
	}
	return nil
}

// altValue is alt.V[i], or "none".
func altValue(alt *reference.Tensor, i int) any {
	if alt == nil {
		return "none"
	}
	return alt.V[i]
}

// elementOK is Compare's test of one element: NaN matches NaN, an
// infinite want only itself, anything else within the tolerance.
func elementOK(g, w float64, tol Tolerance) bool {
	switch {
	case math.IsNaN(w) || math.IsNaN(g):
		return math.IsNaN(w) == math.IsNaN(g)
	case math.IsInf(w, 0) || math.IsInf(g, 0):
		return g == w
	}
	return math.Abs(g-w) <= tol.Abs+tol.Rel*math.Abs(w)
}

// hasSubnormal reports whether any float32 input holds a subnormal.
func hasSubnormal(ts []*reference.Tensor) bool {
	for _, t := range ts {
		if t.DType != serialization.Float32 {
			continue
		}
		for _, v := range t.V {
			if isSubnormal32(v) {
				return true
			}
		}
	}
	return false
}
