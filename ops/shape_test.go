package ops_test

import (
	"context"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestShapeRejects: bad arguments of the shape and indexing ops are
// *ArgErrors at build time, never panics.
func TestShapeRejects(t *testing.T) {
	f, i32 := serialization.Float32, serialization.Int32
	// op builds a graph with one op: ins are input dims (float32 unless
	// listed in dts), args gets their ids and returns the op's args.
	op := func(name string, out []uint32, ins [][]uint32, dts []serialization.DataType, args func(b *serialization.Builder, x []int32) []int32) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			var ids []int32
			for k, d := range ins {
				dt := f
				if k < len(dts) {
					dt = dts[k]
				}
				ids = append(ids, b.Tensor(dt, d, -1))
			}
			y := b.Tensor(f, out, -1)
			b.Op(name, append(args(b, ids), y)...)
			b.Inputs(ids...)
			b.Outputs(y)
		}
	}
	one := [][]uint32{{3, 4}}
	wantArgError(t, openTestDevice(t), map[string]func(b *serialization.Builder){
		"view two -1": op("aten.view_copy.default", []uint32{12}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.IntList(-1, -1)} }),
		"view numel": op("aten.view_copy.default", []uint32{12}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.IntList(5, 2)} }),
		"view out too small": op("aten.view_copy.default", []uint32{11}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.IntList(12)} }),
		"squeeze dim": op("aten.squeeze_copy.dims", []uint32{12}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.IntList(2)} }),
		"unsqueeze dim": op("aten.unsqueeze_copy.default", []uint32{12}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(-4)} }),
		"slice step 0": op("aten.slice_copy.Tensor", []uint32{12}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], b.Int(0), b.Null(), b.Null(), b.Int(0)}
			}),
		"slice dim": op("aten.slice_copy.Tensor", []uint32{12}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], b.Int(2), b.Int(0), b.Int(1), b.Int(1)}
			}),
		"slice start kind": op("aten.slice_copy.Tensor", []uint32{12}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], b.Int(0), b.Double(0.5), b.Int(1), b.Int(1)}
			}),
		"select index": op("aten.select_copy.int", []uint32{4}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(0), b.Int(-4)} }),
		"select scalar": op("aten.select_copy.int", []uint32{1}, [][]uint32{{}}, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(0), b.Int(0)} }),
		"cat sizes": op("aten.cat.default", []uint32{24}, [][]uint32{{3, 4}, {3, 5}}, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{b.ValueList(x...), b.Int(0)} }),
		"cat dtypes": op("aten.cat.default", []uint32{24}, [][]uint32{{3, 4}, {3, 4}}, []serialization.DataType{f, i32},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{b.ValueList(x...), b.Int(0)} }),
		"cat scalar": op("aten.cat.default", []uint32{24}, [][]uint32{{}, {3}}, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{b.ValueList(x...), b.Int(0)} }),
		"cat not a list": op("aten.cat.default", []uint32{24}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(0)} }),
		"expand": op("aten.expand_copy.default", []uint32{24}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], b.IntList(3, 5), b.Bool(false)}
			}),
		"expand new -1": op("aten.expand_copy.default", []uint32{24}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], b.IntList(-1, 3, 4), b.Bool(false)}
			}),
		"repeat too few": op("aten.repeat.default", []uint32{24}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.IntList(2)} }),
		"repeat_interleave output_size": op("aten.repeat_interleave.self_int", []uint32{24}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(2), b.Int(0), b.Int(7)} }),
		"flip twice": op("aten.flip.default", []uint32{12}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.IntList(1, -1)} }),
		"split sizes": func(b *serialization.Builder) {
			x := b.Tensor(f, []uint32{3, 4}, -1)
			y, z := b.Tensor(f, []uint32{1, 4}, -1), b.Tensor(f, []uint32{1, 4}, -1)
			b.Op("aten.split_with_sizes_copy.default", x, b.IntList(1, 1), b.Int(0), b.ValueList(y, z))
			b.Inputs(x)
			b.Outputs(y, z)
		},
		"split count": func(b *serialization.Builder) {
			x := b.Tensor(f, []uint32{3, 4}, -1)
			y, z := b.Tensor(f, []uint32{2, 4}, -1), b.Tensor(f, []uint32{2, 4}, -1)
			b.Op("aten.split_copy.Tensor", x, b.Int(1), b.Int(0), b.ValueList(y, z))
			b.Inputs(x)
			b.Outputs(y, z)
		},
		"index_select 2-D index": op("aten.index_select.default", []uint32{12}, [][]uint32{{3, 4}, {2, 2}}, []serialization.DataType{f, i32},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(0), x[1]} }),
		"index_select float index": op("aten.index_select.default", []uint32{12}, [][]uint32{{3, 4}, {2}}, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(0), x[1]} }),
		"gather rank": op("aten.gather.default", []uint32{12}, [][]uint32{{3, 4}, {2}}, []serialization.DataType{f, i32},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(0), x[1], b.Bool(false)} }),
		"gather larger index": op("aten.gather.default", []uint32{12}, [][]uint32{{3, 4}, {2, 5}}, []serialization.DataType{f, i32},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(0), x[1], b.Bool(false)} }),
		"index bool mask": op("aten.index.Tensor", []uint32{12}, [][]uint32{{3, 4}, {3}}, []serialization.DataType{f, serialization.Bool},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.ValueList(x[1])} }),
		"index broadcast": op("aten.index.Tensor", []uint32{12}, [][]uint32{{3, 4}, {2}, {3}}, []serialization.DataType{f, i32, i32},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.ValueList(x[1], x[2])} }),
		"index too many": op("aten.index.Tensor", []uint32{12}, [][]uint32{{3}, {2}, {2}}, []serialization.DataType{f, i32, i32},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.ValueList(x[1], x[2])} }),
		"index only nulls": op("aten.index.Tensor", []uint32{12}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.ValueList(b.Null())} }),
		"embedding 1-D weight": op("aten.embedding.default", []uint32{12}, [][]uint32{{3}, {2}}, []serialization.DataType{f, i32},
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], x[1], b.Int(-1), b.Bool(false), b.Bool(false)}
			}),
		"wrong arg count": op("aten.flip.default", []uint32{12}, one, nil,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0]} }),
	})
}

