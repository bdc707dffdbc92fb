package opstest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// fillCase is one fill graph. build adds the op writing out (declared with
// outShape) and returns the graph's inputs; fill ops need none, so an
// unrelated float32 input keeps the graph well-formed.
type fillCase struct {
	name     string
	dt       serialization.DataType
	outShape []int64
	// like, when set, is the shape of a *_like op's self (a graph input).
	like []int64
	op   func(b *serialization.Builder, self, out int32)
}

func (c fillCase) build(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	inShape := []int64{1}
	if c.like != nil {
		inShape = c.like
	}
	self := b.Tensor(uF32, Dims(inShape), -1)
	out := b.Tensor(c.dt, Dims(c.outShape), -1)
	c.op(b, self, out)
	b.Inputs(self)
	b.Outputs(out)
	return []*reference.Tensor{RandTensor(r, uF32, inShape, -1, 1)}
}

// nulls appends n fresh Nulls (dtype, layout, device, ... turn into Null).
func nulls(b *serialization.Builder, n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = b.Null()
	}
	return ids
}

func opCall(b *serialization.Builder, name string, args ...int32) { b.Op(name, args...) }

func cat(a ...[]int32) []int32 {
	var out []int32
	for _, x := range a {
		out = append(out, x...)
	}
	return out
}

