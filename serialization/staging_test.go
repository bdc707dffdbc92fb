package serialization

import "testing"

// TestSetStaging: a tensor's staging_datatype defaults to its own dtype,
// SetStaging changes it (a force_fp16 FLOAT16 tensor staged as FLOAT32),
// it survives encoding and decoding, and SetStaging on a non-tensor or an
// out-of-range id changes nothing.
func TestSetStaging(t *testing.T) {
	b := NewBuilder()
	x := b.Tensor(Float16, []uint32{2}, -1)
	y := b.Tensor(Float16, []uint32{2}, -1)
	c := b.InlineConst(Float16, []uint32{2}, []byte{0, 0x3c, 0, 0xc0})
	n := b.Int(3)
	b.SetStaging(x, Float32)
	b.SetStaging(n, Float32)
	b.SetStaging(99, Float32)
	b.SetStaging(-1, Float32)
	b.Op("aten.add.Tensor", x, c, b.Int(1), y)
	b.Inputs(x)
	b.Outputs(y)
	raw, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := DecodeBlob(raw)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int32]DataType{x: Float32, y: Float16, c: Float16} {
		tt := blob.Graph.Values[id].Tensor
		if tt.DataType != Float16 || tt.StagingDataType != want {
			t.Errorf("value %d: datatype %v staging %v, want float16 staged as %v", id, tt.DataType, tt.StagingDataType, want)
		}
	}
	if v := blob.Graph.Values[n]; v.Kind != KindInt || v.Int != 3 {
		t.Errorf("the Int value changed: %+v", v)
	}
}
