package ops

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestFusedMaxSegs checks how many linears one fused GEMV dispatch binds
// under the device's storage-buffer limit: the input, the norm's weight
// and per linear a weight and an output (and q4's scales) must fit, and
// the kernel's params hold 3 at most.
func TestFusedMaxSegs(t *testing.T) {
	for _, tc := range []struct {
		limit   uint32
		f32, q4 int
	}{
		{0, 3, 2}, // unknown: WebGPU's default 8
		{4, 3, 2}, // below the default: the default (the device has it)
		{8, 3, 2},
		{10, 3, 2},
		{11, 3, 3},
		{1 << 20, 3, 3},
	} {
		b := &profiled{p: DeviceProfile{MaxStorageBuffers: tc.limit}}
		if got := fusedMaxSegs(b, "f32v"); got != tc.f32 {
			t.Errorf("limit %d: %d float linears, want %d", tc.limit, got, tc.f32)
		}
		if got := fusedMaxSegs(b, "half"); got != tc.f32 {
			t.Errorf("limit %d: %d half linears, want %d", tc.limit, got, tc.f32)
		}
		if got := fusedMaxSegs(b, "q4"); got != tc.q4 {
			t.Errorf("limit %d: %d q4 linears, want %d", tc.limit, got, tc.q4)
		}
	}
}

// TestFusedGEMVParamsLayout checks the Go twin of gemv_fused.wgsl's Params:
// 96 bytes, each field at its WGSL offset.
func TestFusedGEMVParamsLayout(t *testing.T) {
	p := fusedGEMVParams{K: 1, Len: 2, Eps: 0.5, N: [4]uint32{3, 4, 5, 6}, Blk: [4]uint32{7, 8, 9, 10}, NBlk: 11,
		Gw: [4]uint32{12, 13, 14, 15}, LdS: [4]uint32{16, 17, 18, 19}}
	raw := p.bytes()
	if len(raw) != 96 {
		t.Fatalf("%d bytes, want 96", len(raw))
	}
	u := func(off int) uint32 { return binary.LittleEndian.Uint32(raw[off:]) }
	for _, f := range []struct {
		name string
		off  int
		want uint32
	}{
		{"k", 0, 1}, {"len", 4, 2}, {"n[0]", 16, 3}, {"n[3]", 28, 6}, {"blk[0]", 32, 7}, {"blk[3]", 44, 10},
		{"nblk", 48, 11}, {"gw[0]", 64, 12}, {"gw[3]", 76, 15}, {"lds[0]", 80, 16}, {"lds[3]", 92, 19},
	} {
		if got := u(f.off); got != f.want {
			t.Errorf("%s at %d: %d, want %d", f.name, f.off, got, f.want)
		}
	}
	if !bytes.Equal(raw[8:12], []byte{0, 0, 0, 0x3f}) {
		t.Errorf("eps bytes %x, want 0.5", raw[8:12])
	}
}
