package ops_test

import (
	"math"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// q8 builds the values of the int8 op rejection tests.
type q8 struct{ b *serialization.Builder }

func (q q8) ten(dt serialization.DataType, dims ...uint32) int32 { return q.b.Tensor(dt, dims, -1) }

func (q q8) in(dt serialization.DataType, dims ...uint32) int32 {
	id := q.ten(dt, dims...)
	q.b.Inputs(id)
	return id
}

func (q q8) cst(dt serialization.DataType, dims ...uint32) int32 {
	n := dt.Size()
	for _, d := range dims {
		n *= int(d)
	}
	id, _ := q.b.NamedConst(dt, dims, make([]byte, n))
	return id
}

// TestQ8taElementwiseRejects checks one rejection path per bad argument of
// the quantize/dequantize pair and the elementwise int8 ops.
func TestQ8taElementwiseRejects(t *testing.T) {
	f, i8, u8 := serialization.Float32, serialization.Int8, serialization.Uint8
	quant := func(xdt serialization.DataType, s float64, zp, lo, hi int64, odt serialization.DataType) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			q := q8{b}
			b.Op("quantized_decomposed.quantize_per_tensor.default", q.in(xdt, 2, 5), b.Double(s), b.Int(zp), b.Int(lo), b.Int(hi), b.Null(), q.ten(odt, 2, 5))
		}
	}
	dequant := func(xdt serialization.DataType, zp int64, odt serialization.DataType) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			q := q8{b}
			b.Op("quantized_decomposed.dequantize_per_tensor.default", q.in(xdt, 7), b.Double(0.1), b.Int(zp), b.Int(-128), b.Int(127), b.Null(), b.Null(), q.ten(odt, 7))
		}
	}
	relu := func(si float64, zo int64) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			q := q8{b}
			b.Op("et_vk.q8ta_relu.default", q.in(i8, 9), b.Double(si), b.Int(0), b.Double(0.1), b.Int(zo), q.ten(i8, 9))
		}
	}
	add := func(bdims []uint32, alpha int32Fn) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			q := q8{b}
			x, y := q.in(i8, 2, 6), q.in(i8, bdims...)
			b.Op("et_vk.q8ta_add.default", x, y, b.Double(0.1), b.Int(0), b.Double(0.1), b.Int(0), b.Double(0.1), b.Int(0), alpha(b), q.ten(i8, 2, 6))
		}
	}
	one := func(b *serialization.Builder) int32 { return b.Double(1) }
	shuffle := func(in []uint32, inv float64, r int64) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			q := q8{b}
			b.Op("et_vk.q8ta_pixel_shuffle.default", q.in(i8, in...), b.Double(0.1), b.Int(0), b.Double(inv), b.Int(0), b.Int(r), q.ten(i8, 1, 1, 8, 8))
		}
	}
	wantArgError(t, openTestDevice(t), map[string]func(b *serialization.Builder){
		"quantize/int8 input":      quant(i8, 0.1, 0, -128, 127, i8),
		"quantize/uint8 output":    quant(f, 0.1, 0, -128, 127, u8),
		"quantize/zero scale":      quant(f, 0, 0, -128, 127, i8),
		"quantize/negative scale":  quant(f, -0.5, 0, -128, 127, i8),
		"quantize/zero point 128":  quant(f, 0.1, 128, -128, 127, i8),
		"quantize/quant_max 255":   quant(f, 0.1, 0, 0, 255, i8),
		"quantize/quant_min > max": quant(f, 0.1, 0, 10, -10, i8),
		"quantize/scale as String": func(b *serialization.Builder) {
			q := q8{b}
			b.Op("quantized_decomposed.quantize_per_tensor.default", q.in(f, 4), b.String("0.1"), b.Int(0), b.Int(-128), b.Int(127), b.Null(), q.ten(i8, 4))
		},
		"quantize/6 args": func(b *serialization.Builder) {
			q := q8{b}
			b.Op("quantized_decomposed.quantize_per_tensor.default", q.in(f, 4), b.Double(0.1), b.Int(0), b.Int(-128), b.Int(127), q.ten(i8, 4))
		},
		"dequantize/float input":    dequant(f, 0, f),
		"dequantize/int8 output":    dequant(i8, 0, i8),
		"dequantize/zero point 200": dequant(i8, 200, f),
		"dequantize/7 args": func(b *serialization.Builder) {
			q := q8{b}
			b.Op("quantized_decomposed.dequantize_per_tensor.default", q.in(i8, 4), b.Double(0.1), b.Int(0), b.Int(-128), b.Int(127), b.Null(), q.ten(f, 4))
		},
		"relu/NaN input scale":   relu(nanF(), 0),
		"relu/output zero point": relu(0.1, -129),
		"relu/float input": func(b *serialization.Builder) {
			q := q8{b}
			b.Op("et_vk.q8ta_relu.default", q.in(f, 9), b.Double(0.1), b.Int(0), b.Double(0.1), b.Int(0), q.ten(i8, 9))
		},
		"add/shapes do not broadcast": add([]uint32{3, 6}, one),
		"add/alpha IntList":           add([]uint32{2, 6}, func(b *serialization.Builder) int32 { return b.IntList(1) }),
		"add/9 args": func(b *serialization.Builder) {
			q := q8{b}
			x := q.in(i8, 4)
			b.Op("et_vk.q8ta_add.default", x, x, b.Double(0.1), b.Int(0), b.Double(0.1), b.Int(0), b.Double(0.1), b.Int(0), q.ten(i8, 4))
		},
		"shuffle/channels not r²": shuffle([]uint32{1, 6, 4, 4}, 10, 2),
		"shuffle/r 0":             shuffle([]uint32{1, 4, 4, 4}, 10, 0),
		"shuffle/rank 2":          shuffle([]uint32{16, 16}, 10, 2),
		"shuffle/zero inv scale":  shuffle([]uint32{1, 4, 4, 4}, 0, 2),
	})
}

