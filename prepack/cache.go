package prepack

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// Cache file layout constants; the package doc describes the format.
const (
	// FormatVersion is the cache file format this package reads and writes.
	// A file of any other version is ignored and rewritten on Save.
	// Version 2 added a CRC-32C per region to the index entries.
	FormatVersion = 2
	// Align is the alignment of every region's file offset (and of the
	// index), so a hit slice starts 256-byte aligned in memory.
	Align = 256
	// FooterSize is the size of the fixed footer at the end of the file.
	FooterSize = 72
	// MaxKeyLen caps a key's length in bytes.
	MaxKeyLen = 1024
	// MaxEntries caps the number of entries in one cache file.
	MaxEntries = 1 << 18
	// MaxIndexBytes caps the index's size, checked before it is read into
	// memory.
	MaxIndexBytes = 32 << 20
)

// magic ends every valid cache file.
var magic = [8]byte{'W', 'G', 'D', 'P', 'A', 'C', 'K', '\n'}

// entryFixed is the size of an index entry without its key: offset,
// size, seed, CRC-32C, key length.
const entryFixed = 8 + 8 + 32 + 4 + 2

// castagnoli is the CRC-32C table; hash/crc32 computes it with the CPU's
// CRC32 instruction where there is one (SSE 4.2 on amd64, arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// regionSum is the checksum an index entry records for its region.
func regionSum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// ErrCorrupt marks a cache file, or one entry's region, that failed its
// checks (a *CacheError of CacheOpen or CacheVerify wraps it). A file of
// another format version is not corrupt.
var ErrCorrupt = errors.New("corrupt")

// CacheOp names what a Cache was doing when it met a CacheError.
type CacheOp string

// The operations a CacheError reports.
const (
	// CacheOpen: the file could not be read, or was not trusted (Err
	// wraps ErrCorrupt); the Cache started empty.
	CacheOpen CacheOp = "open"
	// CacheRead: an entry's bytes could not be read from the file; the
	// Get was a miss.
	CacheRead CacheOp = "read"
	// CacheVerify: an entry's region failed its checksum (Err wraps
	// ErrCorrupt); the Get was a miss, and the caller's repacking Put
	// replaces the entry on the next Save.
	CacheVerify CacheOp = "verify"
	// CacheSave: Save failed; what was Put since the last Save is not
	// kept on disk.
	CacheSave CacheOp = "save"
	// CachePut: a Put was dropped (a key of bad length, or too many
	// entries).
	CachePut CacheOp = "put"
)

// A CacheError is a problem a Cache worked around: the Cache logs it and
// goes on (it never fails a Get), and Errors reports it. Err is the cause.
type CacheError struct {
	Path string  // the cache file
	Op   CacheOp // what failed
	Key  string  // the entry, for CacheRead and CacheVerify (the first one)
	Err  error
}

func (e *CacheError) Error() string {
	s := "prepack: cache " + e.Path + ": " + string(e.Op)
	if e.Key != "" {
		s += " " + strconv.Quote(e.Key)
	}
	return s + ": " + e.Err.Error()
}

func (e *CacheError) Unwrap() error { return e.Err }

// CacheOptions configures OpenCache and Shared.
type CacheOptions struct {
	// Logger receives one warning per kind of problem (open, save, read);
	// nil means slog.Default().
	Logger *slog.Logger
	// NoMmap reads the file with ordinary reads instead of mapping it.
	NoMmap bool
}

// CacheStats counts a Cache's traffic since it was opened.
type CacheStats struct {
	Hits   int64 // Gets that returned bytes
	Misses int64 // Gets that returned nothing, stale and corrupt ones included
	Stale  int64 // misses where the key was present under another seed
	// Corrupt counts the misses where the key was present under the seed
	// but its region failed its checksum (the entry's verdict is kept, so
	// every Get of it until a Put replaces it counts).
	Corrupt int64
	Bytes   int64 // total size of the entries the cache holds
	// Entries is the number of keys the cache holds, saved or not.
	Entries int
}

// A Cache is a persistent map from key to packed bytes, backed by one file.
// It is safe for concurrent use by several goroutines; several processes
// may share one file (Save serializes them with a file lock).
type Cache struct {
	path   string
	log    *slog.Logger
	noMmap bool
	shared bool

	mu      sync.RWMutex
	entries map[string]*entry
	pending map[string]*entry // entries not yet saved (a subset of entries)
	sources []*source         // every mapping or file opened, kept until Close
	closed  bool

	saveMu sync.Mutex // one Save at a time

	warnMu sync.Mutex
	warned map[CacheOp]bool
	errs   []*CacheError // every problem, in order (at most maxErrors)
	marked bool          // Mark has been called

	hits, misses, stale, corrupt atomic.Int64
}

