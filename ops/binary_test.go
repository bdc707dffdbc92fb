package ops_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// The device and graph helpers (openTestDevice, buildGraph, wantArgError,
// argTensor, inputOutputOp) live in matmul_test.go.

// TestElementwiseRejects: every bad argument of the binary, comparison,
// where and unary ops
// fails the graph load with an ops.ErrArg inside a *graph.OpError.
func TestElementwiseRejects(t *testing.T) {
	f, i, bo := serialization.Float32, serialization.Int32, serialization.Bool
	ten := argTensor
	// add records out = x + alpha*y.
	add := func(b *serialization.Builder, x, y, alpha, out int32) {
		b.Op("aten.add.Tensor", x, y, alpha, out)
		b.Inputs(x)
		b.Outputs(out)
	}
	two := func(b *serialization.Builder, op string, x, y, out int32) {
		b.Op(op, x, y, out)
		b.Inputs(x)
		b.Outputs(out)
	}
	where := func(b *serialization.Builder, c, x, y, out int32) {
		b.Op("aten.where.self", c, x, y, out)
		b.Inputs(c)
		b.Outputs(out)
	}
	one := func(b *serialization.Builder, op string, x, out int32) {
		b.Op(op, x, out)
		b.Inputs(x)
		b.Outputs(out)
	}
	cases := map[string]func(b *serialization.Builder){
		"add/shape mismatch": func(b *serialization.Builder) {
			add(b, ten(b, f, 3, 5), ten(b, f, 4), b.Int(1), ten(b, f, 3, 5))
		},
		"add/out dims": func(b *serialization.Builder) {
			add(b, ten(b, f, 3, 5), ten(b, f, 5), b.Int(1), ten(b, f, 3, 4))
		},
		"mul/out capacity": func(b *serialization.Builder) {
			// The broadcast {3,5} has 15 elements; out holds 14.
			two(b, "aten.mul.Tensor", ten(b, f, 3, 5), ten(b, f, 5), ten(b, f, 14))
		},
		"add/alpha String": func(b *serialization.Builder) {
			add(b, ten(b, f, 4), ten(b, f, 4), b.String("2"), ten(b, f, 4))
		},
		"add/int32 alpha String": func(b *serialization.Builder) {
			add(b, ten(b, i, 4), ten(b, i, 4), b.String("2"), ten(b, i, 4))
		},
		"sub/int32 alpha 0.5": func(b *serialization.Builder) {
			b.Op("aten.sub.Tensor", ten(b, i, 4), ten(b, i, 4), b.Double(0.5), ten(b, i, 4))
		},
		"add/int32 alpha overflow": func(b *serialization.Builder) {
			add(b, ten(b, i, 4), ten(b, i, 4), b.Int(1<<31), ten(b, i, 4))
		},
		"add/int64 other": func(b *serialization.Builder) {
			add(b, ten(b, f, 4), ten(b, serialization.Int64, 4), b.Int(1), ten(b, f, 4))
		},
		"mul/float64": func(b *serialization.Builder) {
			two(b, "aten.mul.Tensor", ten(b, serialization.Float64, 4), ten(b, serialization.Float64, 4), ten(b, serialization.Float64, 4))
		},
		"mul/bool out": func(b *serialization.Builder) {
			two(b, "aten.mul.Tensor", ten(b, f, 4), ten(b, f, 4), ten(b, serialization.Bool, 4))
		},
		"mul/uint8": func(b *serialization.Builder) {
			u := serialization.Uint8
			two(b, "aten.mul.Tensor", ten(b, u, 4), ten(b, u, 4), ten(b, u, 4))
		},
		"add/int8": func(b *serialization.Builder) {
			s := serialization.Int8
			add(b, ten(b, s, 4), ten(b, s, 4), b.Int(1), ten(b, s, 4))
		},
		"div/int32 out": func(b *serialization.Builder) {
			two(b, "aten.div.Tensor", ten(b, i, 4), ten(b, i, 4), ten(b, i, 4))
		},
		"add/float input into int32 out": func(b *serialization.Builder) {
			add(b, ten(b, i, 4), ten(b, f, 4), b.Int(1), ten(b, i, 4))
		},
		"add/arg count": func(b *serialization.Builder) {
			two(b, "aten.add.Tensor", ten(b, f, 4), ten(b, f, 4), ten(b, f, 4))
		},
		"div/arg count": func(b *serialization.Builder) {
			add(b, ten(b, f, 4), ten(b, f, 4), b.Int(1), ten(b, f, 4))
			b.Graph().Chain[0].Name = "aten.div.Tensor"
		},
		"mul/other not a tensor": func(b *serialization.Builder) {
			two(b, "aten.mul.Tensor", ten(b, f, 4), b.Double(2), ten(b, f, 4))
		},
		"add/nine unmergeable dims": func(b *serialization.Builder) {
			add(b, ten(b, f, 2, 1, 2, 1, 2, 1, 2, 1, 4), ten(b, f, 1, 3, 1, 3, 1, 3, 1, 3, 4), b.Int(1),
				ten(b, f, 2, 3, 2, 3, 2, 3, 2, 3, 4))
		},
		"div_mode/bad mode": func(b *serialization.Builder) {
			b.Op("aten.div.Tensor_mode", ten(b, f, 4), ten(b, f, 4), b.String("round"), ten(b, f, 4))
		},
		"div_mode/mode Int": func(b *serialization.Builder) {
			b.Op("aten.div.Tensor_mode", ten(b, f, 4), ten(b, f, 4), b.Int(1), ten(b, f, 4))
		},
		"div_mode/floor of int32 into float32": func(b *serialization.Builder) {
			b.Op("aten.div.Tensor_mode", ten(b, i, 4), ten(b, i, 4), b.String("floor"), ten(b, f, 4))
		},
		"div_mode/true division into int32": func(b *serialization.Builder) {
			b.Op("aten.div.Tensor_mode", ten(b, i, 4), ten(b, i, 4), b.Null(), ten(b, i, 4))
		},
		"div_mode/arg count": func(b *serialization.Builder) {
			two(b, "aten.div.Tensor_mode", ten(b, f, 4), ten(b, f, 4), ten(b, f, 4))
		},
		"pow/float input into int32": func(b *serialization.Builder) {
			two(b, "aten.pow.Tensor_Tensor", ten(b, i, 4), ten(b, f, 4), ten(b, i, 4))
		},
		"minimum/int32 inputs into float32": func(b *serialization.Builder) {
			two(b, "aten.minimum.default", ten(b, i, 4), ten(b, i, 4), ten(b, f, 4))
		},
		"maximum/bools": func(b *serialization.Builder) {
			two(b, "aten.maximum.default", ten(b, bo, 4), ten(b, bo, 4), ten(b, bo, 4))
		},
		"bitwise_and/float32": func(b *serialization.Builder) {
			two(b, "aten.bitwise_and.Tensor", ten(b, f, 4), ten(b, i, 4), ten(b, f, 4))
		},
		"bitwise_or/int32 into bool": func(b *serialization.Builder) {
			two(b, "aten.bitwise_or.Tensor", ten(b, i, 4), ten(b, bo, 4), ten(b, bo, 4))
		},
		"add_scalar/other a tensor": func(b *serialization.Builder) {
			add(b, ten(b, f, 4), ten(b, f, 4), b.Int(1), ten(b, f, 4))
			b.Graph().Chain[0].Name = "aten.add.Scalar"
		},
		"add_scalar/other String": func(b *serialization.Builder) {
			add(b, ten(b, f, 4), b.String("1"), b.Int(1), ten(b, f, 4))
			b.Graph().Chain[0].Name = "aten.add.Scalar"
		},
		"add_scalar/fractional other into int32": func(b *serialization.Builder) {
			add(b, ten(b, i, 4), b.Double(2.5), b.Int(1), ten(b, i, 4))
			b.Graph().Chain[0].Name = "aten.add.Scalar"
		},
		"mul_scalar/other overflows int32": func(b *serialization.Builder) {
			two(b, "aten.mul.Scalar", ten(b, i, 4), b.Int(1<<33), ten(b, i, 4))
		},
		"div_scalar/int32 out": func(b *serialization.Builder) {
			two(b, "aten.div.Scalar", ten(b, i, 4), b.Int(2), ten(b, i, 4))
		},
		"rsub_scalar/arg count": func(b *serialization.Builder) {
			two(b, "aten.rsub.Scalar", ten(b, f, 4), b.Int(2), ten(b, f, 4))
		},
		"eq/float32 out": func(b *serialization.Builder) {
			two(b, "aten.eq.Tensor", ten(b, f, 4), ten(b, f, 4), ten(b, f, 4))
		},
		"lt/shape mismatch": func(b *serialization.Builder) {
			two(b, "aten.lt.Tensor", ten(b, f, 3, 5), ten(b, f, 4), ten(b, bo, 3, 5))
		},
		"gt/uint8": func(b *serialization.Builder) {
			two(b, "aten.gt.Tensor", ten(b, serialization.Uint8, 4), ten(b, f, 4), ten(b, bo, 4))
		},
		"ge/out capacity": func(b *serialization.Builder) {
			two(b, "aten.ge.Tensor", ten(b, f, 3, 1), ten(b, f, 5), ten(b, bo, 14))
		},
		"eq_scalar/other a tensor": func(b *serialization.Builder) {
			two(b, "aten.eq.Scalar", ten(b, f, 4), ten(b, f, 4), ten(b, bo, 4))
		},
		"ne_scalar/int32 other out of range": func(b *serialization.Builder) {
			two(b, "aten.ne.Scalar", ten(b, i, 4), b.Int(1<<31), ten(b, bo, 4))
		},
		"le_scalar/arg count": func(b *serialization.Builder) {
			add(b, ten(b, f, 4), b.Int(1), b.Int(1), ten(b, bo, 4))
			b.Graph().Chain[0].Name = "aten.le.Scalar"
		},
		"logical_and/int32 out": func(b *serialization.Builder) {
			two(b, "aten.logical_and.default", ten(b, bo, 4), ten(b, bo, 4), ten(b, i, 4))
		},
		"where/float condition": func(b *serialization.Builder) {
			where(b, ten(b, f, 4), ten(b, f, 4), ten(b, f, 4), ten(b, f, 4))
		},
		"where/out dtype": func(b *serialization.Builder) {
			where(b, ten(b, bo, 4), ten(b, f, 4), ten(b, i, 4), ten(b, i, 4))
		},
		"where/shape mismatch": func(b *serialization.Builder) {
			where(b, ten(b, bo, 3), ten(b, f, 4), ten(b, f, 4), ten(b, f, 4))
		},
		"where/other a scalar": func(b *serialization.Builder) {
			where(b, ten(b, bo, 4), ten(b, f, 4), b.Double(1), ten(b, f, 4))
		},
		"where/arg count": func(b *serialization.Builder) {
			two(b, "aten.where.self", ten(b, bo, 4), ten(b, f, 4), ten(b, f, 4))
		},
		"sigmoid/int32": func(b *serialization.Builder) {
			one(b, "aten.sigmoid.default", ten(b, i, 4), ten(b, i, 4))
		},
		"sigmoid/out dtype": func(b *serialization.Builder) {
			one(b, "aten.sigmoid.default", ten(b, f, 4), ten(b, i, 4))
		},
		// out's dims are computed from self's; only a capacity too small
		// for them is an error.
		"relu/out too small": func(b *serialization.Builder) {
			one(b, "aten.relu.default", ten(b, f, 2, 3), ten(b, f, 5))
		},
		"relu/arg count": func(b *serialization.Builder) {
			two(b, "aten.relu.default", ten(b, f, 4), b.Null(), ten(b, f, 4))
		},
	}
	wantArgError(t, openTestDevice(t), cases)
}

