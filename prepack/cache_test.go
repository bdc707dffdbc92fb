package prepack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// seedOf is a test seed: the SHA-256 of s.
func seedOf(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// payload returns n deterministic bytes for key.
func payload(key string, n int) []byte {
	h := sha256.Sum256([]byte(key))
	r := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:]), uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// logRec counts the warnings a Cache logs.
type logRec struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRec) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelWarn }
func (l *logRec) Handle(_ context.Context, r slog.Record) error {
	var sb strings.Builder
	sb.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.msgs = append(l.msgs, sb.String())
	l.mu.Unlock()
	return nil
}
func (l *logRec) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRec) WithGroup(string) slog.Handler      { return l }

func (l *logRec) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

func newLog() (*logRec, CacheOptions) {
	l := &logRec{}
	return l, CacheOptions{Logger: slog.New(l)}
}

// testEntries is a set of entries of awkward sizes.
var testEntries = []struct {
	key  string
	size int
}{
	{"w/a", 1},
	{"w/b", 255},
	{"w/c", 256},
	{"w/d", 1000},
	{"w/empty", 0},
	{"w/e", 4097},
}

// openTestCache writes the test cache to a new file and opens it with
// warnings discarded; it returns the cache and the file's path.
func openTestCache(t *testing.T) (*Cache, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.wgdpack")
	writeTestCache(t, path)
	_, opts := newLog()
	return OpenCache(path, opts), path
}