// TestShapeFloat16 moves raw half bit patterns through FLOAT16 tensors
// (held as float32 on the device; once 2-byte gathers): a slice that moves
// single halves and a cat whose slabs would split words; every half must
// come back bit for bit.
func TestShapeFloat16(t *testing.T) {
	dev := openTestDevice(t)
	h := serialization.Float16
	b := serialization.NewBuilder()
	x := b.Tensor(h, []uint32{3, 5}, -1)
	z := b.Tensor(h, []uint32{3, 2}, -1)
	s := b.Tensor(h, []uint32{3, 2}, -1)
	b.Op("aten.slice_copy.Tensor", x, b.Int(1), b.Int(1), b.Int(-1), b.Int(2), s)
	c := b.Tensor(h, []uint32{3, 7}, -1)
	b.Op("aten.cat.default", b.ValueList(x, z), b.Int(-1), c)
	b.Inputs(x, z)
	b.Outputs(s, c)
	g, err := buildGraph(t, dev, b)
	if err != nil {
		t.Fatal(err)
	}
	xb, zb := make([]byte, 30), make([]byte, 12)
	for i := range xb {
		xb[i] = byte(i + 1)
	}
	for i := range zb {
		zb[i] = byte(101 + i)
	}
	outs, err := g.Execute(context.Background(), []graph.Tensor{{DType: h, Shape: []int64{3, 5}, Data: xb}, {DType: h, Shape: []int64{3, 2}, Data: zb}})
	if err != nil {
		t.Fatal(err)
	}
	var ws, wc []byte
	for r := 0; r < 3; r++ {
		for _, col := range []int{1, 3} {
			ws = append(ws, xb[2*(5*r+col):2*(5*r+col)+2]...)
		}
		wc = append(wc, xb[10*r:10*r+10]...)
		wc = append(wc, zb[4*r:4*r+4]...)
	}
	if !slices.Equal(outs[0].Data, ws) || !slices.Equal(outs[1].Data, wc) {
		t.Errorf("slice %x, want %x; cat %x, want %x", outs[0].Data, ws, outs[1].Data, wc)
	}
}
