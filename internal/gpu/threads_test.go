package gpu

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCPUThreadsOutOfRange(t *testing.T) {
	for _, n := range []int{-2, -100, MaxCPUThreads + 1} {
		d, err := Open(context.Background(), Options{CPUThreads: n})
		if err == nil {
			d.Close()
			t.Fatalf("CPUThreads %d: Open succeeded", n)
		}
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Field != "CPUThreads" || oe.Value != n {
			t.Fatalf("CPUThreads %d: got %v (%T), want an *OptionError for CPUThreads", n, err, err)
		}
	}
}

// tinyDispatchCost is the fastest wall time per dispatch of rounds runs
// of n one-workgroup dispatches in one pass (other processes only add
// time), checking the result of each run.
func tinyDispatchCost(t testing.TB, d *Device, n, rounds int) time.Duration {
	t.Helper()
	r := newIncRig(t, d, 256, true)
	defer r.release()
	p, buf, st, bg := r.p, r.buf, r.st, r.bg
	ds := make([]Dispatch, n)
	for i := range ds {
		ds[i] = Dispatch{Pipeline: p, Group: bg, X: 1, Y: 1, Z: 1}
	}
	prog := d.Prepare(ds, []Readback{{Src: buf, Dst: st, Size: 4}})
	var times []time.Duration
	for r := 0; r <= rounds; r++ { // round 0 warms up
		start := time.Now()
		if err := prog.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if r > 0 {
			times = append(times, time.Since(start)/time.Duration(n))
		}
		m, err := st.Mapped()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := uint32(m[0])|uint32(m[1])<<8|uint32(m[2])<<16|uint32(m[3])<<24, uint32(n*(r+1)); got != want {
			t.Fatalf("after %d runs of %d dispatches: %d, want %d", r+1, n, got, want)
		}
		st.Unmap()
	}
	return slices.Min(times)
}

