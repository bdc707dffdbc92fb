package gpu

import (
	"strings"
	"testing"
)

// TestSubnormalsFrom reads the probe's results: exact ones, flushed
// results, flushed operands, both, and results a probe cannot give.
func TestSubnormalsFrom(t *testing.T) {
	const (
		p0, p1, p2, p3 = 0x00400000, 0x00400000, 0x30800000, 0x00800000
		negz           = 0x80000000
	)
	for _, c := range []struct {
		got     [4]uint32
		want    Subnormals
		wantErr bool
		str     string
	}{
		{got: [4]uint32{p0, p1, p2, p3}, want: Subnormals{}, str: "kept"},
		{got: [4]uint32{0, 0, p2, p3}, want: Subnormals{FlushResults: true}, str: "flushed (results)"},
		{got: [4]uint32{0, p1, 0, negz}, want: Subnormals{FlushInputs: true}, str: "flushed (operands)"},
		{got: [4]uint32{0, p1, p2, 0}, want: Subnormals{FlushInputs: true}, str: "flushed (operands)"},
		{got: [4]uint32{negz, 0, 0, 0}, want: Subnormals{FlushInputs: true, FlushResults: true}, str: "flushed (operands and results)"},
		{got: [4]uint32{p0, p1, 0x30000001, p3}, wantErr: true}, // neither exact nor zero
		{got: [4]uint32{p0, 0, p2, p3}, wantErr: true},          // a flushed result, yet out[0] exact
		{got: [4]uint32{0, p1, p2, p3}, wantErr: true},          // out[0] flushed, nothing else
		{got: [4]uint32{0x7fc00000, p1, p2, p3}, wantErr: true}, // NaN
		{got: [4]uint32{p0 | negz, p1, p2, p3}, wantErr: true},  // a sign flip is not a flush
	} {
		s, err := subnormalsFrom(c.got)
		if (err != nil) != c.wantErr {
			t.Errorf("%#08x: err %v, want error %v", c.got, err, c.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if s != c.want || s.String() != c.str || s.Flushes() != (c.str != "kept") {
			t.Errorf("%#08x: %+v %q, want %+v %q", c.got, s, s, c.want, c.str)
		}
	}
}

// TestSubnormalsProbed: Open probed the adapter. lavapipe's float32
// arithmetic keeps subnormals (LLVM on x86 without FTZ/DAZ), which the
// conformance suite's exact comparisons on this adapter rely on.
func TestSubnormalsProbed(t *testing.T) {
	info := testDev.Info()
	t.Logf("%s: subnormals %v", info.Name+" "+info.Driver, info.Subnormals)
	if strings.Contains(strings.ToLower(info.Driver+info.Name), "llvmpipe") && info.Subnormals.Flushes() {
		t.Errorf("llvmpipe probed as %v, want kept", info.Subnormals)
	}
}
