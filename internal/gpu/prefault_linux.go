package gpu

import (
	"os"
	"syscall"
	"unsafe"
)

// prefaultSupported: the kernel calls below exist here.
const prefaultSupported = true

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14), which the syscall
// package does not name.
const madvPopulateWrite = 23

// pages is the whole pages of the size bytes at p, or nil.
func pages(p unsafe.Pointer, size uint64) []byte {
	pg := uint64(os.Getpagesize())
	addr := uint64(uintptr(p))
	start := (addr + pg - 1) &^ (pg - 1)
	end := (addr + size) &^ (pg - 1)
	if end <= start {
		return nil
	}
	return unsafe.Slice((*byte)(p), size)[start-addr : end-addr]
}

// populateWrite faults in, writable, the whole pages of the size bytes at
// p (MADV_POPULATE_WRITE) without changing their contents. It returns
// syscall.EINVAL on a kernel without it.
func populateWrite(p unsafe.Pointer, size uint64) error {
	if m := pages(p, size); m != nil {
		return syscall.Madvise(m, madvPopulateWrite)
	}
	return nil
}

// adviseHugePages asks the kernel to back the whole pages of the size bytes
// at p with transparent huge pages (MADV_HUGEPAGE). It is a hint: an error
// (a kernel without THP, memory that is not anonymous) changes nothing, so
// it is ignored.
func adviseHugePages(p unsafe.Pointer, size uint64) {
	if m := pages(p, size); m != nil {
		_ = syscall.Madvise(m, syscall.MADV_HUGEPAGE)
	}
}