func init() {
	var cs []fillCase
	dts := []serialization.DataType{uF32, uI32, uBool, uU8, uI8}
	shapes := [][]int64{{}, {7}, {4, 3}, {2, 1, 3, 1, 5, 1}, {0, 4}}
	for _, dt := range dts {
		for _, sh := range shapes {
			cs = append(cs,
				fillCase{name: "zeros", dt: dt, outShape: sh, op: func(b *serialization.Builder, _, out int32) {
					opCall(b, "aten.zeros.default", cat([]int32{b.IntList(sh...)}, nulls(b, 4), []int32{out})...)
				}},
				fillCase{name: "ones", dt: dt, outShape: sh, op: func(b *serialization.Builder, _, out int32) {
					opCall(b, "aten.ones.default", cat([]int32{b.IntList(sh...)}, nulls(b, 4), []int32{out})...)
				}},
				fillCase{name: "zeros_like", dt: dt, outShape: sh, like: sh, op: func(b *serialization.Builder, self, out int32) {
					opCall(b, "aten.zeros_like.default", cat([]int32{self}, nulls(b, 5), []int32{out})...)
				}},
				fillCase{name: "ones_like", dt: dt, outShape: sh, like: sh, op: func(b *serialization.Builder, self, out int32) {
					opCall(b, "aten.ones_like.default", cat([]int32{self}, nulls(b, 5), []int32{out})...)
				}},
			)
		}
		// full with Int, Double and Bool values, full_like, scalar_tensor.
		vals := []struct {
			name string
			v    func(b *serialization.Builder) int32
		}{
			{"int", func(b *serialization.Builder) int32 { return b.Int(-7) }},
			{"double", func(b *serialization.Builder) int32 { return b.Double(-2.75) }},
			{"true", func(b *serialization.Builder) int32 { return b.Bool(true) }},
		}
		if dt == uU8 {
			vals[0].v = func(b *serialization.Builder) int32 { return b.Int(200) }
			vals[1].v = func(b *serialization.Builder) int32 { return b.Double(254.9) }
		}
		for _, val := range vals {
			for _, sh := range [][]int64{{}, {5}, {3, 1, 4}} {
				cs = append(cs,
					fillCase{name: "full/" + val.name, dt: dt, outShape: sh, op: func(b *serialization.Builder, _, out int32) {
						opCall(b, "aten.full.default", cat([]int32{b.IntList(sh...), val.v(b)}, nulls(b, 4), []int32{out})...)
					}},
					fillCase{name: "full_like/" + val.name, dt: dt, outShape: sh, like: sh, op: func(b *serialization.Builder, self, out int32) {
						opCall(b, "aten.full_like.default", cat([]int32{self, val.v(b)}, nulls(b, 5), []int32{out})...)
					}},
				)
			}
			cs = append(cs, fillCase{name: "scalar_tensor/" + val.name, dt: dt, outShape: []int64{}, op: func(b *serialization.Builder, _, out int32) {
				opCall(b, "aten.scalar_tensor.default", cat([]int32{val.v(b)}, nulls(b, 4), []int32{out})...)
			}})
		}
	}
	// full's float specials and a size given as a ValueList with a SymInt
	// (its serialized value).
	for _, v := range []float64{math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1), 3e38, 1e-30} {
		cs = append(cs, fillCase{name: "full/special/" + fmt.Sprint(v), dt: uF32, outShape: []int64{9}, op: func(b *serialization.Builder, _, out int32) {
			opCall(b, "aten.full.default", cat([]int32{b.IntList(9), b.Double(v)}, nulls(b, 4), []int32{out})...)
		}})
	}
	cs = append(cs, fillCase{name: "full/symint_size", dt: uF32, outShape: []int64{3, 5}, op: func(b *serialization.Builder, _, out int32) {
		size := b.ValueList(b.Int(3), b.SymInt(5))
		opCall(b, "aten.full.default", cat([]int32{size, b.Double(1.5)}, nulls(b, 4), []int32{out})...)
	}})
	cs = append(cs, fillCase{name: "zeros/big", dt: uF32, outShape: []int64{1000, 77}, op: func(b *serialization.Builder, _, out int32) {
		opCall(b, "aten.zeros.default", cat([]int32{b.IntList(1000, 77)}, nulls(b, 4), []int32{out})...)
	}})

	// arange: Int and Double bounds, negative steps, non-multiples of the
	// step, int32 results from fractional bounds, empty ranges.
	aranges := []struct {
		dt                serialization.DataType
		start, end, step  float64
		intStart, intStep bool
	}{
		{uF32, 0, 7, 1, true, true},
		{uF32, 0, 16, 1, true, true},
		{uF32, -3, 3, 0.25, false, false},
		{uF32, 2.5, -4, -0.75, false, false},
		{uF32, 1, 2, 0.1, true, false},
		{uF32, 5, 5, 1, true, true},
		{uF32, -1000, 1000, 3, true, true},
		{uI32, 0, 13, 1, true, true},
		{uI32, -7, 25, 4, true, true},
		{uI32, 10, -11, -3, true, true},
		{uI32, 0.5, 9.5, 1.5, false, false},
		{uI32, 3, 3, -1, true, true},
	}
	for _, a := range aranges {
		n := int64(math.Ceil((a.end - a.start) / a.step))
		name := "arange/" + ftoa(a.start) + "_" + ftoa(a.end) + "_" + ftoa(a.step)
		cs = append(cs, fillCase{name: name, dt: a.dt, outShape: []int64{n}, op: func(b *serialization.Builder, _, out int32) {
			num := func(v float64, isInt bool) int32 {
				if isInt {
					return b.Int(int64(v))
				}
				return b.Double(v)
			}
			// end is always a Double: the exporter may hand either.
			opCall(b, "aten.arange.start_step", cat([]int32{num(a.start, a.intStart), b.Double(a.end), num(a.step, a.intStep)}, nulls(b, 4), []int32{out})...)
		}})
	}
	// A symbolic end (arange(0, sym_size)), at its serialized value, and
	// a SymInt fill value.
	cs = append(cs, fillCase{name: "arange/symint_end", dt: uI32, outShape: []int64{11}, op: func(b *serialization.Builder, _, out int32) {
		opCall(b, "aten.arange.start_step", cat([]int32{b.Int(0), b.SymInt(11), b.Int(1)}, nulls(b, 4), []int32{out})...)
	}})
	cs = append(cs, fillCase{name: "full/symint_value", dt: uF32, outShape: []int64{2, 3}, op: func(b *serialization.Builder, _, out int32) {
		opCall(b, "aten.full.default", cat([]int32{b.IntList(2, 3), b.SymInt(-9)}, nulls(b, 4), []int32{out})...)
	}})
	// 16,777,217 int32 values, one per invocation: 65,537 workgroups, so
	// the dispatch folds into 2-D; each value is its own index.
	cs = append(cs, fillCase{name: "arange/folded", dt: uI32, outShape: []int64{1<<24 + 1}, op: func(b *serialization.Builder, _, out int32) {
		opCall(b, "aten.arange.start_step", cat([]int32{b.Int(0), b.Int(1<<24 + 1), b.Int(1)}, nulls(b, 4), []int32{out})...)
	}})

	for _, c := range cs {
		sh := shapeName(c.outShape)
		if len(c.outShape) == 0 {
			sh = "scalar"
		}
		name := c.name + "/" + c.dt.String()
		if c.like != nil || len(c.name) < 8 || c.name[:6] != "arange" {
			name += "/" + sh
		}
		Cases = append(Cases, Case{Name: name, Build: c.build})
	}
}

// ftoa formats v compactly for case names.
func ftoa(v float64) string {
	if v == math.Trunc(v) {
		return itoa(int64(v))
	}
	s := itoa(int64(math.Round(v * 100)))
	return s + "e-2"
}
