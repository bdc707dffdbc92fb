package gpu

import (
	"syscall"
	"time"
)

// pollSleep sleeps about d between polls. Go's time.Sleep is no finer than
// about 1 ms on some Linux VMs (measured: 5 µs took 0.9 ms), which would
// add a millisecond to every wait that outlives the spin; nanosleep wakes
// within about 70 µs there.
func pollSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
