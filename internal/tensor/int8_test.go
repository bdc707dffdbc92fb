package tensor

import (
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestInt8 checks FromInt8 and Int8s: two's-complement bytes, shared both
// ways, and a dtype error for other tensors.
func TestInt8(t *testing.T) {
	vals := []int8{-128, -1, 0, 1, 127}
	x := FromInt8([]int64{5}, vals)
	if x.DType != serialization.Int8 || !slices.Equal(x.Data, []byte{0x80, 0xff, 0, 1, 0x7f}) {
		t.Fatalf("FromInt8 gave %v %x", x.DType, x.Data)
	}
	got, err := x.Int8s()
	if err != nil || !slices.Equal(got, vals) {
		t.Fatalf("Int8s = %v, %v", got, err)
	}
	got[2] = 9
	if vals[2] != 9 || x.Data[2] != 9 {
		t.Error("Int8s does not share the data")
	}
	if _, err := FromUint8([]int64{1}, []uint8{1}).Int8s(); err == nil {
		t.Error("Int8s of a uint8 tensor: no error")
	}
	if e, err := FromInt8(nil, nil).Int8s(); err != nil || len(e) != 0 {
		t.Errorf("empty: %v, %v", e, err)
	}
}
