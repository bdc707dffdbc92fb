package opstest

import (
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
)

// TestSelectAlias checks that a select_copy from a dim of size 1 records
// no dispatch (a view of its input) and one with NoViewAliasing, under
// both memory plans, and that both forms match the reference.
func TestSelectAlias(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	n := 0
	for _, c := range Cases {
		if !strings.HasPrefix(c.Name, "select_alias/") {
			continue
		}
		n++
		saved := selectAliasCases[c.Name]
		t.Run(c.Name, func(t *testing.T) {
			alias, copies := ops.Config{}, ops.Config{NoViewAliasing: true}
			for _, exporter := range []bool{false, true} {
				g, _, nops := buildCase(t, dev, c, alias, exporter)
				na := len(g.Dispatches())
				g.Close()
				g, _, _ = buildCase(t, dev, c, copies, exporter)
				nc := len(g.Dispatches())
				g.Close()
				if nc != nops || nc-na != saved {
					t.Errorf("exporter plan %v: %d dispatches aliasing, %d copying (%d ops): want %d saved", exporter, na, nc, nops, saved)
				}
			}
			for _, cfg := range []ops.Config{alias, copies} {
				if err := RunCase(GPU{Dev: dev, Kernels: cfg}, c, 1); err != nil {
					t.Errorf("NoViewAliasing %v: %v", cfg.NoViewAliasing, err)
				}
			}
		})
	}
	if n != len(selectAliasCases) {
		t.Errorf("%d select_alias cases, want %d", n, len(selectAliasCases))
	}
}
