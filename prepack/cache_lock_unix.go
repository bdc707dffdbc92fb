//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package prepack

import (
	"errors"
	"os"
	"syscall"
)

// lockSuffix names the lock file beside a cache file. It is never removed:
// removing a lock file races with a process about to lock it.
const lockSuffix = ".lock"

// lockPathErr takes an flock on path, creating it if needed: exclusive
// for a writer, shared for a reader. It blocks until the lock is granted
// and returns the function that releases it.
func lockPathErr(path string, exclusive bool) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil && !exclusive {
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// lockPath is lockPathErr for readers that go on without a lock when
// there is none to take.
func lockPath(path string, exclusive bool) func() {
	unlock, err := lockPathErr(path, exclusive)
	if err != nil {
		return func() {}
	}
	return unlock
}
