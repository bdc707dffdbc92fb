//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package prepack

// lockSuffix names the lock file beside a cache file (unused here).
const lockSuffix = ".lock"

// lockPathErr does nothing on platforms without flock: concurrent Saves
// from several processes are not serialized there.
func lockPathErr(string, bool) (func(), error) { return func() {}, nil }

func lockPath(string, bool) func() { return func() {} }
