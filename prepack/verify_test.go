package prepack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// flipFile is a cache file with every kind of byte in it, and what each
// key must return.
type flipFile struct {
	path  string
	data  []byte
	idx   *index
	seeds map[string][32]byte
	want  map[string][]byte
}

// newFlipFile writes the test entries in one Save, then replaces w/b under
// another seed (leaving a dead region) and adds "second" in a second,
// appending Save: regions, padding after short regions, a dead region,
// the index and the footer.
func newFlipFile(t *testing.T, dir string) *flipFile {
	t.Helper()
	path := filepath.Join(dir, "c.wgdpack")
	writeTestCache(t, path)
	_, opts := newLog()
	c := OpenCache(path, opts)
	c.Put("w/b", seedOf("v2"), payload("w/b v2", 300))
	c.Put("second", seedOf("v1"), payload("second", 600))
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	f := &flipFile{path: path, seeds: map[string][32]byte{}, want: map[string][]byte{}}
	for _, e := range testEntries {
		f.seeds[e.key], f.want[e.key] = seedOf("v1"), payload(e.key, e.size)
	}
	f.seeds["w/b"], f.want["w/b"] = seedOf("v2"), payload("w/b v2", 300)
	f.seeds["second"], f.want["second"] = seedOf("v1"), payload("second", 600)
	f.data, _ = os.ReadFile(path)
	var err error
	if f.idx, err = parse(bytes.NewReader(f.data), int64(len(f.data))); err != nil {
		t.Fatal(err)
	}
	if len(f.idx.entries) != len(f.want) {
		t.Fatalf("%d entries, want %d", len(f.idx.entries), len(f.want))
	}
	return f
}

// part names what the byte at off belongs to: a key's region, "padding"
// (between regions, or a dead region), "index" or "footer".
func (f *flipFile) part(off int64) string {
	for k, d := range f.idx.entries {
		if off >= d.off && off < d.off+d.size {
			return k
		}
	}
	switch {
	case off < f.idx.off:
		return "padding"
	case off < int64(len(f.data))-FooterSize:
		return "index"
	}
	return "footer"
}

// TestFlipEveryByte flips a bit under the mapping, and at every third
// such offset the whole byte on the read path, at every offset of a cache
// file's index and footer, and in its regions and padding at every 7th
// offset and at both ends of every region and gap, and checks what each
// part does:
//   - a region: that entry alone misses, counted as corrupt, with one
//     warning naming the file and the key and one CacheVerify error; every
//     other entry hits with its bytes;
//   - padding or a dead region: every entry hits, nothing is logged;
//   - the index or the footer: the file reads as empty, one warning, one
//     CacheOpen error wrapping ErrCorrupt (the version field reads as
//     another version: empty, and no error).
//
// No mutation ever yields a hit with bytes other than the entry's own.
func TestFlipEveryByte(t *testing.T) {
	dir := t.TempDir()
	f := newFlipFile(t, dir)
	fo := int64(len(f.data)) - FooterSize
	seen := map[string]int{}
	edges := map[int64]bool{f.idx.off - 1: true}
	for _, d := range f.idx.entries {
		edges[d.off], edges[d.off+d.size-1], edges[d.off+d.size] = true, true, true
	}
	for off := int64(0); off < int64(len(f.data)); off++ {
		if off < f.idx.off && off%7 != 0 && !edges[off] {
			continue
		}
		part := f.part(off)
		seen[part]++
		type mut struct {
			mask   byte
			noMmap bool
		}
		muts := []mut{{1 << (off % 8), false}}
		if off%3 == 0 {
			muts = append(muts, mut{0xff, true})
		}
		for _, m := range muts {
			b := bytes.Clone(f.data)
			b[off] ^= m.mask
			what := fmt.Sprintf("offset %d (%s) ^%#x noMmap=%v", off, part, m.mask, m.noMmap)
			c, l := openBytes(t, dir, b, m.noMmap)
			corrupt := 0
			for k, want := range f.want {
				got, o := c.Lookup(k, f.seeds[k])
				switch {
				case o == Hit && !bytes.Equal(got, want):
					t.Fatalf("%s: %s hit with wrong bytes", what, k)
				case o == Corrupt && k == part:
					corrupt++
				case o == Hit && k != part && part != "index" && part != "footer":
				case o == Miss && (part == "index" || part == "footer"):
				default:
					t.Errorf("%s: %s: %v", what, k, o)
				}
			}
			logs, errs := l.all(), c.Errors()
			switch part {
			case "padding":
				if len(logs) != 0 || len(errs) != 0 {
					t.Errorf("%s: logs %q errors %v", what, logs, errs)
				}
			case "index", "footer":
				version := off >= fo+56 && off < fo+60
				if n := c.Stats().Entries; n != 0 {
					t.Errorf("%s: %d entries", what, n)
				}
				if len(logs) != 1 {
					t.Errorf("%s: logs %q, want one", what, logs)
				}
				var ce *CacheError
				switch {
				case version && len(errs) == 0 && strings.Contains(logs[0], "version"):
				case len(errs) != 1 || !errors.As(errs[0], &ce) || ce.Op != CacheOpen || !errors.Is(ce, ErrCorrupt):
					t.Errorf("%s: errors %v, want one CacheOpen wrapping ErrCorrupt", what, errs)
				}
			default:
				if corrupt != 1 {
					t.Errorf("%s: %d corrupt entries, want 1", what, corrupt)
				}
				if s := c.Stats(); s.Corrupt != 1 || s.Misses != 1 || s.Hits != int64(len(f.want)-1) || s.Stale != 0 {
					t.Errorf("%s: stats %+v", what, s)
				}
				if len(logs) != 1 || !strings.Contains(logs[0], "key="+part) || !strings.Contains(logs[0], "path="+filepath.Join(dir, "x.wgdpack")) {
					t.Errorf("%s: logs %q, want one naming the file and the key", what, logs)
				}
				var ce *CacheError
				if len(errs) != 1 || !errors.As(errs[0], &ce) || ce.Op != CacheVerify || ce.Key != part || !errors.Is(ce, ErrCorrupt) {
					t.Errorf("%s: errors %v, want one CacheVerify of %s wrapping ErrCorrupt", what, errs, part)
				}
			}
			c.Close()
		}
	}
	if len(seen) != len(f.want)-1+3 { // w/empty has no bytes

		t.Errorf("parts covered %v, want every region, padding, index and footer", seen)
	}
}

