package wgdelegate_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/wgdelegate/wgdelegate"
)

// ExampleModel_PackedCacheErrors loads a model through a packed-weight
// cache and tells the user what went wrong with the cache, if anything:
// the load itself succeeds either way.
func ExampleModel_PackedCacheErrors() {
	ctx := context.Background()
	m, err := wgdelegate.Open(ctx, "model.pte", wgdelegate.WithPackedCache("/var/cache/wgdelegate"))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	for _, e := range m.PackedCacheErrors() {
		switch {
		case errors.Is(e, wgdelegate.ErrPackedCacheCorrupt):
			fmt.Fprintln(os.Stderr, "warning: corrupt packed weights were packed again:", e)
		case e.Op == wgdelegate.PackedCacheSave:
			fmt.Fprintln(os.Stderr, "warning: packed weights not kept:", e)
		default:
			fmt.Fprintln(os.Stderr, "warning:", e)
		}
	}
	st := m.PackedCacheStats()
	fmt.Printf("%d packed weights from the cache, %d packed now (%d of them corrupt in the cache)\n", st.Hits, st.Misses, st.Corrupt)
}
