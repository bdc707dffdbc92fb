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
		"add/broadcast b":  add([]uint32{1, 6}, one),
		"add/alpha String": add([]uint32{2, 6}, func(b *serialization.Builder) int32 { return b.String("1") }),
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