func openThreads(t *testing.T, n int) *Device {
	t.Helper()
	d, err := Open(context.Background(), Options{CPUThreads: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestCPUThreadsInProcess opens an inline device and a default one side by
// side in one process: each keeps its own setting, the inline one runs
// tiny dispatches several times cheaper, and the environment is restored.
func TestCPUThreadsInProcess(t *testing.T) {
	if !testDev.isLLVMpipe() {
		t.Skip("not an llvmpipe adapter")
	}
	t.Setenv(lpNumThreads, "") // set, so that Cleanup restores the caller's value
	os.Unsetenv(lpNumThreads)
	// Opened concurrently: adapterEnvMu keeps each setting to its own
	// adapter enumeration.
	devs := make([]*Device, 3)
	var wg sync.WaitGroup
	for i, n := range []int{CPUThreadsInline, 0, 2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Open(context.Background(), Options{CPUThreads: n})
			if err != nil {
				t.Error(err)
				return
			}
			devs[i] = d
		}()
	}
	wg.Wait()
	for _, d := range devs {
		if d != nil {
			t.Cleanup(func() { d.Close() })
		}
	}
	if t.Failed() {
		return
	}
	inline, def, two := devs[0], devs[1], devs[2]
	if _, ok := os.LookupEnv(lpNumThreads); ok {
		t.Fatalf("Open left %s set", lpNumThreads)
	}
	for d, want := range map[*Device]int{inline: CPUThreadsInline, def: 0, two: 2} {
		if got := d.Info().CPUThreads; got != want {
			t.Errorf("Info().CPUThreads = %d, want %d", got, want)
		}
	}
	var ci, cd []time.Duration
	for i := 0; i < 3; i++ { // interleaved: the host is noisy
		ci = append(ci, tinyDispatchCost(t, inline, 200, 3))
		cd = append(cd, tinyDispatchCost(t, def, 200, 3))
	}
	slices.Sort(ci)
	slices.Sort(cd)
	// A timing, not an assertion: on a loaded CI host the ratio is noise.
	// Inline ran several times cheaper on a quiet 2-core machine.
	t.Logf("µs per tiny dispatch: inline %v, default %v", ci, cd)
}

// TestCPUThreadsEnvironment checks that CPUThreads 0 leaves the user's
// LP_NUM_THREADS in force and that a non-zero setting does not change it.
// What llvmpipe applied is read off its worker threads (named
// "llvmpipe-N", /proc/self/task), not off a timing: the device opened
// under LP_NUM_THREADS=0 starts none, the one with CPUThreads 3 starts 3.
// (The dispatch cost of each is logged: inline ran about twice as cheap,
// and less beside other CPU-bound work, which made a timing flaky.)
func TestCPUThreadsEnvironment(t *testing.T) {
	if !testDev.isLLVMpipe() {
		t.Skip("not an llvmpipe adapter")
	}
	if _, err := os.ReadDir("/proc/self/task"); err != nil {
		t.Skip("no /proc/self/task to count llvmpipe's threads:", err)
	}
	t.Setenv(lpNumThreads, "0")
	before := llvmpipeThreads(t)
	user := openThreads(t, 0)
	if got := user.Info().CPUThreads; got != CPUThreadsInline {
		t.Errorf("with LP_NUM_THREADS=0, Info().CPUThreads = %d, want %d", got, CPUThreadsInline)
	}
	ci := tinyDispatchCost(t, user, 200, 3)
	if n := llvmpipeThreads(t) - before; n != 0 {
		t.Errorf("the user's LP_NUM_THREADS=0 was not applied: the device started %d llvmpipe threads", n)
	}
	before = llvmpipeThreads(t)
	three := openThreads(t, 3)
	if got := os.Getenv(lpNumThreads); got != "0" {
		t.Fatalf("after Open with CPUThreads 3, LP_NUM_THREADS = %q, want the caller's %q", got, "0")
	}
	if got := three.Info().CPUThreads; got != 3 {
		t.Errorf("Info().CPUThreads = %d, want 3", got)
	}
	c3 := tinyDispatchCost(t, three, 200, 3)
	if n := llvmpipeThreads(t) - before; n != 3 {
		t.Errorf("CPUThreads 3: the device started %d llvmpipe threads, want 3", n)
	}
	t.Logf("µs per tiny dispatch: LP_NUM_THREADS=0 %v, CPUThreads 3 %v", ci, c3)
}

// llvmpipeThreads counts this process's llvmpipe worker threads (named
// "llvmpipe-N").
func llvmpipeThreads(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		// A thread may end between the listing and the read.
		if comm, err := os.ReadFile("/proc/self/task/" + task.Name() + "/comm"); err == nil && strings.HasPrefix(string(comm), "llvmpipe-") {
			n++
		}
	}
	return n
}

func TestIsLLVMpipe(t *testing.T) {
	for _, c := range []struct {
		cpu          bool
		name, driver string
		want         bool
	}{
		{true, "llvmpipe (LLVM 15.0.6, 256 bits)", "Mesa 22.3.6 (LLVM 15.0.6)", true},
		{true, "0x0", "llvmpipe (LLVM 15.0.6, 256 bits)", true},
		{false, "llvmpipe", "", false},
		{true, "SwiftShader Device (Subzero)", "SwiftShader driver", false},
	} {
		if got := isLLVMpipe(c.cpu, c.name, c.driver); got != c.want {
			t.Errorf("isLLVMpipe(%v, %q, %q) = %v, want %v", c.cpu, c.name, c.driver, got, c.want)
		}
	}
}

func TestAppliedCPUThreads(t *testing.T) {
	for _, c := range []struct {
		llvmpipe              bool
		opt, threads, applied int
		ignored               bool
	}{
		{true, 0, CPUThreadsInline, CPUThreadsInline, false}, // from the environment
		{true, 3, 3, 3, false},
		{false, 0, 0, 0, false},
		{false, 0, 5, 0, false},
		{false, CPUThreadsInline, CPUThreadsInline, 0, true},
		{false, 4, 4, 0, true},
	} {
		applied, ignored := appliedCPUThreads(c.llvmpipe, c.opt, c.threads)
		if applied != c.applied || ignored != c.ignored {
			t.Errorf("appliedCPUThreads(%v, %d, %d) = %d, %v; want %d, %v", c.llvmpipe, c.opt, c.threads, applied, ignored, c.applied, c.ignored)
		}
	}
}

func TestEffectiveCPUThreads(t *testing.T) {
	for _, c := range []struct {
		opt  int
		env  string // "-" unsets
		want int
	}{
		{0, "-", 0}, {0, "0", CPUThreadsInline}, {0, "3", 3}, {0, " 4 ", 4}, {0, "x", 0}, {0, "-1", 0},
		{CPUThreadsInline, "3", CPUThreadsInline}, {2, "0", 2},
	} {
		t.Setenv(lpNumThreads, c.env)
		if c.env == "-" {
			os.Unsetenv(lpNumThreads)
		}
		if got := effectiveCPUThreads(c.opt); got != c.want {
			t.Errorf("effectiveCPUThreads(%d) with LP_NUM_THREADS %q = %d, want %d", c.opt, c.env, got, c.want)
		}
	}
}