// writeTestCache creates a cache at path holding testEntries, saved in
// one Save, and returns it re-read.
func writeTestCache(t testing.TB, path string) {
	t.Helper()
	_, opts := newLog()
	c := OpenCache(path, opts)
	for _, e := range testEntries {
		c.Put(e.key, seedOf("v1"), payload(e.key, e.size))
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func checkTestEntries(t *testing.T, c *Cache) {
	t.Helper()
	for _, e := range testEntries {
		b, ok := c.Get(e.key, seedOf("v1"))
		if !ok || !bytes.Equal(b, payload(e.key, e.size)) {
			t.Errorf("Get(%q) = %d bytes, %v; want %d bytes", e.key, len(b), ok, e.size)
		}
	}
}

// TestCacheRoundTrip saves entries and reads them back, mapped and not.
func TestCacheRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.wgdpack")
	writeTestCache(t, path)
	for _, noMmap := range []bool{false, true} {
		t.Run(fmt.Sprintf("noMmap=%v", noMmap), func(t *testing.T) {
			l, opts := newLog()
			opts.NoMmap = noMmap
			c := OpenCache(path, opts)
			defer c.Close()
			checkTestEntries(t, c)
			if _, ok := c.Get("absent", seedOf("v1")); ok {
				t.Error("absent key hit")
			}
			var total int64
			for _, e := range testEntries {
				total += int64(e.size)
			}
			want := CacheStats{Hits: int64(len(testEntries)), Misses: 1, Bytes: total, Entries: len(testEntries)}
			if s := c.Stats(); s != want {
				t.Errorf("stats %+v, want %+v", s, want)
			}
			if m := l.all(); len(m) != 0 {
				t.Errorf("unexpected warnings %q", m)
			}
		})
	}
}

// TestCacheHitAliasesMapping checks that a hit is a capped sub-slice of
// the file mapping, 256-byte aligned, and not a heap copy.
func TestCacheHitAliasesMapping(t *testing.T) {
	c, _ := openTestCache(t)
	defer c.Close()
	if len(c.sources) != 1 || c.sources[0].mf == nil {
		t.Fatalf("file not mapped: %d sources", len(c.sources))
	}
	m := c.sources[0].data
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	hi := lo + uintptr(len(m))
	for _, e := range testEntries {
		b, ok := c.Get(e.key, seedOf("v1"))
		if !ok || len(b) == 0 {
			continue
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		if p < lo || p+uintptr(len(b)) > hi {
			t.Errorf("%s: hit at %#x not inside the mapping [%#x, %#x)", e.key, p, lo, hi)
		}
		if p%Align != 0 {
			t.Errorf("%s: hit at %#x not %d-byte aligned", e.key, p, Align)
		}
		if cap(b) != len(b) {
			t.Errorf("%s: cap %d > len %d: an append would write into the mapping", e.key, cap(b), len(b))
		}
		b2, _ := c.Get(e.key, seedOf("v1"))
		if unsafe.SliceData(b2) != unsafe.SliceData(b) {
			t.Errorf("%s: two hits returned different memory", e.key)
		}
	}
}

// TestCacheStaleSeed checks that a seed mismatch is a stale miss and that
// the repacked entry replaces the old one after Save and reopen.
func TestCacheStaleSeed(t *testing.T) {
	c, path := openTestCache(t)
	if _, ok := c.Get("w/b", seedOf("v2")); ok {
		t.Fatal("hit under another seed")
	}
	if s := c.Stats(); s.Stale != 1 || s.Misses != 1 || s.Hits != 0 {
		t.Errorf("stats %+v, want one stale miss", s)
	}
	repacked := payload("w/b v2", 300)
	c.Put("w/b", seedOf("v2"), repacked)
	if b, ok := c.Get("w/b", seedOf("v2")); !ok || !bytes.Equal(b, repacked) {
		t.Error("pending repack not returned before Save")
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Close()

	_, opts := newLog()
	c = OpenCache(path, opts)
	defer c.Close()
	if b, ok := c.Get("w/b", seedOf("v2")); !ok || !bytes.Equal(b, repacked) {
		t.Error("repacked entry lost after reopen")
	}
	if _, ok := c.Get("w/b", seedOf("v1")); ok {
		t.Error("old seed still hits")
	}
	if n := c.Stats().Entries; n != len(testEntries) {
		t.Errorf("%d entries after replacing one, want %d", n, len(testEntries))
	}
}

// setVersion rewrites the version field of a valid cache file and fixes the
// checksum, so only the version differs.
func setVersion(t *testing.T, path string, v uint32) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fo := len(b) - FooterSize
	ft := b[fo:]
	binary.LittleEndian.PutUint32(ft[56:], v)
	ioff := binary.LittleEndian.Uint64(ft)
	sum := checksum(ft, b[ioff:fo])
	copy(ft[24:56], sum[:])
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCacheOtherVersion checks that a file of another format version is
// ignored whole, logged once, and rewritten in the current version on Save.
func TestCacheOtherVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.wgdpack")
	writeTestCache(t, path)
	setVersion(t, path, FormatVersion+1)
	l, opts := newLog()
	c := OpenCache(path, opts)
	if n := c.Stats().Entries; n != 0 {
		t.Fatalf("%d entries from a file of another version", n)
	}
	if _, ok := c.Get("w/a", seedOf("v1")); ok {
		t.Fatal("hit from a file of another version")
	}
	if m := l.all(); len(m) != 1 || !strings.Contains(m[0], "version") {
		t.Errorf("warnings %q, want one about the version", m)
	}
	c.Put("new", seedOf("v1"), payload("new", 77))
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	b, _ := os.ReadFile(path)
	if v := binary.LittleEndian.Uint32(b[len(b)-FooterSize+56:]); v != FormatVersion {
		t.Errorf("rewritten file has version %d", v)
	}
	c = OpenCache(path, opts)
	defer c.Close()
	if s := c.Stats(); s.Entries != 1 {
		t.Errorf("%d entries after rewrite, want 1", s.Entries)
	}
	if b, ok := c.Get("new", seedOf("v1")); !ok || !bytes.Equal(b, payload("new", 77)) {
		t.Error("rewritten entry missing")
	}
}

func resetShared() {
	sharedCaches.Lock()
	sharedCaches.m = map[string]*Cache{}
	sharedCaches.Unlock()
}

// TestSharedReadsIndexOnce checks that Shared returns one Cache per cleaned
// path, reads its index once, and keeps it alive through Close.
func TestSharedReadsIndexOnce(t *testing.T) {
	resetShared()
	defer resetShared()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.wgdpack")
	writeTestCache(t, path)
	_, opts := newLog()
	before := indexReads.Load()
	c := Shared(path, opts)
	for _, p := range []string{path, dir + "/./c.wgdpack", dir + "//sub/../c.wgdpack"} {
		if d := Shared(p, opts); d != c {
			t.Errorf("Shared(%q) returned another Cache", p)
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, path); err == nil && Shared(rel, opts) != c {
			t.Errorf("Shared(%q) returned another Cache", rel)
		}
	}
	b1, _ := c.Get("w/d", seedOf("v1"))
	c.Close() // a graph closing must not invalidate the shared cache
	b2, ok := Shared(path, opts).Get("w/d", seedOf("v1"))
	if !ok || !bytes.Equal(b1, b2) || !bytes.Equal(b2, payload("w/d", 1000)) {
		t.Error("shared cache unusable after Close")
	}
	if n := indexReads.Load() - before; n != 1 {
		t.Errorf("index read %d times, want 1", n)
	}
}

// TestSaveNothingNewLeavesFile checks that Save with nothing new Put does
// not touch the file: same size, same mtime, and no file created.
func TestSaveNothingNewLeavesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.wgdpack")
	writeTestCache(t, path)
	past := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	_, opts := newLog()
	c := OpenCache(path, opts)
	checkTestEntries(t, c)
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Put("w/a", seedOf("v1"), payload("w/a", 1)) // already held: no-op
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	after, _ := os.Stat(path)
	if !after.ModTime().Equal(past) || after.Size() != before.Size() {
		t.Errorf("file touched: mtime %v size %d, was %v size %d", after.ModTime(), after.Size(), past, before.Size())
	}

	missing := filepath.Join(dir, "none.wgdpack")
	c = OpenCache(missing, opts)
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Save with nothing Put created the file: %v", err)
	}
}

