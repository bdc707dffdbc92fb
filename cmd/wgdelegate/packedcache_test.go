package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

// TestPackedCacheWarnings: one line per kind of problem, saying what was
// done instead, for each combination the cache reports.
func TestPackedCacheWarnings(t *testing.T) {
	const dir, file = "/c", "/c/" + wgdelegate.PackedCacheFile
	perm := &fs.PathError{Op: "open", Path: file + ".lock", Err: syscall.EACCES}
	ce := func(op wgdelegate.PackedCacheOp, err error) *wgdelegate.PackedCacheError {
		return &wgdelegate.PackedCacheError{Path: file, Op: op, Err: err}
	}
	corruptFile := ce(wgdelegate.PackedCacheOpen, fmt.Errorf("offset 9: bad magic: %w", wgdelegate.ErrPackedCacheCorrupt))
	verify := ce(wgdelegate.PackedCacheVerify, fmt.Errorf("%w: region", wgdelegate.ErrPackedCacheCorrupt))
	missed := wgdelegate.PackedCacheStats{Misses: 3}
	for _, tc := range []struct {
		name string
		errs []*wgdelegate.PackedCacheError
		st   wgdelegate.PackedCacheStats
		want []string
	}{
		{"none", nil, missed, nil},
		{"corrupt file, rewritten", []*wgdelegate.PackedCacheError{corruptFile}, missed,
			[]string{"packed cache /c: packed-weights.wgdc is corrupt (offset 9: bad magic: corrupt); ignored it, packed the weights again and rewrote the file"}},
		{"corrupt file, nothing to pack", []*wgdelegate.PackedCacheError{corruptFile}, wgdelegate.PackedCacheStats{},
			[]string{"packed cache /c: packed-weights.wgdc is corrupt (offset 9: bad magic: corrupt); ignored it"}},
		{"corrupt file, cannot write", []*wgdelegate.PackedCacheError{corruptFile, ce(wgdelegate.PackedCacheSave, perm)}, missed,
			[]string{"packed cache /c: packed-weights.wgdc is corrupt (offset 9: bad magic: corrupt); ignored it and packed the weights again",
				"packed cache /c: cannot write (permission denied); the weights were packed in memory and not kept"}},
		{"cannot write", []*wgdelegate.PackedCacheError{ce(wgdelegate.PackedCacheSave, perm), ce(wgdelegate.PackedCacheSave, perm)}, missed,
			[]string{"packed cache /c: cannot write (permission denied); the weights were packed in memory and not kept"}},
		{"cannot read or write", []*wgdelegate.PackedCacheError{ce(wgdelegate.PackedCacheOpen, perm), ce(wgdelegate.PackedCacheSave, perm)}, missed,
			[]string{"packed cache /c: cannot read or write (permission denied); the weights were packed in memory and not kept"}},
		{"cannot read, rewritten", []*wgdelegate.PackedCacheError{ce(wgdelegate.PackedCacheOpen, errors.New("is a directory"))}, missed,
			[]string{"packed cache /c: cannot read (is a directory); the weights were packed again and the file rewritten"}},
		{"one corrupt entry", []*wgdelegate.PackedCacheError{verify}, wgdelegate.PackedCacheStats{Misses: 1, Corrupt: 1},
			[]string{"packed cache /c: 1 packed weight failed the checksum; packed it again and rewrote it"}},
		{"corrupt entries, cannot write", []*wgdelegate.PackedCacheError{verify, verify, verify, ce(wgdelegate.PackedCacheSave, perm)}, wgdelegate.PackedCacheStats{Misses: 3, Corrupt: 3},
			[]string{"packed cache /c: 3 packed weights failed the checksum; packed them again",
				"packed cache /c: cannot write (permission denied); the weights were packed in memory and not kept"}},
		{"entry unreadable", []*wgdelegate.PackedCacheError{ce(wgdelegate.PackedCacheRead, errors.New("short read"))}, missed,
			[]string{"packed cache /c: cannot read an entry (short read); packed it again"}},
		{"put dropped", []*wgdelegate.PackedCacheError{ce(wgdelegate.PackedCachePut, errors.New("too many entries"))}, missed,
			[]string{"packed cache /c: too many entries; some packed weights were not kept"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := packedCacheWarnings(dir, tc.errs, tc.st); !slices.Equal(got, tc.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// cnnModel writes the CNN (whose convolution weights go through the
// packed-weight cache) to dir.
func cnnModel(t *testing.T, dir string) string {
	t.Helper()
	f, err := models.Encode(models.NewCNN(models.DefaultCNN).B, false)
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, "cnn.pte", f.PTE)
}

// benchCache runs bench with --packed-cache cache and returns its packed
// cache counters and stderr; the exit status must be 0.
func benchCache(t *testing.T, model, cache string, extra ...string) (packedCStats, string) {
	t.Helper()
	args := append([]string{"bench", "--json", "--iterations", "1", "--packed-cache", cache}, extra...)
	code, stdout, stderr := invoke(t, append(args, model)...)
	if code != 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stdout)
	}
	return r.PackedCache, stderr
}

// warningLines checks that stderr is exactly the given warning lines.
func warningLines(t *testing.T, stderr string, want ...string) {
	t.Helper()
	var lines []string
	for _, w := range want {
		lines = append(lines, "wgdelegate: warning: "+w+"\n")
	}
	if stderr != strings.Join(lines, "") {
		t.Errorf("stderr\n%q\nwant\n%q", stderr, strings.Join(lines, ""))
	}
}

// copyCacheDir copies the cache file from one directory to a new one,
// with the byte at flip (when >= 0) changed. The cache file is read once
// per process and path, so a copy is what another process would see.
func copyCacheDir(t *testing.T, from, to string, flip int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(from, wgdelegate.PackedCacheFile))
	if err != nil {
		t.Fatal(err)
	}
	if flip >= 0 {
		b[flip] ^= 0x40
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, to, wgdelegate.PackedCacheFile, b)
}

// TestBenchPackedCacheProblems: bench with a packed-weight cache that is
// fine (no stderr), a regular file, a corrupt file, or has a corrupt
// region: exit 0, one warning line without --verbose saying what was done,
// and after a rewrite the next process hits every weight quietly.
func TestBenchPackedCacheProblems(t *testing.T) {
	dir := t.TempDir()
	model := cnnModel(t, dir)

	good := filepath.Join(dir, "good")
	st, stderr := benchCache(t, model, good)
	warningLines(t, stderr)
	n := st.Misses
	if n < 2 || st.Hits != 0 {
		t.Fatalf("cold: %+v", st)
	}
	st, stderr = benchCache(t, model, good)
	warningLines(t, stderr)
	if st.Hits != n || st.Misses != 0 {
		t.Errorf("warm: %+v", st)
	}

	t.Run("regular file", func(t *testing.T) {
		file := write(t, t.TempDir(), "not-a-dir", []byte("x"))
		st, stderr := benchCache(t, model, file)
		warningLines(t, stderr, "packed cache "+file+": cannot write (not a directory); the weights were packed in memory and not kept")
		if st.Misses != n {
			t.Errorf("%+v", st)
		}
	})

	t.Run("corrupt file", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad")
		os.Mkdir(bad, 0o755)
		write(t, bad, wgdelegate.PackedCacheFile, bytes.Repeat([]byte("garbage!"), 40))
		st, stderr := benchCache(t, model, bad)
		if !strings.HasPrefix(stderr, "wgdelegate: warning: packed cache "+bad+": packed-weights.wgdc is corrupt (offset ") || strings.Count(stderr, "\n") != 1 ||
			!strings.HasSuffix(stderr, "); ignored it, packed the weights again and rewrote the file\n") {
			t.Errorf("stderr %q", stderr)
		}
		if st.Misses != n {
			t.Errorf("%+v", st)
		}
		next := filepath.Join(t.TempDir(), "next")
		copyCacheDir(t, bad, next, -1)
		st, stderr = benchCache(t, model, next)
		warningLines(t, stderr)
		if st.Hits != n {
			t.Errorf("after the rewrite: %+v", st)
		}
	})

	t.Run("corrupt region", func(t *testing.T) {
		flipped := filepath.Join(t.TempDir(), "flipped")
		copyCacheDir(t, good, flipped, 3) // regions start the file
		st, stderr := benchCache(t, model, flipped)
		warningLines(t, stderr, "packed cache "+flipped+": 1 packed weight failed the checksum; packed it again and rewrote it")
		if st.Hits != n-1 || st.Misses != 1 || st.Corrupt != 1 {
			t.Errorf("%+v", st)
		}
		next := filepath.Join(t.TempDir(), "next")
		copyCacheDir(t, flipped, next, -1)
		st, stderr = benchCache(t, model, next)
		warningLines(t, stderr)
		if st.Hits != n || st.Corrupt != 0 {
			t.Errorf("after the rewrite: %+v", st)
		}
	})

	t.Run("verbose", func(t *testing.T) {
		file := write(t, t.TempDir(), "not-a-dir", []byte("x"))
		_, stderr := benchCache(t, model, file, "-v")
		if strings.Count(stderr, "wgdelegate: warning: packed cache "+file+": cannot write") != 1 ||
			!strings.Contains(stderr, "prepack: cache not saved") {
			t.Errorf("-v: want the warning line and the detailed log:\n%s", stderr)
		}
	})
}

