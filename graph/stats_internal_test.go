package graph

import (
	"reflect"
	"testing"
)

// TestStatsAdd: Add sums every field of the stats a model sums over its
// graphs, and takes the device's pipeline and shader counts as they are.
func TestStatsAdd(t *testing.T) {
	check := func(name string, s, o any, add func(), take ...string) {
		t.Helper()
		sv, ov := reflect.ValueOf(s).Elem(), reflect.ValueOf(o).Elem()
		for i := range sv.NumField() {
			sv.Field(i).SetInt(int64(i + 1))
			ov.Field(i).SetInt(int64(100 * (i + 1)))
		}
		add()
		for i := range sv.NumField() {
			f := sv.Type().Field(i).Name
			want := int64(101 * (i + 1))
			for _, tk := range take {
				if f == tk {
					want = int64(100 * (i + 1))
				}
			}
			if got := sv.Field(i).Int(); got != want {
				t.Errorf("%s.%s: %d after Add, want %d", name, f, got, want)
			}
		}
	}
	var m, mo MemoryStats
	check("MemoryStats", &m, &mo, func() { m.Add(mo) }, "NumCachedPipelines", "NumCachedShaders")
	var r, ro RecordStats
	check("RecordStats", &r, &ro, func() { r.Add(ro) })
	var p, po PackedCacheStats
	check("PackedCacheStats", &p, &po, func() { p.Add(po) })
}