// TestTwoCachesAppend opens two independent Caches on one path (as two
// processes would) and saves from each in turn: both sets survive, and a
// slice handed out before the other's append keeps its bytes.
func TestTwoCachesAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.wgdpack")
	_, opts := newLog()
	a := OpenCache(path, opts)
	b := OpenCache(path, opts)
	defer a.Close()
	defer b.Close()
	put := func(c *Cache, keys ...string) {
		for i, k := range keys {
			c.Put(k, seedOf("v1"), payload(k, 100+i*333))
		}
		if err := c.Save(); err != nil {
			t.Fatal(err)
		}
	}
	put(a, "a1", "a2")
	held, ok := a.Get("a1", seedOf("v1"))
	if !ok {
		t.Fatal("a1 missing after Save")
	}
	heldCopy := bytes.Clone(held)
	put(b, "b1")
	put(a, "a3")
	put(b, "b2", "b3")
	if !bytes.Equal(held, heldCopy) {
		t.Error("bytes of a hit changed under another cache's append")
	}
	c := OpenCache(path, opts)
	defer c.Close()
	for _, k := range []string{"a1", "a2", "a3", "b1", "b2", "b3"} {
		if _, ok := c.Get(k, seedOf("v1")); !ok {
			t.Errorf("%s lost", k)
		}
	}
	if n := c.Stats().Entries; n != 6 {
		t.Errorf("%d entries, want 6", n)
	}
	// b saw a's entries when it re-read the index under the lock.
	if _, ok := b.Get("a1", seedOf("v1")); !ok {
		t.Error("b does not see a's entry after its own Save")
	}
}

// helperEnv makes the test binary act as a cache-writing process.
const helperEnv = "WGD_PREPACK_CACHE_HELPER"

// TestHelperProcess is not a test: run with helperEnv set to
// "path|name|rounds|perRound" it Puts and Saves as a separate process.
func TestHelperProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("helper process only")
	}
	f := strings.Split(spec, "|")
	rounds, _ := strconv.Atoi(f[2])
	per, _ := strconv.Atoi(f[3])
	for r := 0; r < rounds; r++ {
		c := OpenCache(f[0], CacheOptions{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
		for i := 0; i < per; i++ {
			k := fmt.Sprintf("%s/%d/%d", f[1], r, i)
			c.Put(k, seedOf("v1"), payload(k, 1000+r*517+i*61))
		}
		c.Put("common", seedOf(f[1]), payload("common"+f[1], 999))
		if err := c.Save(); err != nil {
			fmt.Fprintln(os.Stderr, "save:", err)
			os.Exit(3)
		}
		c.Close()
	}
}

// TestConcurrentSaveProcesses runs several processes that append to one
// file at once; every entry of every process must be there afterwards.
func TestConcurrentSaveProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.wgdpack")
	const procs, rounds, per = 4, 5, 3
	var cmds []*exec.Cmd
	for p := 0; p < procs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|p%d|%d|%d", helperEnv, path, p, rounds, per))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	for _, noMmap := range []bool{false, true} {
		l, opts := newLog()
		opts.NoMmap = noMmap
		c := OpenCache(path, opts)
		for p := 0; p < procs; p++ {
			for r := 0; r < rounds; r++ {
				for i := 0; i < per; i++ {
					k := fmt.Sprintf("p%d/%d/%d", p, r, i)
					if b, ok := c.Get(k, seedOf("v1")); !ok || !bytes.Equal(b, payload(k, 1000+r*517+i*61)) {
						t.Errorf("%s lost or wrong", k)
					}
				}
			}
		}
		if n := c.Stats().Entries; n != procs*rounds*per+1 {
			t.Errorf("%d entries, want %d", n, procs*rounds*per+1)
		}
		hits := 0
		for p := 0; p < procs; p++ {
			if b, ok := c.Get("common", seedOf(fmt.Sprintf("p%d", p))); ok {
				hits++
				if !bytes.Equal(b, payload(fmt.Sprintf("commonp%d", p), 999)) {
					t.Errorf("common entry of p%d has wrong bytes", p)
				}
			}
		}
		if hits != 1 {
			t.Errorf("the shared key hits under %d seeds, want exactly 1", hits)
		}
		if m := l.all(); len(m) != 0 {
			t.Errorf("warnings %q", m)
		}
		c.Close()
	}
}