// TestCorruptRegionRepacked: a region that fails its checksum is a miss
// of that entry on every Get (verified once); the caller's Put of the
// repacked bytes, under the same seed, replaces it; Save appends it, and
// the next open hits everything with no warning, mapped and read.
func TestCorruptRegionRepacked(t *testing.T) {
	for _, at := range []string{"first", "middle", "last"} {
		for _, key := range []string{"w/a", "w/d", "w/e", "second"} {
			t.Run(at+"/"+key, func(t *testing.T) {
				dir := t.TempDir()
				f := newFlipFile(t, dir)
				d := f.idx.entries[key]
				off := map[string]int64{"first": d.off, "middle": d.off + d.size/2, "last": d.off + d.size - 1}[at]
				f.data[off] ^= 0x04
				if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
					t.Fatal(err)
				}
				l, opts := newLog()
				c := OpenCache(f.path, opts)
				checks := regionChecks.Load()
				for range 3 {
					if b, o := c.Lookup(key, f.seeds[key]); o != Corrupt || b != nil {
						t.Fatalf("Lookup = %d bytes, %v; want corrupt", len(b), o)
					}
				}
				if n := regionChecks.Load() - checks; n != 1 {
					t.Errorf("region hashed %d times in 3 Gets, want once", n)
				}
				if s := c.Stats(); s.Corrupt != 3 || s.Misses != 3 || s.Hits != 0 {
					t.Errorf("stats %+v, want 3 corrupt misses", s)
				}
				c.Put(key, f.seeds[key], f.want[key]) // the repacking
				if b, ok := c.Get(key, f.seeds[key]); !ok || !bytes.Equal(b, f.want[key]) {
					t.Fatal("the repacked bytes are not served before Save")
				}
				if err := c.Save(); err != nil {
					t.Fatal(err)
				}
				for k, want := range f.want {
					if b, ok := c.Get(k, f.seeds[k]); !ok || !bytes.Equal(b, want) {
						t.Errorf("%s after Save: %d bytes, %v", k, len(b), ok)
					}
				}
				c.Close()
				if m := l.all(); len(m) != 1 {
					t.Errorf("logs %q, want one", m)
				}
				after, _ := os.ReadFile(f.path)
				if len(after) <= len(f.data) || !bytes.Equal(after[:f.idx.off], f.data[:f.idx.off]) {
					t.Errorf("Save did not append (file %d -> %d bytes) or changed the regions before it", len(f.data), len(after))
				}
				for _, noMmap := range []bool{false, true} {
					l, opts := newLog()
					opts.NoMmap = noMmap
					c := OpenCache(f.path, opts)
					for k, want := range f.want {
						if b, o := c.Lookup(k, f.seeds[k]); o != Hit || !bytes.Equal(b, want) {
							t.Errorf("reopened noMmap=%v: %s: %d bytes, %v", noMmap, k, len(b), o)
						}
					}
					if m, e := l.all(), c.Errors(); len(m) != 0 || len(e) != 0 {
						t.Errorf("reopened noMmap=%v: logs %q errors %v", noMmap, m, e)
					}
					c.Close()
				}
			})
		}
	}
}

