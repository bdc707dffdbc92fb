package serialization

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// realDir holds real ExecuTorch exports shared by the project (see its
// README.md); tests that need them skip when it is absent.
const realDir = "../../shared/testdata/executorch"

func readReal(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realDir, name))
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("%s not present", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parseReal parses the real program name (skipping the test where it is
// absent) and returns it with the file's bytes.
func parseReal(t testing.TB, name string) (*Program, []byte) {
	t.Helper()
	data := readReal(t, name)
	p, err := ParseProgram(data)
	if err != nil {
		t.Fatal(err)
	}
	return p, data
}

// blobRoundTrip encodes b's graph as a VH00 blob and decodes it again,
// returning the decoded blob and the bytes it views.
func blobRoundTrip(t testing.TB, b *Builder) (*Blob, []byte) {
	t.Helper()
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeBlob(blob)
	if err != nil {
		t.Fatal(err)
	}
	return got, blob
}

// assertFormatErr checks that err is a *FormatError wrapping want.
func assertFormatErr(t testing.TB, err, want error) *FormatError {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want %v", want)
	}
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %q (%T) is not a *FormatError", err, err)
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %q does not wrap %v", err, want)
	}
	return fe
}

// normGraph makes nil and empty slices compare equal: the decoder returns
// empty slices for present vectors, the builder keeps what it was given.
func normGraph(g *Graph) *Graph {
	c := *g
	c.Chain = normSlice(c.Chain)
	c.Values = normSlice(c.Values)
	c.InputIDs = normSlice(c.InputIDs)
	c.OutputIDs = normSlice(c.OutputIDs)
	c.Constants = normSlice(c.Constants)
	c.Shaders = normSlice(c.Shaders)
	for i := range c.Chain {
		c.Chain[i].Args = normSlice(c.Chain[i].Args)
	}
	for i := range c.Values {
		v := &c.Values[i]
		v.Ints, v.Doubles, v.Bools, v.IDs = normSlice(v.Ints), normSlice(v.Doubles), normSlice(v.Bools), normSlice(v.IDs)
		if v.Tensor != nil {
			t := *v.Tensor
			t.Dims = normSlice(t.Dims)
			v.Tensor = &t
		}
	}
	return &c
}

func normSlice[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return append([]T(nil), s...)
}

func assertGraphEqual(t testing.TB, got, want *Graph) {
	t.Helper()
	g, w := normGraph(got), normGraph(want)
	if reflect.DeepEqual(g, w) {
		return
	}
	if len(g.Values) != len(w.Values) {
		t.Fatalf("got %d values, want %d", len(g.Values), len(w.Values))
	}
	for i := range g.Values {
		if !reflect.DeepEqual(g.Values[i], w.Values[i]) {
			gt, wt := g.Values[i].Tensor, w.Values[i].Tensor
			if gt != nil && wt != nil {
				t.Errorf("value %d tensor: got %+v, want %+v", i, *gt, *wt)
			}
			t.Errorf("value %d: got %+v, want %+v", i, g.Values[i], w.Values[i])
		}
	}
	g.Values, w.Values = nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Errorf("graph: got %+v, want %+v", g, w)
	}
	t.FailNow()
}