func nanF() float64 { return math.NaN() }

// TestQ8taLinearRejects checks one rejection path per bad argument of the
// int8 linears.
func TestQ8taLinearRejects(t *testing.T) {
	f, i8, i32, u8 := serialization.Float32, serialization.Int8, serialization.Int32, serialization.Uint8
	// lin builds q8ta_linear of x [2, k] (dtype xdt) with weights wdt [n, wk],
	// sums sdt [ns], scales [ns], the activation act.
	lin := func(xdt serialization.DataType, k, n, wk, ns uint32, wdt, sdt serialization.DataType, act string) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			q := q8{b}
			b.Op("et_vk.q8ta_linear.default", q.in(xdt, 2, k), b.Double(0.1), b.Int(0), q.cst(wdt, n, wk), q.cst(sdt, ns), q.cst(f, ns),
				b.Double(0.1), b.Int(0), b.Null(), b.String(act), q.ten(i8, 2, n))
		}
	}
	csw := func(xdt serialization.DataType, bias int32Fn, odt serialization.DataType) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			q := q8{b}
			b.Op("et_vk.linear_q8ta_q8csw.default", q.in(xdt, 3, 16), b.Double(0.1), b.Int(0), q.cst(i8, 8, 16), q.cst(i32, 8), q.cst(f, 8), bias(b), q.ten(odt, 3, 8))
		}
	}
	null := func(b *serialization.Builder) int32 { return b.Null() }
	wantArgError(t, openTestDevice(t), map[string]func(b *serialization.Builder){
		"q8ta_linear/float input":           lin(f, 16, 8, 16, 8, i8, i32, "none"),
		"q8ta_linear/K not a multiple of 4": lin(i8, 18, 8, 18, 8, i8, i32, "none"),
		"q8ta_linear/K too long":            lin(i8, 240004, 1, 240004, 4, i8, i32, "none"),
		"q8ta_linear/uint8 weights":         lin(i8, 16, 8, 16, 8, u8, i32, "none"),
		"q8ta_linear/weights padded K":      lin(i8, 16, 8, 20, 8, i8, i32, "none"),
		"q8ta_linear/sums too short":        lin(i8, 16, 8, 16, 4, i8, i32, "none"),
		"q8ta_linear/float sums":            lin(i8, 16, 8, 16, 8, i8, f, "none"),
		"q8ta_linear/activation gelu":       lin(i8, 16, 8, 16, 8, i8, i32, "gelu"),
		"q8ta_linear/10 args": func(b *serialization.Builder) {
			q := q8{b}
			b.Op("et_vk.q8ta_linear.default", q.in(i8, 2, 16), b.Double(0.1), b.Int(0), q.cst(i8, 8, 16), q.cst(i32, 8), q.cst(f, 8), b.Double(0.1), b.Int(0), b.Null(), q.ten(i8, 2, 8))
		},
		"q8ta_linear/output zero point 300": func(b *serialization.Builder) {
			q := q8{b}
			b.Op("et_vk.q8ta_linear.default", q.in(i8, 2, 16), b.Double(0.1), b.Int(0), q.cst(i8, 8, 16), q.cst(i32, 8), q.cst(f, 8), b.Double(0.1), b.Int(300), b.Null(), b.String("none"), q.ten(i8, 2, 8))
		},
		"q8ta_linear_gemv/float32 out": func(b *serialization.Builder) {
			q := q8{b}
			b.Op("et_vk.q8ta_linear_gemv.default", q.in(i8, 1, 16), b.Double(0.1), b.Int(0), q.cst(i8, 8, 16), q.cst(i32, 8), q.cst(f, 8), b.Double(0.1), b.Int(0), b.Null(), b.String("none"), q.ten(f, 1, 8))
		},
		"linear_q8ta_q8csw/int32 input": csw(i32, null, f),
		"linear_q8ta_q8csw/int8 output": csw(i8, null, i8),
		"linear_q8ta_q8csw/short bias":  csw(i8, func(b *serialization.Builder) int32 { return q8{b}.cst(f, 4) }, f),
		"linear_q8ta_q8csw/int8 bias":   csw(i8, func(b *serialization.Builder) int32 { return q8{b}.cst(i8, 8) }, f),
	})
}

