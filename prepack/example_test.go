package prepack_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/wgdelegate/wgdelegate/prepack"
)

// A packing is looked up by the weight's key and the packing kernel's
// seed; on a miss it is packed, Put, and saved for the next run.
func ExampleCache() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "packed.wgdpack")
	weight := []byte{1, 2, 3, 4}
	key := fmt.Sprintf("%x/transpose", sha256.Sum256(weight))
	seed := sha256.Sum256([]byte("transpose.wgsl v1, wg=64"))

	for run := 1; run <= 2; run++ {
		c := prepack.OpenCache(path, prepack.CacheOptions{})
		packed, ok := c.Get(key, seed)
		if !ok {
			packed = []byte{1, 3, 2, 4} // the packing kernel's output
			c.Put(key, seed, packed)
			if err := c.Save(); err != nil {
				fmt.Println(err)
			}
		}
		fmt.Println("run", run, "hit:", ok, packed)
		c.Close()
	}
	// Output:
	// run 1 hit: false [1 3 2 4]
	// run 2 hit: true [1 3 2 4]
}

// A region of the cache file that no longer matches its checksum is never
// returned: Lookup says it is corrupt, the caller packs the weight again
// and Puts it, and the next Save rewrites the entry.
func ExampleCache_Lookup() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "packed.wgdpack")
	seed := sha256.Sum256([]byte("transpose.wgsl v1"))
	packed := []byte{1, 3, 2, 4}
	quiet := prepack.CacheOptions{Logger: slog.New(slog.DiscardHandler)}

	c := prepack.OpenCache(path, quiet)
	c.Put("w", seed, packed)
	c.Save()
	c.Close()

	b, _ := os.ReadFile(path)
	b[2] ^= 0xff // the first region starts the file
	os.WriteFile(path, b, 0o644)

	c = prepack.OpenCache(path, quiet)
	got, o := c.Lookup("w", seed)
	fmt.Println(o, got, c.Stats().Corrupt)
	for _, e := range c.Errors() {
		fmt.Println(e.Op, e.Key, errors.Is(e, prepack.ErrCorrupt))
	}
	c.Put("w", seed, packed) // packed again
	c.Save()
	c.Close()

	c = prepack.OpenCache(path, quiet)
	defer c.Close()
	got, o = c.Lookup("w", seed)
	fmt.Println(o, got)
	// Output:
	// corrupt [] 1
	// verify w true
	// hit [1 3 2 4]
}