// openBytes writes b to a file and opens it as a cache.
func openBytes(t testing.TB, dir string, b []byte, noMmap bool) (*Cache, *logRec) {
	t.Helper()
	path := filepath.Join(dir, "x.wgdpack")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	l, opts := newLog()
	opts.NoMmap = noMmap
	return OpenCache(path, opts), l
}

// savedTwice writes the test cache to dir/c.wgdpack, then adds an entry
// "second" of size bytes in a second Save; it returns the file's bytes
// after each Save.
func savedTwice(t *testing.T, dir string, size int) (one, two []byte) {
	t.Helper()
	path := filepath.Join(dir, "c.wgdpack")
	writeTestCache(t, path)
	one, _ = os.ReadFile(path)
	_, opts := newLog()
	c := OpenCache(path, opts)
	c.Put("second", seedOf("v1"), payload("second", size))
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	two, _ = os.ReadFile(path)
	return one, two
}

// TestTruncationEveryByte cuts a valid file (saved once, and saved twice)
// at every byte of its index and footer (and throughout its regions):
// nothing but the whole file yields entries.
func TestTruncationEveryByte(t *testing.T) {
	dir := t.TempDir()
	one, two := savedTwice(t, dir, 600)
	for name, full := range map[string][]byte{"one": one, "two": two} {
		for _, noMmap := range []bool{false, true} {
			// Every byte of the index and footer; every 37th of the regions.
			ioff := int(binary.LittleEndian.Uint64(full[len(full)-FooterSize:]))
			for cut := 0; cut < len(full); cut++ {
				if cut < ioff && cut%37 != 0 {
					continue
				}
				c, l := openBytes(t, dir, full[:cut], noMmap)
				if n := c.Stats().Entries; n != 0 {
					t.Errorf("%s cut at %d/%d: %d entries", name, cut, len(full), n)
				}
				if _, ok := c.Get("w/a", seedOf("v1")); ok {
					t.Errorf("%s cut at %d: hit", name, cut)
				}
				if m := l.all(); cut > 0 && len(m) != 1 {
					t.Errorf("%s cut at %d: %d warnings, want 1", name, cut, len(m))
				}
				c.Close()
			}
		}
	}
}

// TestTornAppend models a crash during the second Save: the file is the new
// bytes up to some point and the old bytes after it. Every such state
// reads as empty; the full write reads as both saves.
func TestTornAppend(t *testing.T) {
	dir := t.TempDir()
	one, two := savedTwice(t, dir, 3000)
	start := int(binary.LittleEndian.Uint64(one[len(one)-FooterSize:]))
	for k := start + 1; k < len(two); k++ {
		torn := bytes.Clone(two[:k])
		if k < len(one) {
			torn = append(torn, one[k:]...)
		}
		if _, err := parse(bytes.NewReader(torn), int64(len(torn))); err == nil {
			t.Errorf("torn at %d: accepted", k)
		}
		if k%61 == 0 { // and through OpenCache now and then
			c, _ := openBytes(t, dir, torn, false)
			if n := c.Stats().Entries; n != 0 {
				t.Errorf("torn at %d: %d entries", k, n)
			}
			c.Close()
		}
	}
	c, _ := openBytes(t, dir, two, false)
	defer c.Close()
	if n := c.Stats().Entries; n != len(testEntries)+1 {
		t.Errorf("full file: %d entries", n)
	}
}

// rawEntry is one index entry written by craft, possibly invalid.
type rawEntry struct {
	key       string
	keyLen    int // -1: len(key)
	off, size uint64
}

// crafted describes a cache file built field by field.
type crafted struct {
	regions  int // bytes of region area (a multiple of Align normally)
	entries  []rawEntry
	trailing []byte // extra index bytes after the entries
	// Footer overrides; zero means the correct value.
	ioff, ilen, n *uint64
	version       uint32
	reserved      uint32
	badSum        bool
	badMagic      bool
}

func u64(v uint64) *uint64 { return &v }