// TestQ8taConvRejects checks one rejection path per bad argument of the
// int8 convolutions.
func TestQ8taConvRejects(t *testing.T) {
	f, i8, i32 := serialization.Float32, serialization.Int8, serialization.Int32
	type conv struct {
		op      string
		xdims   []uint32
		wdims   []uint32
		wdt     serialization.DataType
		oc      uint32
		ks      []int64
		stride  []int64
		pad     []int64
		groups  int64
		act     string
		outDims []uint32
	}
	build := func(c conv) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			q := q8{b}
			args := []int32{q.in(i8, c.xdims...), b.Double(0.1), b.Int(0), q.cst(c.wdt, c.wdims...), q.cst(i32, c.oc), q.cst(f, c.oc),
				b.Double(0.1), b.Int(0), b.Null(), b.IntList(c.ks...), b.IntList(c.stride...), b.IntList(c.pad...)}
			if c.op == "et_vk.q8ta_conv2d_transposed.default" {
				args = append(args, b.IntList(0, 0))
			}
			args = append(args, b.IntList(1, 1), b.Int(c.groups), b.String(c.act), q.ten(i8, c.outDims...))
			b.Op(c.op, args...)
		}
	}
	ok := conv{op: "et_vk.q8ta_conv2d.default", xdims: []uint32{1, 4, 8, 8}, wdims: []uint32{8, 36}, wdt: i8, oc: 8,
		ks: []int64{3, 3}, stride: []int64{1, 1}, pad: []int64{1, 1}, groups: 1, act: "none", outDims: []uint32{1, 8, 8, 8}}
	with := func(edit func(c *conv)) func(b *serialization.Builder) {
		c := ok
		edit(&c)
		return build(c)
	}
	// The unedited case builds: the rejections below are about their edit.
	base := serialization.NewBuilder()
	build(ok)(base)
	g, err := buildGraph(t, openTestDevice(t), base)
	if err != nil {
		t.Fatalf("the base case fails: %v", err)
	}
	g.Close()
	wantArgError(t, openTestDevice(t), map[string]func(b *serialization.Builder){
		"conv/3-D input":            with(func(c *conv) { c.xdims = []uint32{4, 8, 8} }),
		"conv/uint8 weights":        with(func(c *conv) { c.wdt = serialization.Uint8 }),
		"conv/weights too narrow":   with(func(c *conv) { c.wdims = []uint32{8, 32} }),
		"conv/groups 3":             with(func(c *conv) { c.groups = 3 }),
		"conv/OC not divisible":     with(func(c *conv) { c.groups = 4; c.wdims = []uint32{6, 12}; c.oc = 6; c.outDims = []uint32{1, 6, 8, 8} }),
		"conv/stride 0":             with(func(c *conv) { c.stride = []int64{0, 1} }),
		"conv/negative padding":     with(func(c *conv) { c.pad = []int64{-1, 1} }),
		"conv/kernel of 3 dims":     with(func(c *conv) { c.ks = []int64{3, 3, 3} }),
		"conv/kernel larger than x": with(func(c *conv) { c.pad = []int64{0, 0}; c.xdims = []uint32{1, 4, 2, 8} }),
		"conv/scales too short":     with(func(c *conv) { c.oc = 4 }),
		"conv/activation hardtanh":  with(func(c *conv) { c.act = "hardtanh" }),
		"conv/too many trips":       with(func(c *conv) { c.xdims = []uint32{1, 8000, 8, 8}; c.wdims = []uint32{8, 72000} }),
		"dw/2-D weights": with(func(c *conv) {
			c.op = "et_vk.q8ta_conv2d_dw.default"
			c.groups = 4
			c.wdims = []uint32{4, 12}
			c.oc = 4
		}),
		"dw/weights for fewer channels": with(func(c *conv) { c.op = "et_vk.q8ta_conv2d_dw.default"; c.groups = 4; c.wdims = []uint32{3, 3, 2} }),
		"dw/groups not C":               with(func(c *conv) { c.op = "et_vk.q8ta_conv2d_dw.default"; c.groups = 2; c.wdims = []uint32{3, 3, 4} }),
		"transposed/output_padding": func(b *serialization.Builder) {
			q := q8{b}
			b.Op("et_vk.q8ta_conv2d_transposed.default", q.in(i8, 1, 4, 4, 4), b.Double(0.1), b.Int(0), q.cst(i8, 4, 36), q.cst(i32, 4), q.cst(f, 4), b.Double(0.1), b.Int(0), b.Null(), b.IntList(3, 3), b.IntList(1, 1), b.IntList(1, 1), b.IntList(2, 2), b.IntList(1, 1), b.Int(1), b.String("none"), q.ten(i8, 1, 4, 6, 6))
		},
		"transposed/empty kernel_size": with(func(c *conv) { c.op = "et_vk.q8ta_conv2d_transposed.default"; c.ks = nil }),
		"pw/15 args": func(b *serialization.Builder) {
			q := q8{b}
			b.Op("et_vk.q8ta_conv2d_pw.default", q.in(i8, 1, 4, 4, 4), b.Double(0.1), b.Int(0), q.cst(i8, 4, 4), q.cst(i32, 4), q.cst(f, 4), b.Double(0.1), b.Int(0), b.Null(), b.IntList(1, 1), b.IntList(1, 1), b.IntList(0, 0), b.IntList(1, 1), b.Int(1), q.ten(i8, 1, 4, 4, 4))
		},
	})
}
