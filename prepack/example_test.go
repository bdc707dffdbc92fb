package prepack_test

import (
	"crypto/sha256"
	"fmt"
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
