package gpu

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// vmaFlags returns the VmFlags of the mapping holding addr, from
// /proc/self/smaps.
func vmaFlags(t *testing.T, addr uint64) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line + " ")[0], "-"); ok && !strings.HasSuffix(line, ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = l <= addr && addr < h
				continue
			}
		}
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}

// resident counts the resident pages among the whole pages of the size
// bytes at p (mincore).
func resident(t testing.TB, p unsafe.Pointer, size uint64) (n, of int) {
	t.Helper()
	m := pages(p, size)
	vec := make([]byte, len(m)/os.Getpagesize())
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, len(vec)
}

// cpuDevice opens a device with opts for a test that needs a CPU adapter.
func cpuDevice(t *testing.T, opts Options) *Device {
	t.Helper()
	if testDev.Info().AdapterType != "cpu" {
		t.Skip("prefaulting is for CPU adapters")
	}
	d, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestUploadPrefault: on a CPU adapter a large buffer from BeginUpload is
// not in memory yet (only the 8 bytes mapped to find it), PrepareUpload
// faults all of it in on another goroutine (no clear submitted), and
// FinishUpload then fills it; with NoPrefault nothing is prefaulted. A
// buffer released or a device closed while its prefault runs is fine.
// 40 MiB buffers are fresh memory: above glibc's largest mmap threshold
// and wgpu's dedicated-allocation size, so nothing released earlier is
// reused.
func TestUploadPrefault(t *testing.T) {
	const size = 40<<20 + 12
	for _, c := range []struct {
		name string
		opts Options
		want bool
	}{
		{"prefault", Options{}, true},
		{"no-prefault", Options{NoPrefault: true}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := cpuDevice(t, c.opts)
			b, err := d.BeginUpload(size, "prefault")
			if err != nil {
				t.Fatal(err)
			}
			defer b.Release()
			if (b.host != nil) != c.want {
				t.Fatalf("buffer address known = %v, want %v", b.host != nil, c.want)
			}
			if !c.want {
				return
			}
			if n, of := resident(t, b.host, b.size); n > 1 {
				t.Fatalf("%d of %d pages resident before PrepareUpload, want at most 1", n, of)
			}
			if err := d.PrepareUpload(b); err != nil {
				t.Fatal(err)
			}
			<-b.prep
			if d.noPopulate.Load() {
				t.Skip("kernel without MADV_POPULATE_WRITE")
			}
			if n, of := resident(t, b.host, b.size); n != of {
				t.Errorf("%d of %d pages resident after PrepareUpload, want all", n, of)
			}
			data := pattern(size, 3)
			if err := d.FinishUpload(b, data); err != nil {
				t.Fatal(err)
			}
			checkUploaded(t, d, b, size, data)

			// Released, and a device closed, while prefaulting.
			gone, err := d.BeginUpload(size, "released")
			if err != nil {
				t.Fatal(err)
			}
			if err := d.PrepareUpload(gone); err != nil {
				t.Fatal(err)
			}
			gone.Release()
			d2 := cpuDevice(t, c.opts)
			b2, err := d2.BeginUpload(size, "closing")
			if err != nil {
				t.Fatal(err)
			}
			if err := d2.PrepareUpload(b2); err != nil {
				t.Fatal(err)
			}
			d2.Close()
		})
	}
}

// TestHugePageAdvice: on a device opened with HugePages, a large buffer
// from BeginUpload lies in memory advised for transparent huge pages
// (VmFlags "hg"), before and after its upload, and holds its data; by
// default it is not advised.
func TestHugePageAdvice(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("kernel without transparent huge pages")
	}
	for _, c := range []struct {
		name string
		opts Options
		want bool
	}{
		{"huge-pages", Options{HugePages: true}, true},
		{"default", Options{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := cpuDevice(t, c.opts)
			const size = 40<<20 + 12
			b, err := d.BeginUpload(size, "huge")
			if err != nil {
				t.Fatal(err)
			}
			defer b.Release()
			hg := func(when string) {
				d.mu.Lock()
				p, err := d.hostAddrLocked(b)
				d.mu.Unlock()
				if err != nil || p == nil {
					t.Fatalf("%s: no host address (%v)", when, err)
				}
				got := false
				for _, f := range vmaFlags(t, uint64(uintptr(p))+size/2) {
					got = got || f == "hg"
				}
				if got != c.want {
					t.Errorf("%s: memory advised for huge pages = %v, want %v", when, got, c.want)
				}
			}
			hg("begun")
			data := pattern(size, 7)
			if err := d.FinishUpload(b, data); err != nil {
				t.Fatal(err)
			}
			hg("finished")
			checkUploaded(t, d, b, size, data)
		})
	}
}

// BenchmarkUpload fills two fresh 40 MiB buffers from BeginUpload the way
// a load does (graph.finishUploads): one prepared by PrepareUpload while
// the other is finished, then the prepared one. Compare the variants in
// one run: "clear" is the driver-thread clear (NoPrefault), "prefault" the
// default, "huge" adds HugePages, "serial" prepares nothing. Buffers this
// large are fresh memory each time (checked: fresh_pct is the share of
// their pages not resident when begun).
func BenchmarkUpload(b *testing.B) {
	const size = 40 << 20
	data := pattern(size, 1)
	for _, c := range []struct {
		name    string
		opts    Options
		prepare bool
	}{
		{"serial", Options{NoPrefault: true}, false},
		{"clear", Options{NoPrefault: true}, true},
		{"prefault", Options{}, true},
		{"huge", Options{HugePages: true}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			if testDev.Info().AdapterType != "cpu" {
				b.Skip("prefaulting is for CPU adapters")
			}
			d, err := Open(context.Background(), c.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			b.SetBytes(2 * size)
			var fresh, pages int
			for b.Loop() {
				var bufs [2]*Buffer
				for i := range bufs {
					if bufs[i], err = d.BeginUpload(size, "bench"); err != nil {
						b.Fatal(err)
					}
					d.mu.Lock()
					p, err := d.hostAddrLocked(bufs[i])
					d.mu.Unlock()
					if err != nil {
						b.Fatal(err)
					}
					n, of := resident(b, p, size)
					fresh, pages = fresh+of-n, pages+of
				}
				if c.prepare {
					if err := d.PrepareUpload(bufs[1]); err != nil {
						b.Fatal(err)
					}
				}
				for _, i := range []int{0, 1} {
					if err := d.FinishUpload(bufs[i], data); err != nil {
						b.Fatal(err)
					}
				}
				for _, buf := range bufs {
					buf.Release()
				}
			}
			b.ReportMetric(100*float64(fresh)/float64(pages), "fresh_pct")
		})
	}
}

// TestUploadPrefaultFallback: where the kernel cannot prefault (noted at
// the first failure), PrepareUpload clears on the driver's thread instead,
// and the upload still holds its data.
func TestUploadPrefaultFallback(t *testing.T) {
	d := cpuDevice(t, Options{})
	d.noPopulate.Store(true)
	const size = 3<<20 + 4
	b, err := d.BeginUpload(size, "fallback")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if err := d.PrepareUpload(b); err != nil {
		t.Fatal(err)
	}
	if b.prep != nil {
		t.Error("PrepareUpload started a prefault on a device that cannot")
	}
	data := pattern(size, 5)
	if err := d.FinishUpload(b, data); err != nil {
		t.Fatal(err)
	}
	checkUploaded(t, d, b, size, data)
}
