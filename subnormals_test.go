package wgdelegate_test

import (
	"strings"
	"testing"
)

// TestDeviceSubnormals: the device reports what Open's probe found. On
// lavapipe (this suite's adapter) float32 arithmetic keeps subnormals,
// which the conformance suite's exact comparisons rely on; any adapter's
// answer is one of the four descriptions.
func TestDeviceSubnormals(t *testing.T) {
	d := device(t)
	s := d.Subnormals()
	switch s {
	case "kept", "flushed (operands)", "flushed (results)", "flushed (operands and results)":
	default:
		t.Fatalf("Subnormals() = %q", s)
	}
	if d.FlushesSubnormals() != (s != "kept") {
		t.Errorf("FlushesSubnormals() = %v with Subnormals() = %q", d.FlushesSubnormals(), s)
	}
	if strings.Contains(d.AdapterName(), "llvmpipe") && s != "kept" {
		t.Errorf("llvmpipe: subnormals %q, want kept", s)
	}
}