// TestVerifyLazy: opening a cache hashes no region; each Get hashes its
// own region once, and nothing else.
func TestVerifyLazy(t *testing.T) {
	f := newFlipFile(t, t.TempDir())
	_, opts := newLog()
	before := regionChecks.Load()
	c := OpenCache(f.path, opts)
	defer c.Close()
	if n := regionChecks.Load() - before; n != 0 {
		t.Errorf("open hashed %d regions, want none", n)
	}
	for range 4 {
		if _, ok := c.Get("w/e", f.seeds["w/e"]); !ok {
			t.Fatal("miss")
		}
	}
	c.Get("w/c", f.seeds["w/c"])
	c.Get("w/c", seedOf("other")) // stale: not hashed
	if n := regionChecks.Load() - before; n != 2 {
		t.Errorf("%d regions hashed for 2 keys used, want 2", n)
	}
}

// TestRepairedByAnother: two caches (two processes) find the same region
// corrupt and both repack it; the first Save writes it, the second finds
// the region on disk whole under the lock and writes nothing.
func TestRepairedByAnother(t *testing.T) {
	f := newFlipFile(t, t.TempDir())
	f.data[f.idx.entries["w/d"].off+7] ^= 1
	if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, opts := newLog()
	a, b := OpenCache(f.path, opts), OpenCache(f.path, opts)
	defer a.Close()
	defer b.Close()
	for _, c := range []*Cache{a, b} {
		if _, o := c.Lookup("w/d", f.seeds["w/d"]); o != Corrupt {
			t.Fatalf("Lookup: %v, want corrupt", o)
		}
		c.Put("w/d", f.seeds["w/d"], f.want["w/d"])
	}
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	mid, _ := os.Stat(f.path)
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(f.path)
	if after.Size() != mid.Size() || mid.Size() <= int64(len(f.data)) {
		t.Errorf("file %d -> %d -> %d bytes: want one append, by the first Save only", len(f.data), mid.Size(), after.Size())
	}
	for _, c := range []*Cache{a, b} {
		if got, ok := c.Get("w/d", f.seeds["w/d"]); !ok || !bytes.Equal(got, f.want["w/d"]) {
			t.Error("repaired entry not served after Save")
		}
	}
}

