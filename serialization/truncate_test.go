package serialization

import (
	"errors"
	"testing"
)

// TestTruncateEveryByte: a blob, a .pte and a .ptd cut at any byte (every
// header field included) are rejected with a *FormatError, never decoded
// into something, never a panic.
func TestTruncateEveryByte(t *testing.T) {
	blob, _ := validBlob(t)
	for _, c := range []struct {
		name   string
		data   []byte
		decode func([]byte) error
	}{
		{"VH00 blob", blob, func(b []byte) error { _, err := DecodeBlob(b); return err }},
		{"VH00 header", blob[:64], func(b []byte) error { _, err := ParseHeader(b); return err }},
		{".pte", validPTE(t), func(b []byte) error { _, err := ParseProgram(b); return err }},
		{".ptd", validPTD(t), func(b []byte) error { _, err := ParseFlatTensor(b); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.decode(c.data); err != nil && c.name != "VH00 header" {
				t.Fatalf("the whole input fails: %v", err)
			}
			for n := 0; n < len(c.data); n++ {
				if c.name == "VH00 header" && n >= 30 {
					break // the header is 30 bytes; past that it parses
				}
				err := c.decode(c.data[:n])
				var fe *FormatError
				if err == nil || !errors.As(err, &fe) {
					t.Fatalf("cut at %d of %d bytes: got %v, want a *FormatError", n, len(c.data), err)
				}
			}
		})
	}
}
