package prepack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

var updateCorpus = flag.Bool("update", false, "rewrite the seed corpus in testdata/fuzz/FuzzOpenCache")

const corpusDir = "testdata/fuzz/FuzzOpenCache"

// corpusFiles builds the seed corpus: small valid files (one Save, two
// Saves with a replaced entry leaving a dead region), a truncated one, one
// of another version, and an empty one.
func corpusFiles(t testing.TB) map[string][]byte {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.wgdpack")
	opts := CacheOptions{Logger: slog.New(slog.DiscardHandler)}
	c := OpenCache(path, opts)
	c.Put("k1", seedOf("v1"), []byte{1, 2, 3})
	c.Put("k2", seedOf("v1"), nil)
	c.Put("k3", seedOf("v1"), payload("k3", 300))
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	one, _ := os.ReadFile(path)
	c.Put("k1", seedOf("v2"), []byte{4, 5, 6, 7})
	c.Put("k4", seedOf("v1"), []byte("four"))
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	two, _ := os.ReadFile(path)
	version := bytes.Clone(one)
	binary.LittleEndian.PutUint32(version[len(version)-FooterSize+56:], FormatVersion+1)
	flipped := bytes.Clone(one)
	flipped[1] ^= 0x10 // inside k1's region, the first
	return map[string][]byte{
		"valid":          one,
		"region-flipped": flipped,
		"appended":       two,
		"truncated":      one[:len(one)-1],
		"badversion":     fixSum(version),
		"empty":          {},
		"footer-only":    crafted{}.bytes(),
	}
}

// TestFuzzCorpus checks (or with -update rewrites) the committed seed
// corpus, so it stays in step with the format.
func TestFuzzCorpus(t *testing.T) {
	files := corpusFiles(t)
	for name, b := range files {
		p := filepath.Join(corpusDir, name)
		if *updateCorpus {
			if err := os.MkdirAll(corpusDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		want := fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b)
		// The seeds use a random PCG stream only through payload, which is
		// deterministic, so the files must match exactly.
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run go test ./prepack -run TestFuzzCorpus -update", p)
		}
	}
	for name, want := range map[string]int{"valid": 3, "appended": 4} {
		b := files[name]
		idx, err := parse(bytes.NewReader(b), int64(len(b)))
		if err != nil || len(idx.entries) != want {
			t.Errorf("%s: %v, want %d entries", name, err, want)
		}
	}
	// Seeds of format version 1 (no region checksums), kept from before
	// version 2: valid files of their version, which now read as empty.
	for _, name := range []string{"v1-valid", "v1-appended"} {
		b := readSeed(t, filepath.Join(corpusDir, name))
		if _, err := parse(bytes.NewReader(b), int64(len(b))); !errors.Is(err, errVersion) || !strings.Contains(err.Error(), "version 1,") {
			t.Errorf("%s: %v, want a version 1 file", name, err)
		}
		c, l := openBytes(t, t.TempDir(), b, false)
		if n := c.Stats().Entries; n != 0 {
			t.Errorf("%s: %d entries from a version 1 file", name, n)
		}
		if e := c.Errors(); len(e) != 0 || len(l.all()) != 1 {
			t.Errorf("%s: errors %v, logs %q; want no error and one log line", name, e, l.all())
		}
		c.Close()
	}
}

// readSeed reads a []byte seed of a go test fuzz v1 corpus file.
func readSeed(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line, ok := strings.CutPrefix(string(raw), "go test fuzz v1\n[]byte(")
	line, ok2 := strings.CutSuffix(line, ")\n")
	if !ok || !ok2 {
		t.Fatalf("%s: not a one-[]byte corpus file", path)
	}
	b, err := strconv.Unquote(line)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(b)
}