func (c crafted) bytes() []byte {
	b := make([]byte, c.regions)
	for i := range b {
		b[i] = byte(i)
	}
	var ib []byte
	for _, e := range c.entries {
		kl := e.keyLen
		if kl < 0 {
			kl = len(e.key)
		}
		ib = binary.LittleEndian.AppendUint64(ib, e.off)
		ib = binary.LittleEndian.AppendUint64(ib, e.size)
		s := seedOf("v1")
		ib = append(ib, s[:]...)
		var sum uint32 // the region's, where it lies in the file
		if e.off <= uint64(len(b)) && e.size <= uint64(len(b))-e.off {
			sum = regionSum(b[e.off : e.off+e.size])
		}
		ib = binary.LittleEndian.AppendUint32(ib, sum)
		ib = binary.LittleEndian.AppendUint16(ib, uint16(kl))
		ib = append(ib, e.key...)
	}
	ib = append(ib, c.trailing...)
	ioff, ilen, n := uint64(c.regions), uint64(len(ib)), uint64(len(c.entries))
	if c.ioff != nil {
		ioff = *c.ioff
	}
	if c.ilen != nil {
		ilen = *c.ilen
	}
	if c.n != nil {
		n = *c.n
	}
	v := c.version
	if v == 0 {
		v = FormatVersion
	}
	var ft [FooterSize]byte
	binary.LittleEndian.PutUint64(ft[0:], ioff)
	binary.LittleEndian.PutUint64(ft[8:], ilen)
	binary.LittleEndian.PutUint64(ft[16:], n)
	binary.LittleEndian.PutUint32(ft[56:], v)
	binary.LittleEndian.PutUint32(ft[60:], c.reserved)
	copy(ft[64:], magic[:])
	if c.badMagic {
		ft[64] ^= 1
	}
	sum := checksum(ft[:], ib)
	if c.badSum {
		sum[7] ^= 0x40
	}
	copy(ft[24:56], sum[:])
	b = append(b, ib...)
	return append(b, ft[:]...)
}