// TestBenchPackedCacheReadOnly: a cache directory that cannot be written:
// an empty one warns that the weights were not kept; one holding a valid
// file serves every weight without a word (nothing needed writing); one
// holding a corrupt file says both; one whose file cannot be read either
// says so in one line. Root reads and writes anyway, so as root the test
// reruns itself as nobody, or is skipped when it cannot.
func TestBenchPackedCacheReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		if os.Getenv("WGD_CMD_AS_NOBODY") != "" || !rerunAsNobody(t, "TestBenchPackedCacheReadOnly") {
			t.Skip("running as root, where a read-only directory is still written, and cannot switch to an unprivileged user")
		}
		return
	}
	dir := t.TempDir()
	model := cnnModel(t, dir)
	filled := filepath.Join(dir, "filled")
	st, stderr := benchCache(t, model, filled)
	warningLines(t, stderr)
	n := st.Misses

	for _, tc := range []struct {
		name  string
		setup func(ro string)
		want  func(ro string) []string
		hits  int64
	}{
		{"empty", func(string) {}, func(ro string) []string {
			return []string{"packed cache " + ro + ": cannot write (permission denied); the weights were packed in memory and not kept"}
		}, 0},
		{"valid file", func(ro string) { copyCacheDir(t, filled, ro, -1) }, func(string) []string { return nil }, n},
		{"corrupt file", func(ro string) { write(t, ro, wgdelegate.PackedCacheFile, bytes.Repeat([]byte("x"), 500)) }, func(ro string) []string {
			return []string{"packed cache " + ro + ": packed-weights.wgdc is corrupt (offset 492: bad magic \"xxxxxxxx\"); ignored it and packed the weights again",
				"packed cache " + ro + ": cannot write (permission denied); the weights were packed in memory and not kept"}
		}, 0},
		{"unreadable file", func(ro string) {
			copyCacheDir(t, filled, ro, -1)
			os.Chmod(filepath.Join(ro, wgdelegate.PackedCacheFile), 0)
		}, func(ro string) []string {
			return []string{"packed cache " + ro + ": cannot read or write (permission denied); the weights were packed in memory and not kept"}
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := filepath.Join(t.TempDir(), "ro")
			if err := os.Mkdir(ro, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(ro)
			if err := os.Chmod(ro, 0o555); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(ro, 0o755)
			st, stderr := benchCache(t, model, ro)
			warningLines(t, stderr, tc.want(ro)...)
			if st.Hits != tc.hits || st.Hits+st.Misses != n {
				t.Errorf("%+v, want %d hits of %d", st, tc.hits, n)
			}
		})
	}
}

// rerunAsNobody reruns the named test of this binary in a child process as
// uid/gid 65534 and reports whether it could; the child's failure fails t.
func rerunAsNobody(t *testing.T, name string) bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	dir, err := os.MkdirTemp("", "wgdelegate-nobody")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	bin, tmp := filepath.Join(dir, "wgdelegate.test"), filepath.Join(dir, "tmp")
	src, err := os.ReadFile(exe)
	if err != nil || os.WriteFile(bin, src, 0o755) != nil || os.Mkdir(tmp, 0o777) != nil ||
		os.Chmod(dir, 0o755) != nil || os.Chmod(tmp, 0o777) != nil {
		return false
	}
	cmd := exec.Command(bin, "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "HOME="+tmp, "XDG_RUNTIME_DIR="+tmp, "XDG_CACHE_HOME="+tmp, "WGD_CMD_AS_NOBODY=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil && errors.Is(err, syscall.EPERM) {
		return false
	}
	t.Logf("as uid 65534:\n%s", out)
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+name)) {
		t.Errorf("%s as uid 65534: %v", name, err)
	}
	return true
}
