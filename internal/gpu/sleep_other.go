//go:build !linux

package gpu

import "time"

// pollSleep sleeps about d between polls.
func pollSleep(d time.Duration) { time.Sleep(d) }
