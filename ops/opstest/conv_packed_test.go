package opstest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
)

// convCases returns the conformance cases of forward and transposed
// convolutions.
func convCases() []Case {
	var cs []Case
	for _, c := range Cases {
		if strings.HasPrefix(c.Name, "conv/") {
			cs = append(cs, c)
		}
	}
	return cs
}

// packable reports whether conv case c (by its name) has a constant
// forward weight whose output channels per group are a multiple of 4: the
// weights ops packs.
func packable(t *testing.T, c Case) bool {
	parts := strings.Split(c.Name, "/")
	if len(parts) < 4 || strings.HasPrefix(parts[1], "conv_transpose") {
		return false
	}
	var oc, groups int
	fields := strings.Split(parts[2], "_")
	for _, f := range fields {
		switch {
		case strings.HasPrefix(f, "w"):
			if _, err := fmt.Sscanf(f, "w%d", &oc); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
		case strings.HasPrefix(f, "g"):
			if _, err := fmt.Sscanf(f, "g%d", &groups); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
		}
	}
	if oc == 0 || groups == 0 {
		t.Fatalf("%s: cannot read weight dims and groups", c.Name)
	}
	constant := !strings.HasPrefix(parts[3], "input")
	return constant && (oc/groups)%4 == 0
}

// TestConvPacking checks which convolution weights are packed: every
// constant forward weight with a multiple of 4 output channels per group
// (one miss, no cache); no transposed, depthwise or computed weight; and
// with packing off
// (ops.Config.NoConvPacking) nothing is packed and the unpacked kernel
// still matches the reference on every conv case. (The conformance suite
// checks the packed kernel's values.)
func TestConvPacking(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	cases := convCases()
	npacked := 0
	for _, c := range cases {
		g := buildMatmulCase(t, dev, c, ops.Config{})
		st := g.PackedCacheStats()
		g.Close()
		want := 0
		if packable(t, c) {
			want = 1
			npacked++
		}
		if st.Misses != want || st.Hits != 0 || (want == 1) != (st.Bytes > 0) {
			t.Errorf("%s: packed-weight stats %+v, want %d packed weights", c.Name, st, want)
		}
	}
	if npacked < 10 {
		t.Fatalf("only %d packable conv cases", npacked)
	}

	cfg := ops.Config{NoConvPacking: true}
	Run(t, GPU{Dev: dev, Kernels: cfg}, cases)
	for _, c := range cases {
		g := buildMatmulCase(t, dev, c, cfg)
		if st := g.PackedCacheStats(); st.Misses+st.Hits != 0 {
			t.Errorf("%s: packing off but %+v", c.Name, st)
		}
		g.Close()
	}
}