// TestRewriteDropsCorrupt: when Save must write a whole new file (the one
// on disk went bad since Open), an entry of the old file whose region
// fails its checksum is left out of it, logged, and the others are copied.
func TestRewriteDropsCorrupt(t *testing.T) {
	f := newFlipFile(t, t.TempDir())
	f.data[f.idx.entries["w/c"].off] ^= 0x80
	if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, opts := newLog()
	c := OpenCache(f.path, opts)
	bad := bytes.Clone(f.data)
	bad[len(bad)-1] ^= 1 // the footer's magic: the file on disk is no longer valid
	if err := os.WriteFile(f.path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	c.Put("new", seedOf("v1"), payload("new", 40))
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	var ce *CacheError
	if e := c.Errors(); len(e) != 1 || !errors.As(e[0], &ce) || ce.Op != CacheVerify || ce.Key != "w/c" {
		t.Errorf("errors %v, want w/c's region reported", e)
	}
	if m := l.all(); len(m) != 1 || !strings.Contains(m[0], "w/c") {
		t.Errorf("logs %q", m)
	}
	c = OpenCache(f.path, opts)
	defer c.Close()
	keys := []string{"new"}
	for k := range f.want {
		if k != "w/c" {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		want, seed := f.want[k], f.seeds[k]
		if k == "new" {
			want, seed = payload("new", 40), seedOf("v1")
		}
		if b, ok := c.Get(k, seed); !ok || !bytes.Equal(b, want) {
			t.Errorf("%s lost in the rewrite", k)
		}
	}
	if _, o := c.Lookup("w/c", f.seeds["w/c"]); o != Miss {
		t.Errorf("w/c: %v, want a plain miss (left out)", o)
	}
	if n := c.Stats().Entries; n != len(keys) {
		t.Errorf("%d entries, want %d", n, len(keys))
	}
}

// TestCacheErrors: Errors reports every problem (here each of two failed
// Saves) in order, and each matches errors.Is / errors.As; a file of
// another version is none.
func TestCacheErrors(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		data []byte // written to path first, when not nil
		want []CacheOp
	}{
		{"under a regular file", filepath.Join(notDir, "c.wgdpack"), nil, []CacheOp{CacheSave, CacheSave}},
		{"a directory", dir, nil, []CacheOp{CacheOpen, CacheSave, CacheSave}},
		{"corrupt", filepath.Join(dir, "corrupt.wgdpack"), bytes.Repeat([]byte{7}, 300), []CacheOp{CacheOpen}},
		{"other version", filepath.Join(dir, "v.wgdpack"), crafted{regions: 256, entries: []rawEntry{{"a", -1, 0, 3}}, version: 1}.bytes(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.data != nil {
				if err := os.WriteFile(tc.path, tc.data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, opts := newLog()
			c := OpenCache(tc.path, opts)
			defer c.Close()
			c.Put("k", seedOf("v1"), []byte{1, 2})
			c.Put("k2", seedOf("v1"), []byte{3})
			c.Save()
			c.Save()
			var ops []CacheOp
			for _, e := range c.Errors() {
				ops = append(ops, e.Op)
				if e.Path != tc.path || e.Err == nil || !strings.Contains(e.Error(), tc.path) {
					t.Errorf("%#v", e)
				}
				if e.Op == CacheOpen && tc.name == "corrupt" && !errors.Is(e, ErrCorrupt) {
					t.Errorf("%v does not wrap ErrCorrupt", e)
				}
				if e.Op == CacheSave && errors.Is(e, ErrCorrupt) {
					t.Errorf("%v wraps ErrCorrupt", e)
				}
			}
			if !slices.Equal(ops, tc.want) {
				t.Errorf("ops %v, want %v", ops, tc.want)
			}
		})
	}
}

// TestIndexEntryLayout pins the version 2 index entry: offset, size, seed,
// CRC-32C, key length, key.
func TestIndexEntryLayout(t *testing.T) {
	d := diskEntry{off: 0x100, size: 3, sum: 0xdeadbeef}
	d.seed[0], d.seed[31] = 0xaa, 0xbb
	b := encodeIndex(&index{entries: map[string]diskEntry{"key": d}})
	if len(b) != entryFixed+3 || entryFixed != 54 {
		t.Fatalf("entry of %d bytes", len(b))
	}
	if binary.LittleEndian.Uint64(b[0:]) != 0x100 || binary.LittleEndian.Uint64(b[8:]) != 3 ||
		b[16] != 0xaa || b[47] != 0xbb || binary.LittleEndian.Uint32(b[48:]) != 0xdeadbeef ||
		binary.LittleEndian.Uint16(b[52:]) != 3 || string(b[54:]) != "key" {
		t.Errorf("entry bytes % x", b)
	}
	// CRC-32C, not IEEE: the check value of "123456789".
	if s := regionSum([]byte("123456789")); s != 0xe3069283 {
		t.Errorf("regionSum = %08x, want CRC-32C's e3069283", s)
	}
}

// TestErrorsSince: the first Mark is 0, so the first user of a cache gets
// the problems of opening it; a later Mark leaves out what came before.
func TestErrorsSince(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.wgdpack")
	if err := os.WriteFile(path, []byte("not a cache file, but long enough to have a footer: ........................................"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, opts := newLog()
	c := OpenCache(path, opts)
	defer c.Close()
	first := c.Mark()
	if e := c.ErrorsSince(first); first != 0 || len(e) != 1 || e[0].Op != CacheOpen {
		t.Fatalf("first Mark %d, errors %v; want 0 and the open problem", first, e)
	}
	second := c.Mark()
	if second != 1 || len(c.ErrorsSince(second)) != 0 {
		t.Errorf("second Mark %d, errors since %v", second, c.ErrorsSince(second))
	}
	c.Put("", seedOf("v1"), nil) // a dropped Put
	if e := c.ErrorsSince(second); len(e) != 1 || e[0].Op != CachePut {
		t.Errorf("errors since the second mark %v, want the dropped Put", e)
	}
	if e := c.ErrorsSince(99); len(e) != 0 {
		t.Errorf("errors since a mark past the end: %v", e)
	}
	if n := len(c.Errors()); n != 2 {
		t.Errorf("%d errors in all, want 2", n)
	}
}
