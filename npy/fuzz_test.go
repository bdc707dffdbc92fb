package npy

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead checks that no input makes the reader panic or allocate from an
// unchecked length, and that whatever it accepts survives a write and a
// second read unchanged.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.npy"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(npyFile(dict("'<i8'", "False", "()"), make([]byte, 8)))
	f.Add(npyFile("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", make([]byte, 4)))
	f.Add([]byte(Magic + "\x03\x00\x08\x00\x00\x00{}      "))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data)
		streamed, serr := Read(bytes.NewReader(data))
		if err != nil {
			// Read may accept what Decode refuses: it stops at the array's
			// end, where Decode also rejects trailing bytes.
			return
		}
		if serr != nil || !sameTensor(got, streamed) {
			t.Fatalf("Decode accepted what Read did not: %v", serr)
		}
		enc, err := Encode(got)
		if err != nil {
			t.Fatalf("Encode of a decoded tensor: %v", err)
		}
		again, err := Decode(enc)
		if err != nil || !sameTensor(again, got) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