// entry is one key's bytes: data held in memory (a pending Put), or a
// region of src, checked against its CRC-32C on first use.
type entry struct {
	seed [32]byte
	size int64
	off  int64   // file offset when src != nil
	sum  uint32  // the region's CRC-32C, when src != nil
	src  *source // nil for a pending entry

	once sync.Once
	data []byte // a sub-slice of the mapping, or the region read, once verified
	err  error  // why the region cannot be used (wraps ErrCorrupt when its checksum failed)
	bad  atomic.Bool
	// logged: the bad verdict has been logged (each entry's once)
	logged atomic.Bool
}

// bytes returns the entry's bytes. A region of the file is sliced from the
// mapping (or read) and verified on the first call only; the verdict holds
// for the entry's life, so a load pays for the regions it uses, once.
func (e *entry) bytes() ([]byte, error) {
	e.once.Do(func() {
		if e.src == nil {
			return
		}
		b, err := e.src.slice(e.off, e.size)
		if err == nil {
			regionChecks.Add(1)
			if got := regionSum(b); got != e.sum {
				err = fmt.Errorf("%w: region [%d, +%d) has CRC-32C %08x, the index says %08x", ErrCorrupt, e.off, e.size, got, e.sum)
			}
		}
		if err != nil {
			e.err = err
			e.bad.Store(true)
			return
		}
		e.data = b
	})
	return e.data, e.err
}

// source is one opened version of the cache file: a read-only mapping, or
// an open file read on demand.
type source struct {
	mf   *serialization.MappedFile
	data []byte   // the mapping, when mf != nil
	f    *os.File // when not mapped
	size int64
}

// mapFile maps a file; tests replace it to force the read fallback.
var mapFile = serialization.MapFile

// indexReads counts index parses, so tests can check that Shared reads a
// file's index once.
var indexReads atomic.Int64

// regionChecks counts region checksums computed, so tests can check that
// a region is verified once, and only when it is used.
var regionChecks atomic.Int64

