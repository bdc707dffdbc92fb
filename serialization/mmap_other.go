//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris || illumos)

package serialization

import (
	"io"
	"os"
)

// mapFile reads the file into memory on platforms where this package does
// not use mmap (windows, plan9, wasm, ...).
func mapFile(f *os.File, size int) ([]byte, bool, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, false, err
	}
	return data, false, nil
}

func unmapFile([]byte) error { return nil }