// TestCorruptFiles checks one rejection per case: each file is refused by
// parse, and OpenCache treats it as empty with one warning.
func TestCorruptFiles(t *testing.T) {
	ok2 := []rawEntry{{"a", -1, 0, 300}, {"b", -1, 512, 10}}
	for _, tc := range []struct {
		name    string
		c       crafted
		raw     []byte // instead of c
		version bool   // rejected as another version
	}{
		{name: "short", raw: []byte("WGDPACK\n")},
		{name: "garbage", raw: bytes.Repeat([]byte{0xff}, 500)},
		{name: "bad magic", c: crafted{regions: 1024, entries: ok2, badMagic: true}},
		{name: "bad checksum", c: crafted{regions: 1024, entries: ok2, badSum: true}},
		{name: "other version", c: crafted{regions: 1024, entries: ok2, version: 7}, version: true},
		{name: "reserved set", c: crafted{regions: 1024, entries: ok2, reserved: 1}},
		{name: "index offset past footer", c: crafted{regions: 1024, entries: ok2, ioff: u64(1 << 40)}},
		{name: "index length wrong", c: crafted{regions: 1024, entries: ok2, ilen: u64(3)}},
		{name: "index length huge", c: crafted{regions: 1024, entries: ok2, ilen: u64(^uint64(0))}},
		{name: "index offset unaligned", c: crafted{regions: 1000, entries: []rawEntry{{"a", -1, 0, 10}}}},
		{name: "count too large for file", c: crafted{regions: 1024, entries: ok2, n: u64(3)}},
		{name: "count over cap", c: crafted{regions: 1024, entries: ok2, n: u64(MaxEntries + 1)}},
		{name: "count huge", c: crafted{regions: 1024, entries: ok2, n: u64(^uint64(0) / 2)}},
		{name: "count too small", c: crafted{regions: 1024, entries: ok2, n: u64(1)}},
		{name: "trailing index bytes", c: crafted{regions: 1024, entries: ok2, trailing: []byte{1, 2, 3}}},
		{name: "region past index", c: crafted{regions: 1024, entries: []rawEntry{{"a", -1, 768, 257}}}},
		{name: "region offset past file", c: crafted{regions: 1024, entries: []rawEntry{{"a", -1, 1 << 40, 1}}}},
		{name: "region size wraps", c: crafted{regions: 1024, entries: []rawEntry{{"a", -1, 256, ^uint64(0) - 100}}}},
		{name: "region unaligned", c: crafted{regions: 1024, entries: []rawEntry{{"a", -1, 100, 10}}}},
		{name: "empty region past index", c: crafted{regions: 1024, entries: []rawEntry{{"a", -1, 1280, 0}}}},
		{name: "regions overlap", c: crafted{regions: 1024, entries: []rawEntry{{"a", -1, 0, 300}, {"b", -1, 256, 10}}}},
		{name: "duplicate key", c: crafted{regions: 1024, entries: []rawEntry{{"a", -1, 0, 10}, {"a", -1, 256, 10}}}},
		{name: "empty key", c: crafted{regions: 1024, entries: []rawEntry{{"", -1, 0, 10}}}},
		{name: "key too long", c: crafted{regions: 1024, entries: []rawEntry{{strings.Repeat("k", MaxKeyLen+1), -1, 0, 10}}}},
		{name: "key past index", c: crafted{regions: 1024, entries: []rawEntry{{"abc", 60, 0, 10}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.raw
			if b == nil {
				b = tc.c.bytes()
			}
			_, err := parse(bytes.NewReader(b), int64(len(b)))
			var fe *formatError
			switch {
			case err == nil:
				t.Fatal("accepted")
			case tc.version && !errors.Is(err, errVersion):
				t.Errorf("error %v, want a version error", err)
			case !tc.version && !errors.As(err, &fe):
				t.Errorf("error %v (%T), want a *formatError", err, err)
			}
			for _, noMmap := range []bool{false, true} {
				c, l := openBytes(t, t.TempDir(), b, noMmap)
				if n := c.Stats().Entries; n != 0 {
					t.Errorf("%d entries", n)
				}
				if _, ok := c.Get("a", seedOf("v1")); ok {
					t.Error("hit")
				}
				if m := l.all(); len(m) != 1 {
					t.Errorf("warnings %q, want one", m)
				}
				c.Close()
			}
		})
	}
	// The crafter itself makes valid files.
	b := crafted{regions: 1024, entries: ok2}.bytes()
	idx, err := parse(bytes.NewReader(b), int64(len(b)))
	if err != nil || len(idx.entries) != 2 {
		t.Fatalf("valid crafted file: %v", err)
	}
}

// runAsNobody reruns the named test in a child process as uid/gid 65534,
// for tests about permissions, which root ignores. It returns false when
// that cannot be arranged.
func runAsNobody(t *testing.T, name string) bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	dir, err := os.MkdirTemp("", "prepack-nobody")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	bin := filepath.Join(dir, "prepack.test")
	src, err := os.ReadFile(exe)
	if err != nil || os.WriteFile(bin, src, 0o755) != nil {
		return false
	}
	tmp := filepath.Join(dir, "tmp")
	if os.Mkdir(tmp, 0o777) != nil || os.Chmod(tmp, 0o777) != nil {
		return false
	}
	cmd := exec.Command(bin, "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "WGD_PREPACK_AS_NOBODY=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(err.Error(), "operation not permitted") {
		return false
	}
	t.Logf("as uid 65534:\n%s", out)
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+name)) {
		t.Errorf("%s as uid 65534: %v", name, err)
	}
	return true
}

// TestUnwritableDir checks a cache in a directory that cannot be written:
// the existing entries load, Save fails with an error that is logged once,
// and Puts still serve from memory. Root ignores permissions, so as root
// the test reruns itself as nobody.
func TestUnwritableDir(t *testing.T) {
	if os.Geteuid() == 0 {
		if os.Getenv("WGD_PREPACK_AS_NOBODY") != "" || !runAsNobody(t, "TestUnwritableDir") {
			t.Skip("running as root and cannot switch to an unprivileged user")
		}
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "c.wgdpack")
	writeTestCache(t, path)
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	rpath := filepath.Join(ro, "c.wgdpack")
	if err := os.WriteFile(rpath, b, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(ro, 0o700)

	for _, p := range []string{rpath, filepath.Join(ro, "missing.wgdpack")} {
		l, opts := newLog()
		c := OpenCache(p, opts)
		if p == rpath {
			checkTestEntries(t, c)
		}
		c.Put("new", seedOf("v1"), payload("new", 10))
		err1, err2 := c.Save(), c.Save()
		if err1 == nil || err2 == nil {
			t.Errorf("%s: Save succeeded in a read-only directory", p)
		}
		if m := l.all(); len(m) != 1 || !strings.Contains(m[0], "not saved") {
			t.Errorf("%s: warnings %q, want one 'not saved'", p, m)
		}
		if b, ok := c.Get("new", seedOf("v1")); !ok || !bytes.Equal(b, payload("new", 10)) {
			t.Errorf("%s: in-memory entry lost", p)
		}
		c.Close()
	}
	after, _ := os.ReadFile(rpath)
	if !bytes.Equal(after, b) {
		t.Error("read-only file changed")
	}
}

// TestReadFallback checks the path without mmap: by option, and when
// mapping fails.
func TestReadFallback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.wgdpack")
	writeTestCache(t, path)
	saved := mapFile
	defer func() { mapFile = saved }()
	mapFile = func(string) (*serialization.MappedFile, error) {
		return nil, errors.New("mmap unavailable")
	}
	for _, noMmap := range []bool{false, true} {
		l, opts := newLog()
		opts.NoMmap = noMmap
		c := OpenCache(path, opts)
		if len(c.sources) != 1 || c.sources[0].mf != nil || c.sources[0].f == nil {
			t.Fatalf("noMmap=%v: not on the read path", noMmap)
		}
		checkTestEntries(t, c)
		c.Put("more", seedOf("v1"), payload("more", 5000))
		if err := c.Save(); err != nil {
			t.Fatal(err)
		}
		if b, ok := c.Get("more", seedOf("v1")); !ok || !bytes.Equal(b, payload("more", 5000)) {
			t.Error("entry lost after Save on the read path")
		}
		checkTestEntries(t, c)
		if m := l.all(); len(m) != 0 {
			t.Errorf("warnings %q", m)
		}
		c.Close()
	}
}