// openSource maps path or, when that fails or is disabled, opens it for
// reading.
func openSource(path string, noMmap bool) (*source, error) {
	if !noMmap {
		if mf, err := mapFile(path); err == nil {
			d := mf.Bytes()
			return &source{mf: mf, data: d, size: int64(len(d))}, nil
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return &source{f: f, size: fi.Size()}, nil
}

func (s *source) ReadAt(p []byte, off int64) (int, error) {
	if s.mf != nil {
		return bytes.NewReader(s.data).ReadAt(p, off)
	}
	return s.f.ReadAt(p, off)
}

// slice returns size bytes at off: a capped sub-slice of the mapping, or a
// fresh buffer read from the file. parse has checked the bounds against
// s.size.
func (s *source) slice(off, size int64) ([]byte, error) {
	if off < 0 || size < 0 || off > s.size || size > s.size-off {
		return nil, fmt.Errorf("region [%d, +%d) outside the file's %d bytes", off, size, s.size)
	}
	if s.mf != nil {
		return s.data[off : off+size : off+size], nil
	}
	if s.f == nil {
		return nil, errors.New("cache closed")
	}
	b := make([]byte, size)
	if _, err := s.f.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("reading region at %d: %w", off, err)
	}
	return b, nil
}

func (s *source) close() {
	if s.mf != nil {
		s.mf.Close()
		s.mf, s.data = nil, nil
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// OpenCache opens the cache file at path. It never fails: a missing file is
// an empty cache, and any problem reading it is logged once and leaves the
// cache empty (see the package doc). Close releases the mapping.
func OpenCache(path string, opts CacheOptions) *Cache {
	c := &Cache{
		path:    path,
		log:     opts.Logger,
		noMmap:  opts.NoMmap,
		entries: map[string]*entry{},
		pending: map[string]*entry{},
		warned:  map[CacheOp]bool{},
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.load()
	return c
}

var sharedCaches = struct {
	sync.Mutex
	m map[string]*Cache
}{m: map[string]*Cache{}}

// Shared returns the process-wide Cache for path, opening it on the first
// call; later calls with the same cleaned absolute path return the same
// *Cache and ignore opts. A shared Cache lives until the process exits:
// its Close does nothing, so hit slices stay valid across graph rebuilds.
func Shared(path string, opts CacheOptions) *Cache {
	key := path
	if abs, err := filepath.Abs(path); err == nil {
		key = abs
	}
	sharedCaches.Lock()
	defer sharedCaches.Unlock()
	if c := sharedCaches.m[key]; c != nil {
		return c
	}
	c := OpenCache(key, opts)
	c.shared = true
	sharedCaches.m[key] = c
	return c
}

// maxErrors caps the problems a Cache records for Errors (a file of many
// corrupt entries records one per entry).
const maxErrors = 1024

// warn records a problem for Errors and logs it: as a warning the first
// time a problem of its op happens, at debug level after that.
func (c *Cache) warn(op CacheOp, key, msg string, err error) {
	c.note(op, key, msg, err, true)
}

// note is warn; report false logs without recording a problem (a file of
// another format version is replaced, not lost).
func (c *Cache) note(op CacheOp, key, msg string, err error, report bool) {
	c.warnMu.Lock()
	seen := c.warned[op]
	c.warned[op] = true
	if report && len(c.errs) < maxErrors {
		c.errs = append(c.errs, &CacheError{Path: c.path, Op: op, Key: key, Err: err})
	}
	c.warnMu.Unlock()
	args := []any{"path", c.path}
	if key != "" {
		args = append(args, "key", key)
	}
	args = append(args, "err", err)
	if !seen {
		c.log.Warn("prepack: cache "+msg, args...)
	} else {
		c.log.Debug("prepack: cache "+msg, args...)
	}
}

// Errors returns the problems the cache has met since it was opened, in
// the order they happened (a Shared cache's, for the whole process): the
// file's, if it could not be read or was not trusted; each entry that
// failed its checksum or could not be read, once; each failed Save; each
// dropped Put. None of them made a Get return wrong bytes; each is also
// logged.
func (c *Cache) Errors() []*CacheError { return c.ErrorsSince(0) }

// Mark returns a position in the cache's problems for ErrorsSince: the
// number recorded so far. The first Mark of a Cache returns 0, so that its
// first user (of a Shared cache, the first load of the process) is also
// told about the problems of opening the file.
func (c *Cache) Mark() int {
	c.warnMu.Lock()
	defer c.warnMu.Unlock()
	if !c.marked {
		c.marked = true
		return 0
	}
	return len(c.errs)
}

// ErrorsSince returns the problems recorded after Mark returned mark: what
// went wrong during one load, say (and during any other use of the cache
// at the same time).
func (c *Cache) ErrorsSince(mark int) []*CacheError {
	c.warnMu.Lock()
	defer c.warnMu.Unlock()
	return slices.Clone(c.errs[min(max(mark, 0), len(c.errs)):])
}

// load reads the index of the file at c.path, if there is one.
func (c *Cache) load() {
	fi, err := os.Stat(c.path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		// Missing (a path under a regular file cannot exist either: Save
		// reports that it cannot write there).
		return
	}
	if err != nil {
		c.warn(CacheOpen, "", "unreadable; starting empty", err)
		return
	}
	if fi.Size() == 0 {
		return
	}
	unlock := lockPath(c.path+lockSuffix, false)
	defer unlock()
	src, err := openSource(c.path, c.noMmap)
	if err != nil {
		c.warn(CacheOpen, "", "unreadable; starting empty", err)
		return
	}
	idx, err := parse(src, src.size)
	if err != nil {
		src.close()
		if errors.Is(err, errVersion) {
			c.note(CacheOpen, "", "has another format version; ignoring it", err, false)
		} else {
			c.warn(CacheOpen, "", "is corrupt; ignoring it", err)
		}
		return
	}
	c.sources = append(c.sources, src)
	for k, d := range idx.entries {
		c.entries[k] = d.entry(src)
	}
}

// Outcome is what a Lookup found.
type Outcome int

// The outcomes of a Lookup; only Hit returns bytes.
const (
	Miss       Outcome = iota // no entry under the key
	Hit                       // the entry's bytes, verified
	Stale                     // the key is held under another seed
	Corrupt                   // the entry's region failed its checksum
	Unreadable                // the entry's region could not be read
)

var outcomeNames = [...]string{"miss", "hit", "stale", "corrupt", "unreadable"}

func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Get returns the bytes stored under key if they were packed with seed.
// The slice must not be modified: on a mapped file it points into the
// read-only mapping (valid until Close), otherwise it is shared by every
// Get of the key. A key present under another seed is a stale miss; Put
// the new packing to replace it. A region of the file is checked against
// its CRC-32C on its first Get; one that fails is a miss (and so are later
// Gets of it), logged once: Put the repacked bytes to replace it.
func (c *Cache) Get(key string, seed [32]byte) ([]byte, bool) {
	b, o := c.Lookup(key, seed)
	return b, o == Hit
}

// Lookup is Get saying why it missed.
func (c *Cache) Lookup(key string, seed [32]byte) ([]byte, Outcome) {
	// The read lock is held through e.bytes so Close cannot release the
	// file under a first read.
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.entries[key]
	switch {
	case c.closed || e == nil:
		c.misses.Add(1)
		return nil, Miss
	case e.seed != seed:
		c.stale.Add(1)
		c.misses.Add(1)
		return nil, Stale
	}
	b, err := e.bytes()
	if err != nil {
		c.misses.Add(1)
		first := e.logged.CompareAndSwap(false, true)
		if errors.Is(err, ErrCorrupt) {
			c.corrupt.Add(1)
			if first {
				c.warn(CacheVerify, key, "entry failed its checksum; not used", err)
			}
			return nil, Corrupt
		}
		if first {
			c.warn(CacheRead, key, "entry unreadable", err)
		}
		return nil, Unreadable
	}
	c.hits.Add(1)
	if b == nil {
		b = []byte{}
	}
	return b, Hit
}

// Put records data as key's packing under seed, in memory until Save. The
// cache keeps data without copying it: the caller must not modify it
// afterwards. A Put of a key already held under the same seed does nothing,
// unless the held region failed its checksum or could not be read: then
// data replaces it. Keys must be 1..MaxKeyLen bytes; others are logged
// and dropped.
func (c *Cache) Put(key string, seed [32]byte, data []byte) {
	if len(key) == 0 || len(key) > MaxKeyLen {
		c.warn(CachePut, "", "key of bad length dropped", fmt.Errorf("key length %d, want 1..%d", len(key), MaxKeyLen))
		return
	}
	if data == nil {
		data = []byte{}
	}
	e := &entry{seed: seed, size: int64(len(data)), data: data}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if old := c.entries[key]; old != nil && old.seed == seed && !old.bad.Load() {
		return
	}
	if _, ok := c.pending[key]; !ok && len(c.pending) >= MaxEntries {
		c.warn(CachePut, "", "too many entries; Put dropped", fmt.Errorf("%d entries", len(c.pending)))
		return
	}
	c.entries[key] = e
	c.pending[key] = e
}

// DiscardPending drops every entry Put since the last Save, for callers
// whose Put data is about to become invalid after a failed Save.
func (c *Cache) DiscardPending() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.pending {
		if c.entries[k] == e {
			delete(c.entries, k)
		}
		delete(c.pending, k)
	}
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.RLock()
	n := len(c.entries)
	var bytes int64
	for _, e := range c.entries {
		bytes += e.size
	}
	c.mu.RUnlock()
	return CacheStats{
		Hits:    c.hits.Load(),
		Misses:  c.misses.Load(),
		Stale:   c.stale.Load(),
		Corrupt: c.corrupt.Load(),
		Bytes:   bytes,
		Entries: n,
	}
}

// ErrClosed is returned by Save after Close.
var ErrClosed = errors.New("prepack: cache closed")

// Close releases the file mappings; slices from Get must not be used
// afterwards. Close on a Shared cache does nothing.
func (c *Cache) Close() error {
	if c.shared {
		return nil
	}
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	for _, s := range c.sources {
		s.close()
	}
	c.sources, c.entries, c.pending = nil, nil, nil
	return nil
}

// Save writes the entries Put since the last Save to the file (see the
// package doc for how). With nothing new it does nothing at all: the file
// is not opened, its mtime does not change. An error is also logged (as a
// warning the first time) and reported by Errors.
func (c *Cache) Save() error {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return ErrClosed
	}
	if len(c.pending) == 0 {
		c.mu.RUnlock()
		return nil
	}
	pending := make(map[string]*entry, len(c.pending))
	all := make(map[string]*entry, len(c.entries))
	for k, e := range c.pending {
		pending[k] = e
	}
	for k, e := range c.entries {
		all[k] = e
	}
	c.mu.RUnlock()

	src, idx, err := c.write(pending, all)
	if err != nil {
		c.warn(CacheSave, "", "not saved", err)
		return fmt.Errorf("prepack: saving cache %s: %w", c.path, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	entries := make(map[string]*entry, len(idx.entries))
	for k, d := range idx.entries {
		entries[k] = d.entry(src)
	}
	for k, e := range c.pending {
		if pending[k] == e {
			delete(c.pending, k)
		} else {
			entries[k] = e // Put during the Save: still pending
		}
	}
	c.entries = entries
	c.sources = append(c.sources, src)
	return nil
}

// write brings the file up to date under the exclusive lock and returns a
// fresh source for it with its index.
func (c *Cache) write(pending, all map[string]*entry) (*source, *index, error) {
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return nil, nil, err
	}
	unlock, err := lockPathErr(c.path+lockSuffix, true)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	f, err := os.OpenFile(c.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("not a regular file")
	}
	idx, perr := parse(f, fi.Size())
	if perr != nil || fi.Size() == 0 {
		idx = &index{entries: map[string]diskEntry{}}
	}
	// Write every entry the file lacks, and every pending one whose key
	// the file holds under another seed, or under this seed in a region
	// that fails its checksum (a repacking of a corrupt entry; when
	// another process has written the key since, its region is whole and
	// nothing is written).
	var keys []string
	for k, e := range all {
		d, ok := idx.entries[k]
		switch {
		case !ok:
			keys = append(keys, k)
		case pending[k] != e:
		case d.seed != e.seed || !regionIntact(f, d):
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	grown := &index{entries: maps.Clone(idx.entries)}
	for _, k := range keys {
		grown.entries[k] = diskEntry{}
	}
	if n := len(grown.entries); n > MaxEntries {
		return nil, nil, fmt.Errorf("%d entries, more than %d", n, MaxEntries)
	}
	if n := len(encodeIndex(grown)); n > MaxIndexBytes {
		return nil, nil, fmt.Errorf("index of %d bytes, more than %d", n, MaxIndexBytes)
	}
	if len(keys) > 0 {
		if perr == nil {
			err = c.appendEntries(f, idx, keys, all)
		} else {
			err = c.rewrite(idx, keys, all)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	src, err := openSource(c.path, c.noMmap)
	if err != nil {
		return nil, nil, err
	}
	nidx, err := parse(src, src.size)
	if err != nil && !(src.size == 0 && len(keys) == 0) {
		src.close()
		return nil, nil, fmt.Errorf("reading back: %w", err)
	}
	if nidx == nil {
		nidx = &index{entries: map[string]diskEntry{}}
	}
	return src, nidx, nil
}

// regionIntact reports whether d's region in f matches its checksum.
func regionIntact(f io.ReaderAt, d diskEntry) bool {
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(f, d.off, d.size)); err != nil {
		return false
	}
	return h.Sum32() == d.sum
}

// appendEntries writes the entries named by keys after the regions of the
// valid file f, then the new index and footer.
func (c *Cache) appendEntries(f *os.File, idx *index, keys []string, all map[string]*entry) error {
	if _, err := f.Seek(idx.off, io.SeekStart); err != nil {
		return err
	}
	w := &fileWriter{w: bufio.NewWriterSize(f, 64<<10), off: idx.off}
	if err := c.writeRegions(w, idx, keys, all); err != nil {
		return err
	}
	if err := w.w.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil { // regions reach the disk before the index
		return err
	}
	if err := writeIndex(w, idx); err != nil {
		return err
	}
	if err := w.w.Flush(); err != nil {
		return err
	}
	return f.Sync()
}

// rewrite writes a complete new file beside c.path and renames it over it.
func (c *Cache) rewrite(idx *index, keys []string, all map[string]*entry) error {
	dir := filepath.Dir(c.path)
	tmp, err := os.CreateTemp(dir, filepath.Base(c.path)+".tmp*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := &fileWriter{w: bufio.NewWriterSize(tmp, 64<<10)}
	if err := c.writeRegions(w, idx, keys, all); err != nil {
		return err
	}
	if err := writeIndex(w, idx); err != nil {
		return err
	}
	if err := w.w.Flush(); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), c.path); err != nil {
		return err
	}
	ok = true
	if d, err := os.Open(dir); err == nil { // make the rename durable
		d.Sync()
		d.Close()
	}
	return nil
}

// fileWriter tracks the file offset of a buffered writer.
type fileWriter struct {
	w   *bufio.Writer
	off int64
}

var zeros [Align]byte

func (w *fileWriter) write(b []byte) error {
	n, err := w.w.Write(b)
	w.off += int64(n)
	return err
}

func (w *fileWriter) pad() error {
	if r := w.off % Align; r != 0 {
		return w.write(zeros[:Align-r])
	}
	return nil
}

// writeRegions writes each keyed entry's bytes at the next aligned offset
// and records it in idx with its checksum. An entry of the old file whose
// region fails its checksum (or cannot be read) is left out: the next
// load misses it and packs it again.
func (c *Cache) writeRegions(w *fileWriter, idx *index, keys []string, all map[string]*entry) error {
	for _, k := range keys {
		e := all[k]
		b, err := e.bytes()
		if err != nil {
			op := CacheRead
			if errors.Is(err, ErrCorrupt) {
				op = CacheVerify
			}
			if e.logged.CompareAndSwap(false, true) {
				c.warn(op, k, "entry not copied to the new file", err)
			}
			continue
		}
		if err := w.pad(); err != nil {
			return err
		}
		off := w.off
		if err := w.write(b); err != nil {
			return err
		}
		sum := e.sum // verified by e.bytes
		if e.src == nil {
			sum = regionSum(b)
		}
		idx.entries[k] = diskEntry{off: off, size: int64(len(b)), seed: e.seed, sum: sum}
	}
	return w.pad()
}

// writeIndex writes idx's entries and the footer at w's (aligned) offset.
func writeIndex(w *fileWriter, idx *index) error {
	ib := encodeIndex(idx)
	ft := footer(w.off, ib, len(idx.entries), FormatVersion)
	if err := w.write(ib); err != nil {
		return err
	}
	return w.write(ft[:])
}

// encodeIndex encodes the entries sorted by key.
func encodeIndex(idx *index) []byte {
	keys := make([]string, 0, len(idx.entries))
	for k := range idx.entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b []byte
	for _, k := range keys {
		d := idx.entries[k]
		b = binary.LittleEndian.AppendUint64(b, uint64(d.off))
		b = binary.LittleEndian.AppendUint64(b, uint64(d.size))
		b = append(b, d.seed[:]...)
		b = binary.LittleEndian.AppendUint32(b, d.sum)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(k)))
		b = append(b, k...)
	}
	return b
}

// footer builds the footer for an index ib at indexOff.
func footer(indexOff int64, ib []byte, n int, version uint32) [FooterSize]byte {
	var ft [FooterSize]byte
	binary.LittleEndian.PutUint64(ft[0:], uint64(indexOff))
	binary.LittleEndian.PutUint64(ft[8:], uint64(len(ib)))
	binary.LittleEndian.PutUint64(ft[16:], uint64(n))
	binary.LittleEndian.PutUint32(ft[56:], version)
	copy(ft[64:], magic[:])
	sum := checksum(ft[:], ib)
	copy(ft[24:56], sum[:])
	return ft
}

// checksum covers the footer's fields other than the sum, and the index.
func checksum(ft, ib []byte) [32]byte {
	h := sha256.New()
	h.Write(ft[0:24])
	h.Write(ft[56:FooterSize])
	h.Write(ib)
	var s [32]byte
	h.Sum(s[:0])
	return s
}

// index is a parsed (or being written) cache index.
type index struct {
	off     int64 // where the index starts: the append point
	entries map[string]diskEntry
}

type diskEntry struct {
	off, size int64
	seed      [32]byte
	sum       uint32 // CRC-32C of the region
}

func (d diskEntry) entry(src *source) *entry {
	return &entry{seed: d.seed, size: d.size, off: d.off, sum: d.sum, src: src}
}

// errVersion marks a file of another format version.
var errVersion = errors.New("other format version")

// formatError is a reason a cache file is not trusted.
type formatError struct {
	off int64
	msg string
}

func (e *formatError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.msg) }

// Unwrap makes every formatError an ErrCorrupt.
func (e *formatError) Unwrap() error { return ErrCorrupt }

func bad(off int64, format string, args ...any) error {
	return &formatError{off, fmt.Sprintf(format, args...)}
}

// parse reads and checks the footer and index of a cache file of the given
// size. An empty file is a valid empty cache.
func parse(r io.ReaderAt, size int64) (*index, error) {
	indexReads.Add(1)
	if size == 0 {
		return &index{entries: map[string]diskEntry{}}, nil
	}
	if size < FooterSize {
		return nil, bad(0, "file of %d bytes is shorter than the footer", size)
	}
	fo := size - FooterSize
	var ft [FooterSize]byte
	if _, err := r.ReadAt(ft[:], fo); err != nil {
		return nil, bad(fo, "reading footer: %v", err)
	}
	if !bytes.Equal(ft[64:], magic[:]) {
		return nil, bad(fo+64, "bad magic %q", ft[64:])
	}
	if v := binary.LittleEndian.Uint32(ft[56:]); v != FormatVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", errVersion, v, FormatVersion)
	}
	if binary.LittleEndian.Uint32(ft[60:]) != 0 {
		return nil, bad(fo+60, "reserved field not zero")
	}
	ioff := binary.LittleEndian.Uint64(ft[0:])
	ilen := binary.LittleEndian.Uint64(ft[8:])
	n := binary.LittleEndian.Uint64(ft[16:])
	switch {
	case ioff > uint64(fo) || ilen != uint64(fo)-ioff:
		return nil, bad(fo, "index [%d, +%d) does not end at the footer (%d)", ioff, ilen, fo)
	case ioff%Align != 0:
		return nil, bad(fo, "index offset %d not aligned to %d", ioff, Align)
	case n > MaxEntries:
		return nil, bad(fo+16, "%d entries, more than %d", n, MaxEntries)
	case ilen > MaxIndexBytes:
		return nil, bad(fo+8, "index of %d bytes, more than %d", ilen, MaxIndexBytes)
	case n*entryFixed > ilen:
		return nil, bad(fo+16, "%d entries cannot fit in %d index bytes", n, ilen)
	}
	ib := make([]byte, ilen)
	if _, err := r.ReadAt(ib, int64(ioff)); err != nil {
		return nil, bad(int64(ioff), "reading index: %v", err)
	}
	if sum := checksum(ft[:], ib); !bytes.Equal(sum[:], ft[24:56]) {
		return nil, bad(fo+24, "index checksum mismatch")
	}
	idx := &index{off: int64(ioff), entries: make(map[string]diskEntry, n)}
	type span struct{ off, end uint64 }
	spans := make([]span, 0, n)
	p := ib
	for i := uint64(0); i < n; i++ {
		at := int64(ioff) + int64(len(ib)-len(p))
		if len(p) < entryFixed {
			return nil, bad(at, "entry %d truncated", i)
		}
		off := binary.LittleEndian.Uint64(p[0:])
		sz := binary.LittleEndian.Uint64(p[8:])
		var d diskEntry
		copy(d.seed[:], p[16:48])
		d.sum = binary.LittleEndian.Uint32(p[48:])
		kl := int(binary.LittleEndian.Uint16(p[52:]))
		p = p[entryFixed:]
		switch {
		case kl == 0 || kl > MaxKeyLen:
			return nil, bad(at+52, "entry %d: key length %d, want 1..%d", i, kl, MaxKeyLen)
		case kl > len(p):
			return nil, bad(at+52, "entry %d: key runs past the index", i)
		case off%Align != 0:
			return nil, bad(at, "entry %d: offset %d not aligned to %d", i, off, Align)
		case off > ioff || sz > ioff-off:
			return nil, bad(at, "entry %d: region [%d, +%d) overlaps the index at %d", i, off, sz, ioff)
		}
		k := string(p[:kl])
		p = p[kl:]
		if _, dup := idx.entries[k]; dup {
			return nil, bad(at, "entry %d: duplicate key %q", i, k)
		}
		d.off, d.size = int64(off), int64(sz)
		idx.entries[k] = d
		if sz > 0 {
			spans = append(spans, span{off, off + sz})
		}
	}
	if len(p) != 0 {
		return nil, bad(int64(ioff)+int64(len(ib)-len(p)), "%d bytes after the last entry", len(p))
	}
	slices.SortFunc(spans, func(a, b span) int {
		if a.off < b.off {
			return -1
		}
		if a.off > b.off {
			return 1
		}
		return 0
	})
	for i := 1; i < len(spans); i++ {
		if spans[i].off < spans[i-1].end {
			return nil, bad(int64(spans[i].off), "regions overlap")
		}
	}
	return idx, nil
}
