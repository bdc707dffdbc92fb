package shaders

import (
	"fmt"
	"slices"
	"testing"
)

// TestBinding pins the numeric values and names of the binding kinds: the
// values go into every pipeline's content key (and so into packed-weight
// cache seeds), the names into kernel cache keys.
func TestBinding(t *testing.T) {
	for i, tc := range []struct {
		b    Binding
		val  uint8
		name string
	}{
		{ReadOnly, 0, "ro"},
		{ReadWrite, 1, "rw"},
		{Uniform, 2, "u"},
		{Binding(3), 3, "?"},
	} {
		if uint8(tc.b) != tc.val || tc.b.String() != tc.name {
			t.Errorf("%d: binding %d %q, want %d %q", i, uint8(tc.b), tc.b, tc.val, tc.name)
		}
	}
}

// TestLayout checks the standard layout: inputs, outputs, then params.
func TestLayout(t *testing.T) {
	for i, tc := range []struct {
		nIn, nOut int
		params    bool
		want      []Binding
	}{
		{0, 0, false, []Binding{}},
		{0, 1, true, []Binding{ReadWrite, Uniform}},
		{2, 1, true, []Binding{ReadOnly, ReadOnly, ReadWrite, Uniform}},
		{1, 2, false, []Binding{ReadOnly, ReadWrite, ReadWrite}},
	} {
		if got := Layout(tc.nIn, tc.nOut, tc.params); !slices.Equal(got, tc.want) {
			t.Errorf("%d: Layout(%d, %d, %v) = %v, want %v", i, tc.nIn, tc.nOut, tc.params, got, tc.want)
		}
	}
}

// TestRenderLayout checks that a rendered kernel keeps its own copy of the
// layout and that the layout is part of the kernel cache key.
func TestRenderLayout(t *testing.T) {
	layout := Layout(1, 1, true)
	k, err := Render("copy.wgsl", struct{ WG int }{64}, "main", layout, 64)
	if err != nil {
		t.Fatal(err)
	}
	layout[0] = Uniform
	if want := []Binding{ReadOnly, ReadWrite, Uniform}; !slices.Equal(k.Layout, want) {
		t.Errorf("kernel layout %v after the caller's slice changed, want %v", k.Layout, want)
	}
	k2, err := Render("copy.wgsl", struct{ WG int }{64}, "main", Layout(1, 2, true), 64)
	if err != nil {
		t.Fatal(err)
	}
	if k2 == k || fmt.Sprint(k2.Layout) == fmt.Sprint(k.Layout) {
		t.Errorf("two layouts rendered as one kernel: %v and %v", k.Layout, k2.Layout)
	}
}
