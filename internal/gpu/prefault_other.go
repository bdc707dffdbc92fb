//go:build !linux

package gpu

import (
	"syscall"
	"unsafe"
)

// prefaultSupported: no prefaulting outside Linux.
const prefaultSupported = false

// populateWrite is not available outside Linux.
func populateWrite(p unsafe.Pointer, size uint64) error { return syscall.EINVAL }

// adviseHugePages does nothing outside Linux.
func adviseHugePages(p unsafe.Pointer, size uint64) {}
