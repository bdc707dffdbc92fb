package ops_test

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestQuantRejects checks one rejection path of each weight-quantized op
// per bad argument: every one must be an ops.ErrArg at build.
func TestQuantRejects(t *testing.T) {
	f, u8, i8 := serialization.Float32, serialization.Uint8, serialization.Int8
	ten := argTensor
	cst := func(b *serialization.Builder, dt serialization.DataType, dims ...uint32) int32 {
		n := dt.Size()
		for _, d := range dims {
			n *= int(d)
		}
		id, _ := b.NamedConst(dt, dims, make([]byte, n))
		return id
	}
	// q4gsw builds x [2, k] · weight [n, wcols] with scales [sg, sn] (dtype sdt).
	q4gsw := func(k, n, wcols, sg, sn uint32, g int64, sdt serialization.DataType) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			x := ten(b, f, 2, k)
			b.Op("et_vk.linear_q4gsw.default", x, cst(b, u8, n, wcols), cst(b, sdt, sg, sn), b.Int(g), b.Null(), ten(b, f, 2, n))
			b.Inputs(x)
		}
	}
	perChannel := func(op string, k, n uint32, w int32Fn, sdims ...uint32) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			x := ten(b, f, 2, k)
			b.Op(op, x, w(b), cst(b, f, sdims...), ten(b, f, 2, n))
			b.Inputs(x)
		}
	}
	emb := func(wdims, sdims []uint32, g int64, idt serialization.DataType) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			ix := ten(b, idt, 3)
			b.Op("et_vk.embedding_q4gsw.default", cst(b, u8, wdims...), cst(b, f, sdims...), b.Int(g), ix, b.Bool(true), ten(b, f, 3, wdims[1]*2))
			b.Inputs(ix)
		}
	}
	qparams := func(mapping string, block []int64) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			x := ten(b, f, 3, 8)
			out := b.ValueList(ten(b, f, 3), ten(b, i8, 3))
			b.Op("torchao.choose_qparams_affine.default", x, b.String(mapping), b.IntList(block...), b.Null(), b.Int(-128), b.Int(127), b.Null(), b.Null(), b.Null(), b.Bool(false), out)
			b.Inputs(x)
		}
	}
	wantArgError(t, openTestDevice(t), map[string]func(b *serialization.Builder){
		"q4gsw/K not a multiple of 4":  q4gsw(30, 4, 16, 1, 4, 30, f),
		"q4gsw/weight not padded":      q4gsw(36, 4, 18, 1, 4, 36, f),
		"q4gsw/group size 6":           q4gsw(48, 4, 24, 8, 4, 6, f),
		"q4gsw/too few scale groups":   q4gsw(64, 4, 32, 1, 4, 32, f),
		"q4gsw/scales narrower than N": q4gsw(64, 8, 32, 2, 4, 32, f),
		"q4gsw/int8 weight": func(b *serialization.Builder) {
			x := ten(b, f, 2, 64)
			b.Op("et_vk.linear_q4gsw.default", x, cst(b, i8, 4, 32), cst(b, f, 2, 4), b.Int(32), b.Null(), ten(b, f, 2, 4))
			b.Inputs(x)
		},
		"q4gsw/bias too short": func(b *serialization.Builder) {
			x := ten(b, f, 2, 64)
			b.Op("et_vk.linear_q4gsw.default", x, cst(b, u8, 8, 32), cst(b, f, 2, 8), b.Int(32), cst(b, f, 4), ten(b, f, 2, 8))
			b.Inputs(x)
		},
		"q4gsw/5 args": func(b *serialization.Builder) {
			x := ten(b, f, 2, 64)
			b.Op("et_vk.linear_q4gsw.default", x, cst(b, u8, 4, 32), cst(b, f, 2, 4), b.Int(32), ten(b, f, 2, 4))
			b.Inputs(x)
		},
		"qcs4w/weight width":      perChannel("et_vk.linear_qcs4w.default", 36, 4, func(b *serialization.Builder) int32 { return cst(b, u8, 4, 20) }, 4),
		"qcs4w/scales [N+1]":      perChannel("et_vk.linear_qcs4w.default", 36, 4, func(b *serialization.Builder) int32 { return cst(b, u8, 4, 18) }, 5),
		"int8pack/uint8 mat2":     perChannel("aten._weight_int8pack_mm.default", 16, 4, func(b *serialization.Builder) int32 { return cst(b, u8, 4, 16) }, 4),
		"int8pack/2-D scales":     perChannel("aten._weight_int8pack_mm.default", 16, 4, func(b *serialization.Builder) int32 { return cst(b, i8, 4, 16) }, 1, 4),
		"embedding/int64 indices": emb([]uint32{10, 16}, []uint32{10}, 32, serialization.Int64),
		"embedding/scales rows":   emb([]uint32{10, 16}, []uint32{9}, 32, serialization.Int32),
		"embedding/groups short":  emb([]uint32{10, 16}, []uint32{10, 1}, 16, serialization.Int32),
		"embedding/D not 8k":      emb([]uint32{10, 3}, []uint32{10}, 6, serialization.Int32),
		"qparams/symmetric":       qparams("SYMMETRIC", []int64{1, 8}),
		"qparams/per tensor":      qparams("ASYMMETRIC", []int64{3, 8}),
		"weight_int4/group 12": func(b *serialization.Builder) {
			x := ten(b, f, 2, 48)
			b.Op("et_vk.linear_weight_int4.default", x, cst(b, u8, 4, 24), b.Int(12), cst(b, f, 4, 4, 2), b.Int(8), ten(b, f, 2, 4))
			b.Inputs(x)
		},
	})
}

// int32Fn adds a value and returns its id.
type int32Fn = func(b *serialization.Builder) int32