// TestElementwiseEmpty: a zero-element out records no dispatch and
// executes.
func TestElementwiseEmpty(t *testing.T) {
	dev := openTestDevice(t)
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{0, 3}, -1)
	y := b.Tensor(f, []uint32{3}, -1)
	z := b.Tensor(f, []uint32{0, 3}, -1)
	r := b.Tensor(f, []uint32{0, 3}, -1)
	b.Op("aten.add.Tensor", x, y, b.Int(1), z)
	b.Op("aten.relu.default", z, r)
	b.Inputs(x, y)
	b.Outputs(r)
	g, err := buildGraph(t, dev, b)
	if err != nil {
		t.Fatal(err)
	}
	if n := g.MemoryStats().NumDispatches; n != 0 {
		t.Errorf("%d dispatches, want 0", n)
	}
	outs, err := g.Execute(context.Background(), []graph.Tensor{
		{DType: f, Shape: []int64{0, 3}}, graph.Float32Tensor([]int64{3}, []float32{1, 2, 3}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs[0].Data) != 0 {
		t.Errorf("got %d bytes, want 0", len(outs[0].Data))
	}
}

// TestBinaryFoldedGrid: {4097,1} + {1,4097} is 16,785,409 outputs, one per
// invocation (4097 is not a multiple of 4), so 65,569 workgroups of 256: more
// than the 65,535 one grid dimension allows, and ops.Grid folds the dispatch
// into 2-D. The inputs are tiny and out[i][j] = 4097*i + j is its own linear
// index, so a skipped or misplaced workgroup shows; int32 keeps every value
// exact (float32 is not past 2^24).
func TestBinaryFoldedGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB output")
	}
	const n = 4097
	i32 := serialization.Int32
	b := serialization.NewBuilder()
	x := b.Tensor(i32, []uint32{n, 1}, -1)
	y := b.Tensor(i32, []uint32{1, n}, -1)
	z := b.Tensor(i32, []uint32{n, n}, -1)
	b.Op("aten.add.Tensor", x, y, b.Int(1), z)
	b.Inputs(x, y)
	b.Outputs(z)
	g, err := buildGraph(t, openTestDevice(t), b)
	if err != nil {
		t.Fatal(err)
	}
	xs, ys := make([]int32, n), make([]int32, n)
	for i := range xs {
		xs[i], ys[i] = int32(n*i), int32(i)
	}
	outs, err := g.Execute(context.Background(), []graph.Tensor{
		graph.Int32Tensor([]int64{n, 1}, xs), graph.Int32Tensor([]int64{1, n}, ys),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := outs[0].Int32s()
	if err != nil {
		t.Fatal(err)
	}
	checkElems(t, got, func(k int) int32 { return int32(k) }, func(k int) string { return fmt.Sprintf("[%d]", k) })
}

// checkElems compares got[k] with want(k) for every k, naming the first
// five wrong elements (by where(k)) and then how many were wrong.
func checkElems[T comparable](t *testing.T, got []T, want func(k int) T, where func(k int) string) {
	t.Helper()
	bad := 0
	for k, v := range got {
		if w := want(k); v != w {
			if bad++; bad <= 5 {
				t.Errorf("out%s = %v, want %v", where(k), v, w)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d elements wrong", bad, len(got))
	}
}

// gridIndex names element k of an n-column matrix as [row][column].
func gridIndex(n int) func(k int) string {
	return func(k int) string { return fmt.Sprintf("[%d][%d]", k/n, k%n) }
}

// TestCompareFoldedGrid: lt of {8193,1} and {1,8193} int32 is 67,125,249
// bool outputs, four per invocation, so 65,552 workgroups of 256: past the
// 65,535 one grid dimension allows. out[i][j] = i < j shows a skipped or
// misplaced word.
func TestCompareFoldedGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB output")
	}
	const n = 8193
	i32 := serialization.Int32
	b := serialization.NewBuilder()
	x := b.Tensor(i32, []uint32{n, 1}, -1)
	y := b.Tensor(i32, []uint32{1, n}, -1)
	z := b.Tensor(serialization.Bool, []uint32{n, n}, -1)
	b.Op("aten.lt.Tensor", x, y, z)
	b.Inputs(x, y)
	b.Outputs(z)
	g, err := buildGraph(t, openTestDevice(t), b)
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]int32, n)
	for i := range xs {
		xs[i] = int32(i)
	}
	outs, err := g.Execute(context.Background(), []graph.Tensor{
		graph.Int32Tensor([]int64{n, 1}, xs), graph.Int32Tensor([]int64{1, n}, xs),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := outs[0].Data
	if len(got) != n*n {
		t.Fatalf("%d bytes, want %d", len(got), n*n)
	}
	checkElems(t, got, func(k int) byte {
		if k/n < k%n {
			return 1
		}
		return 0
	}, gridIndex(n))
}

// TestWhereFoldedGrid: where({4097,1}, {1,4097}, {4097,1}) in int32 is
// 16,785,409 outputs, one per invocation: 65,569 workgroups, folded into
// 2-D. out[i][j] is j where i is even and -i where it is odd.
func TestWhereFoldedGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB output")
	}
	const n = 4097
	i32 := serialization.Int32
	b := serialization.NewBuilder()
	c := b.Tensor(serialization.Bool, []uint32{n, 1}, -1)
	x := b.Tensor(i32, []uint32{1, n}, -1)
	y := b.Tensor(i32, []uint32{n, 1}, -1)
	z := b.Tensor(i32, []uint32{n, n}, -1)
	b.Op("aten.where.self", c, x, y, z)
	b.Inputs(c, x, y)
	b.Outputs(z)
	g, err := buildGraph(t, openTestDevice(t), b)
	if err != nil {
		t.Fatal(err)
	}
	cs, xs, ys := make([]byte, n), make([]int32, n), make([]int32, n)
	for i := range xs {
		cs[i] = byte(1 - i%2)
		xs[i], ys[i] = int32(i), int32(-i)
	}
	outs, err := g.Execute(context.Background(), []graph.Tensor{
		{DType: serialization.Bool, Shape: []int64{n, 1}, Data: cs},
		graph.Int32Tensor([]int64{1, n}, xs), graph.Int32Tensor([]int64{n, 1}, ys),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := outs[0].Int32s()
	if err != nil {
		t.Fatal(err)
	}
	checkElems(t, got, func(k int) int32 {
		if i := k / n; i%2 == 1 {
			return int32(-i)
		}
		return int32(k % n)
	}, gridIndex(n))
}