// TestConcurrentUse hammers one Cache from several goroutines (run with
// -race): Gets, Puts, Saves and Stats at once.
func TestConcurrentUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.wgdpack")
	writeTestCache(t, path)
	for _, noMmap := range []bool{false, true} {
		l, opts := newLog()
		opts.NoMmap = noMmap
		c := OpenCache(path, opts)
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 40; i++ {
					e := testEntries[(g+i)%len(testEntries)]
					if b, ok := c.Get(e.key, seedOf("v1")); ok && !bytes.Equal(b, payload(e.key, e.size)) {
						t.Errorf("%s: wrong bytes", e.key)
					}
					k := fmt.Sprintf("g%d/%d", g, i%7)
					c.Put(k, seedOf("v1"), payload(k, 100+i%7))
					if b, ok := c.Get(k, seedOf("v1")); !ok || !bytes.Equal(b, payload(k, 100+i%7)) {
						t.Errorf("%s: own Put not visible", k)
					}
					if i%10 == 0 {
						if err := c.Save(); err != nil {
							t.Error(err)
						}
					}
					c.Stats()
				}
			}()
		}
		wg.Wait()
		if err := c.Save(); err != nil {
			t.Fatal(err)
		}
		c.Close()
		c = OpenCache(path, opts)
		if n := c.Stats().Entries; n != len(testEntries)+6*7 {
			t.Errorf("%d entries, want %d", n, len(testEntries)+6*7)
		}
		c.Close()
		if m := l.all(); len(m) != 0 {
			t.Errorf("warnings %q", m)
		}
	}
}

// TestPutBadKey checks that keys of bad length are dropped with one warning.
func TestPutBadKey(t *testing.T) {
	l, opts := newLog()
	c := OpenCache(filepath.Join(t.TempDir(), "c"), opts)
	defer c.Close()
	c.Put("", seedOf("v1"), []byte{1})
	c.Put(strings.Repeat("x", MaxKeyLen+1), seedOf("v1"), []byte{1})
	c.Put(strings.Repeat("x", MaxKeyLen), seedOf("v1"), []byte{1})
	if n := c.Stats().Entries; n != 1 {
		t.Errorf("%d entries, want 1", n)
	}
	if m := l.all(); len(m) != 1 {
		t.Errorf("warnings %q, want one", m)
	}
}

// TestClosed checks that a closed Cache misses, ignores Puts and refuses
// to Save.
func TestClosed(t *testing.T) {
	c, _ := openTestCache(t)
	c.Close()
	c.Close()
	if _, ok := c.Get("w/a", seedOf("v1")); ok {
		t.Error("hit after Close")
	}
	c.Put("x", seedOf("v1"), []byte{1})
	if err := c.Save(); !errors.Is(err, ErrClosed) {
		t.Errorf("Save after Close: %v", err)
	}
}

// TestUnreadable checks a path that is a directory: empty cache, one
// warning, Save fails without panicking.
func TestUnreadable(t *testing.T) {
	dir := t.TempDir()
	for _, noMmap := range []bool{false, true} {
		l, opts := newLog()
		opts.NoMmap = noMmap
		c := OpenCache(dir, opts)
		c.Put("x", seedOf("v1"), []byte{1})
		if err := c.Save(); err == nil {
			t.Error("Save over a directory succeeded")
		}
		if m := l.all(); len(m) != 2 {
			t.Errorf("warnings %q, want one for open and one for save", m)
		}
		c.Close()
	}
}