// fixSum returns a copy of b with the footer's magic, version (unless it
// is already set to something) and checksum made right where the index
// bounds allow, so the fuzzer gets past the checksum into the index
// checks. It returns nil when b has no room for a footer.
func fixSum(b []byte) []byte {
	if len(b) < FooterSize {
		return nil
	}
	b = bytes.Clone(b)
	fo := len(b) - FooterSize
	ft := b[fo:]
	copy(ft[64:], magic[:])
	if binary.LittleEndian.Uint32(ft[56:]) == 0 {
		binary.LittleEndian.PutUint32(ft[56:], FormatVersion)
	}
	ioff := binary.LittleEndian.Uint64(ft)
	if ioff > uint64(fo) {
		return nil
	}
	sum := checksum(ft, b[ioff:fo])
	copy(ft[24:56], sum[:])
	return b
}

// fixRegionSums returns a copy of b, a file whose footer and index parse,
// with every entry's CRC-32C set to its region's and the footer's
// checksum fixed, so the fuzzer reaches hits; nil when b does not parse.
func fixRegionSums(b []byte) []byte {
	idx, err := parse(bytes.NewReader(b), int64(len(b)))
	if err != nil || len(idx.entries) == 0 {
		return nil
	}
	b = bytes.Clone(b)
	fo := len(b) - FooterSize
	p := b[idx.off:fo]
	for len(p) >= entryFixed {
		off := binary.LittleEndian.Uint64(p[0:])
		sz := binary.LittleEndian.Uint64(p[8:])
		binary.LittleEndian.PutUint32(p[48:], regionSum(b[off:off+sz]))
		p = p[entryFixed+int(binary.LittleEndian.Uint16(p[52:])):]
	}
	return fixSum(b)
}

// checkOpen opens data as a cache file, mapped and read, and checks that
// every entry it trusts is a region inside the file, and that a Get
// returns exactly those file bytes (inside the mapping when mapped) when
// they match the entry's CRC-32C, and misses as corrupt when they do not.
func checkOpen(t *testing.T, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, noMmap := range []bool{false, true} {
		c := OpenCache(path, CacheOptions{Logger: slog.New(slog.DiscardHandler), NoMmap: noMmap})
		var lo, hi uintptr
		if len(c.sources) == 1 && c.sources[0].mf != nil {
			m := c.sources[0].data
			lo = uintptr(unsafe.Pointer(unsafe.SliceData(m)))
			hi = lo + uintptr(len(m))
		}
		for k, e := range c.entries {
			if e.off < 0 || e.size < 0 || e.off > int64(len(data)) || e.size > int64(len(data))-e.off {
				t.Fatalf("%q: region [%d, +%d) outside the %d-byte file", k, e.off, e.size, len(data))
			}
			region := data[e.off : e.off+e.size]
			b, o := c.Lookup(k, e.seed)
			if regionSum(region) != e.sum {
				if o != Corrupt || b != nil {
					t.Fatalf("%q: region fails its checksum, Lookup = %d bytes, %v", k, len(b), o)
				}
				continue
			}
			if o != Hit {
				t.Fatalf("%q: trusted entry with a whole region: %v", k, o)
			}
			if !bytes.Equal(b, region) {
				t.Fatalf("%q: Get returned bytes other than the file's", k)
			}
			if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); hi != 0 && len(b) > 0 && (p < lo || p+uintptr(len(b)) > hi) {
				t.Fatalf("%q: hit outside the mapping", k)
			}
		}
		if _, ok := c.Get("", [32]byte{}); ok {
			t.Fatal("empty key hit")
		}
		c.Close()
	}
}

// FuzzOpenCache opens arbitrary bytes as a cache file, as they are, with
// the footer's checksum fixed, and with the regions' checksums fixed too:
// no panic, no hit outside the file, no hit whose bytes fail the checksum.
func FuzzOpenCache(f *testing.F) {
	for _, b := range corpusFiles(f) {
		f.Add(b)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "f.wgdpack")
		checkOpen(t, path, data)
		if fixed := fixSum(data); fixed != nil {
			checkOpen(t, path, fixed)
			if whole := fixRegionSums(fixed); whole != nil {
				checkOpen(t, path, whole)
			}
		}
	})
}
