// Package prepack decides which constants are prepacked and how their bytes
// reach the GPU, and keeps packed weights in a file cache across runs.
//
// # Deferred constants
//
// The exporter inserts et_vk.prepack.default(constant) -> out before every
// consumer of a constant that does not pack its own weights (section 3.9 of
// the format notes). The out tensor is dedicated (mem_obj_id -1) and
// persistent. A constant whose only uses are such prepacks needs no GPU
// buffer of its own: its bytes are written once, from the memory-mapped file,
// straight into each prepack output (graph.Build creates the output's buffer
// with those bytes: a direct upload on a CPU adapter, queue writes
// otherwise). Ops that pack their own
// weights (linear, mm, ...) receive the constant directly, so it keeps a
// buffer.
//
// # Packed-weight cache
//
// A Cache maps a key (for example the SHA-256 hex of a weight's bytes plus
// the name of the packing variant) to the packed bytes, tagged with a
// 32-byte seed: the content ID of the packing kernel and its parameters. A
// Get with a different seed is a miss (counted as stale) and the next Put
// and Save replace the entry. Hits are sub-slices of a read-only memory
// mapping of the cache file, so a hit costs no copy and can be handed
// straight to a GPU queue write. The slices must not be written to (the
// pages are mapped PROT_READ; a write faults) and must not be used after
// Close.
//
// Every region is checked against the CRC-32C its index entry records
// before a Get returns it, on the entry's first Get only (the verdict is
// kept for as long as the entry is: the Cache's life, or until the next
// Save re-reads the index), so a load pays for the regions it uses and
// repeated Gets do not hash again. A region that fails is a miss, counted
// in CacheStats.Corrupt as well as Misses, logged once (later ones at
// debug level) and reported by Errors; it is never returned. The caller
// packs the weight again and Puts it, which replaces the entry although
// the seed is the same, and the next Save writes it (the bad region stays
// behind, dead). CRC-32C runs on the CPU's CRC32 instruction (hash/crc32
// on amd64 and arm64); on a busy 2-core host it hashed 6–8 GB/s of bytes
// in cache, 1.5–2.2 GB/s of a 64 MiB buffer, which is what a copy of the
// bytes costs there too: one more pass over the bytes a load takes from
// the cache (BenchmarkCacheGet; the cost per load is in the README's
// "packed-weight cache" section). Hashing each chunk just before the
// upload copies it would save little (10 of 43 ms for 64 MiB there).
//
// One file holds one cache. All integers are little-endian:
//
//	[packed regions][index][footer]
//
//	region   the packed bytes of one entry, starting at a multiple of
//	         Align (256) bytes; the gaps between regions are zero padding
//	         (or dead regions of replaced entries, which nothing points to)
//	index    starts at a multiple of Align, right after the last region;
//	         entryCount entries, back to back, sorted by key:
//	           u64 offset   file offset of the region (a multiple of Align)
//	           u64 size     region length in bytes
//	           [32]byte     seed
//	           u32 crc      CRC-32C (Castagnoli) of the region's bytes
//	           u16 keyLen   1..MaxKeyLen
//	           keyLen bytes the key
//	footer   FooterSize (72) bytes, the last bytes of the file:
//	           0  u64 indexOffset
//	           8  u64 indexLen     index bytes; indexOffset+indexLen+72 == file size
//	           16 u64 entryCount   at most MaxEntries
//	                               (and indexLen at most MaxIndexBytes)
//	           24 [32]byte sum     SHA-256 of footer[0:24] || footer[56:72] || index
//	           56 u32 version      FormatVersion
//	           60 u32 reserved     zero
//	           64 [8]byte magic    "WGDPACK\n"
//
// A file is trusted only if every check passes: the magic, the version, the
// sizes adding up, the checksum, every region aligned and inside
// [0, indexOffset), no two regions overlapping, no key twice, no bytes left
// over in the index. Anything else (truncation at any byte, a flipped bit in
// the index or footer, a file of another format version, such as version 1,
// which had no region checksums) makes the whole file count as empty: the
// problem is logged once and the next Save writes a fresh file. A flipped
// bit in a region fails that entry alone (see above); one in the padding
// between regions changes nothing.
//
// # Writing
//
// Save appends. Under an exclusive flock on the sibling file path+".lock"
// it re-reads the current index (another process may have appended since
// Open), writes only the entries whose keys are new or whose seeds changed,
// starting at the old indexOffset (over the old index and footer: the old
// regions stay where they are), fsyncs, then writes the new full index and
// footer and fsyncs again. A crash part-way leaves a file whose last bytes
// are not a valid footer, or whose checksum fails, so it reads as empty,
// never as wrong bytes. When the current file is not valid (missing,
// corrupt, another version) Save writes a complete new file next to it and
// renames it into place, so a process that still maps the old file keeps
// valid pages. Regions are never rewritten in place, so the pages a Get
// handed out never change under the caller. Replaced entries leave dead
// regions behind; there is no compaction (delete the file to reclaim the
// space).
//
// Readers take a shared lock on the same lock file while they read the
// index, so they never see an index half written. Where flock is not
// available, or the lock file cannot be created, reads proceed unlocked
// (a torn read fails the checksum and counts as empty).
//
// # Degrading
//
// OpenCache never fails: an unreadable, corrupt or foreign file, or a
// directory that cannot be written, is logged once and the Cache carries on
// with what it has (in the worst case an in-memory cache that Save cannot
// persist; Save then returns the error). Each kind of problem is logged as
// a warning once, later ones at debug level. Errors lists what went wrong,
// as *CacheError values, for callers that tell their user (the wgdelegate
// command prints one line per kind of problem); Mark and ErrorsSince give
// the problems of one load of a Shared cache. A file of another format
// version is replaced without being counted as a problem. Where mmap is not available (or
// CacheOptions.NoMmap is set) the file is read with ordinary reads, each
// entry on its first hit.
//
// Save creates the file's directory if it is missing.
//
// Shared returns one Cache per cleaned absolute path (symbolic links are
// not resolved) for the whole process, so the index is read once per
// process and hit slices stay valid across a graph's Close and rebuild; a
// shared Cache is never unmapped.
package prepack