// BenchmarkCacheGet compares a 64 MiB hit (the mapping, and the mapping
// read through once) with os.ReadFile of the same bytes; open+first-hit is
// what a load pays (mapping the file, verifying the region's CRC-32C),
// crc32c the checksum alone.
func BenchmarkCacheGet(b *testing.B) {
	const size = 64 << 20
	path := filepath.Join(b.TempDir(), "c.wgdpack")
	data := payload("big", size)
	c := OpenCache(path, CacheOptions{})
	c.Put("big", seedOf("v1"), data)
	if err := c.Save(); err != nil {
		b.Fatal(err)
	}
	c.Close()
	raw := filepath.Join(b.TempDir(), "raw")
	if err := os.WriteFile(raw, data, 0o644); err != nil {
		b.Fatal(err)
	}
	gbs := func(b *testing.B) {
		b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	}
	dst := make([]byte, size)
	c = OpenCache(path, CacheOptions{})
	defer c.Close()
	b.Run("hit", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if d, ok := c.Get("big", seedOf("v1")); !ok || len(d) != size {
				b.Fatal("miss")
			}
		}
		gbs(b)
	})
	b.Run("hit+copy", func(b *testing.B) { // what a queue write of the hit costs on top
		b.SetBytes(size)
		for b.Loop() {
			d, _ := c.Get("big", seedOf("v1"))
			copy(dst, d)
		}
		gbs(b)
	})
	b.Run("open+first-hit", func(b *testing.B) { // a load's cost: map, verify once
		b.SetBytes(size)
		for b.Loop() {
			c := OpenCache(path, CacheOptions{})
			if d, ok := c.Get("big", seedOf("v1")); !ok || len(d) != size {
				b.Fatal("miss")
			}
			c.Close()
		}
		gbs(b)
	})
	b.Run("crc32c", func(b *testing.B) { // the checksum alone, on heap bytes
		b.SetBytes(size)
		for b.Loop() {
			regionSum(data)
		}
		gbs(b)
	})
	b.Run("readfile", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if d, err := os.ReadFile(raw); err != nil || len(d) != size {
				b.Fatal(err)
			}
		}
		gbs(b)
	})
	b.Run("readfile-reuse", func(b *testing.B) { // read into one buffer: no allocation
		b.SetBytes(size)
		for b.Loop() {
			f, err := os.Open(raw)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(f, dst); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		gbs(b)
	})
}

// TestSaveCreatesDir checks that Save creates a missing directory.
func TestSaveCreatesDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "c.wgdpack")
	l, opts := newLog()
	c := OpenCache(path, opts)
	c.Put("k", seedOf("v1"), []byte{1, 2, 3})
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c = OpenCache(path, opts)
	defer c.Close()
	if b, ok := c.Get("k", seedOf("v1")); !ok || !bytes.Equal(b, []byte{1, 2, 3}) {
		t.Error("entry lost")
	}
	if m := l.all(); len(m) != 0 {
		t.Errorf("warnings %q", m)
	}
}

// footerOnly is a ReaderAt for a huge file of which only the footer can be
// read: parse must reject the index's size before reading or allocating it.
type footerOnly struct {
	t    *testing.T
	size int64
	ft   []byte
}

func (r footerOnly) ReadAt(p []byte, off int64) (int, error) {
	if off != r.size-FooterSize || len(p) != FooterSize {
		r.t.Fatalf("read of %d bytes at %d: the index was read", len(p), off)
	}
	return copy(p, r.ft), nil
}

// TestIndexOverCap checks that an index longer than MaxIndexBytes is
// refused from the footer alone.
func TestIndexOverCap(t *testing.T) {
	const ilen = MaxIndexBytes + Align
	size := int64(ilen + FooterSize)
	var ft [FooterSize]byte
	binary.LittleEndian.PutUint64(ft[0:], 0)
	binary.LittleEndian.PutUint64(ft[8:], ilen)
	binary.LittleEndian.PutUint64(ft[16:], 1)
	binary.LittleEndian.PutUint32(ft[56:], FormatVersion)
	copy(ft[64:], magic[:])
	_, err := parse(footerOnly{t, size, ft[:]}, size)
	var fe *formatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "more than") {
		t.Errorf("error %v, want the index cap", err)
	}
}
