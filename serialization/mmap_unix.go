//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris || illumos

package serialization

import (
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only. MAP_SHARED with
// PROT_READ gives the page cache's pages directly, so nothing is copied.
func mapFile(f *os.File, size int) ([]byte, bool, error) {
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

func unmapFile(data []byte) error { return syscall.Munmap(data) }
