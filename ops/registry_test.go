package ops

import (
	"slices"
	"testing"
)

func TestRegisterOpRejects(t *testing.T) {
	t.Parallel()
	run := func(Builder, []int32) error { return nil }
	for _, c := range []struct {
		name string
		op   Op
	}{
		{"duplicate", Op{Name: "aten.relu.default", Run: run}},
		{"nil run", Op{Name: "test.nil_run"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterOp(%+v) did not panic", c.op)
				}
			}()
			RegisterOp(c.op)
		})
	}
}

// TestRegistrationRecords checks that the argument metadata comes from
// each op's one registration record.
func TestRegistrationRecords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name              string
		packed, hostReads []int
	}{
		{"aten.convolution.default", []int{1}, nil},
		{"et_vk.conv_with_clamp.default", []int{1}, nil},
		{"et_vk.select_as_symint.default", nil, []int{0}},
		{"aten.relu.default", nil, nil},
	} {
		if got := PackedArgs(c.name); !slices.Equal(got, c.packed) {
			t.Errorf("%s: packed args %v, want %v", c.name, got, c.packed)
		}
		if got := HostReads(c.name); !slices.Equal(got, c.hostReads) {
			t.Errorf("%s: host reads %v, want %v", c.name, got, c.hostReads)
		}
	}
}
