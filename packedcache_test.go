package wgdelegate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

// TestPackedCacheCorruptRegion: the CNN's convolution weights go through
// the packed-weight cache. A byte flipped inside the first packed region
// of the cache file (a weight's exponent, which would wreck the outputs
// if served) makes that weight a corrupt miss: it is packed again, the
// outputs still equal the reference, PackedCacheErrors reports it, and
// the file is rewritten so that a fresh read of it hits every weight. The
// cache file is read once per process and path, so each "process" here
// is a copy of the file in a new directory.
func TestPackedCacheCorruptRegion(t *testing.T) {
	ctx := context.Background()
	cnn := models.NewCNN(models.DefaultCNN)
	f, err := models.Encode(cnn.B, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pte := filepath.Join(dir, "cnn.pte")
	if err := os.WriteFile(pte, f.PTE, 0o644); err != nil {
		t.Fatal(err)
	}
	x := cnn.Input(5)
	want, err := cnn.Reference(x)
	if err != nil {
		t.Fatal(err)
	}
	open := func(cache string) (*wgdelegate.Model, wgdelegate.PackedCacheStats) {
		t.Helper()
		m, err := wgdelegate.Open(ctx, pte, wgdelegate.WithDevice(device(t)), wgdelegate.WithPackedCache(cache))
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Execute(ctx, wgdelegate.FromFloat32(cnn.InputShape(), x))
		if err != nil {
			t.Fatal(err)
		}
		compareOutputs(t, filepath.Base(cache), got, want)
		return m, m.PackedCacheStats()
	}
	copyCache := func(from, to string, flip int) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(from, wgdelegate.PackedCacheFile))
		if err != nil {
			t.Fatal(err)
		}
		if flip >= 0 {
			b[flip] ^= 0x40 // regions start at offset 0
		}
		if err := os.MkdirAll(to, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, wgdelegate.PackedCacheFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	cold := filepath.Join(dir, "cold")
	m, st := open(cold)
	m.Close()
	n := st.Misses
	if n < 2 || st.Hits != 0 || st.Corrupt != 0 {
		t.Fatalf("cold load: %+v, want every packed weight (at least 2) a miss", st)
	}

	flipped := filepath.Join(dir, "flipped")
	copyCache(cold, flipped, 3) // the high byte of the first float
	m, st = open(flipped)
	if st.Hits != n-1 || st.Misses != 1 || st.Corrupt != 1 {
		t.Errorf("flipped region: %+v, want %d hits and the one corrupt miss", st, n-1)
	}
	errs := m.PackedCacheErrors()
	if len(errs) != 1 || errs[0].Op != wgdelegate.PackedCacheVerify || !errors.Is(errs[0], wgdelegate.ErrPackedCacheCorrupt) ||
		errs[0].Path != filepath.Join(flipped, wgdelegate.PackedCacheFile) {
		t.Errorf("PackedCacheErrors %v, want the corrupt entry", errs)
	}
	m.Close()

	fresh := filepath.Join(dir, "fresh")
	copyCache(flipped, fresh, -1)
	m, st = open(fresh)
	defer m.Close()
	if st.Hits != n || st.Misses != 0 || st.Corrupt != 0 {
		t.Errorf("after the rewrite: %+v, want %d hits", st, n)
	}
	if e := m.PackedCacheErrors(); len(e) != 0 {
		t.Errorf("PackedCacheErrors %v after the rewrite", e)
	}
}
