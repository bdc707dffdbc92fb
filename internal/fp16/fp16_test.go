package fp16

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

func f32Bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// TestRewrite: float32 tensors become FLOAT16 (non-constants staged as
// asked, constants converted and clamped, inline staying inline and named
// named), other dtypes, values, the chain and the I/O are kept.
func TestRewrite(t *testing.T) {
	f, h := serialization.Float32, serialization.Float16
	src := serialization.NewBuilder()
	x := src.Tensor(f, []uint32{4}, 0)
	idx := src.Tensor(serialization.Int32, []uint32{4}, -1)
	w := src.InlineConst(f, []uint32{4}, f32Bytes(1, -1e5, 7e4, float32(math.Inf(-1))))
	q := src.InlineConst(serialization.Uint8, []uint32{4}, []byte{1, 2, 3, 4})
	nw, _ := src.NamedConst(f, []uint32{2}, f32Bytes(0.1, float32(math.NaN())))
	y := src.Tensor(f, []uint32{4}, 1)
	src.Op("aten.add.Tensor", x, w, src.Double(0.5), y)
	src.Inputs(x, idx)
	src.Outputs(y)
	for _, staging := range []serialization.DataType{f, h} {
		dst := serialization.NewBuilder()
		if err := Rewrite(dst, src, staging); err != nil {
			t.Fatal(err)
		}
		g := dst.Graph()
		for id, want := range map[int32][2]serialization.DataType{x: {h, staging}, y: {h, staging}, idx: {serialization.Int32, serialization.Int32},
			w: {h, h}, q: {serialization.Uint8, serialization.Uint8}, nw: {h, h}} {
			tt := g.Values[id].Tensor
			if tt.DataType != want[0] || tt.StagingDataType != want[1] {
				t.Errorf("staging %v: value %d is %v staged %v, want %v staged %v", staging, id, tt.DataType, tt.StagingDataType, want[0], want[1])
			}
		}
		if g.Values[x].Tensor.MemObjID != 0 || g.Values[y].Tensor.MemObjID != 1 {
			t.Errorf("mem_obj_ids not kept")
		}
		wantInline := []byte{0x00, 0x3c, 0xff, 0xfb, 0xff, 0x7b, 0xff, 0xfb} // 1, -65504, 65504, -65504
		if got := dst.InlineData()[:8]; !slices.Equal(got, wantInline) {
			t.Errorf("inline halves % x, want % x", got, wantInline)
		}
		if c := g.Constants[g.Values[nw].Tensor.ConstantID]; !c.IsNamed() {
			t.Errorf("the named constant became inline")
		}
		nb := dst.NamedBlobs()
		if len(nb) != 1 || len(nb[0].Data) != 4 || binary.LittleEndian.Uint16(nb[0].Data)&0x7fff != 0x2e66 || binary.LittleEndian.Uint16(nb[0].Data[2:])&0x7c00 != 0x7c00 {
			t.Errorf("named halves %+v", nb)
		}
		if !slices.Equal(g.InputIDs, []uint32{uint32(x), uint32(idx)}) || !slices.Equal(g.OutputIDs, []uint32{uint32(y)}) ||
			len(g.Chain) != 1 || !slices.Equal(g.Chain[0].Args, []int32{x, w, 6, y}) {
			t.Errorf("graph structure changed: in %v out %v chain %+v", g.InputIDs, g.OutputIDs, g.Chain)
		}
		if g.Values[6].Kind != serialization.KindDouble || g.Values[6].Double != 0.5 {
			t.Errorf("the Double arg changed: %+v", g.Values[6])
		}
	}
	if err := Rewrite(serialization.NewBuilder(), src, serialization.Int32); err == nil {
		t.Error("staging int32 accepted")
	}
	dst := serialization.NewBuilder()
	dst.Int(1)
	if err := Rewrite(dst, src, f); err == nil {
		t.Error("a non-empty destination accepted")
	}
}
