package llm

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

// EncodeTestDecoder writes cfg's llama decoder (random weights from
// cfg.Seed) as a .pte, and inspects its program. It is exported for the
// llm_test package's tests as well as this package's.
func EncodeTestDecoder(t testing.TB, cfg models.LlamaConfig) (models.Files, ProgramInfo) {
	t.Helper()
	l, err := models.NewLlama(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := models.Encode(l.B, false)
	if err != nil {
		t.Fatal(err)
	}
	info, err := InspectProgram(f.PTE)
	if err != nil {
		t.Fatal(err)
	}
	return f, info
}

// LoadTestModel loads pte as a plain Model, closed when t ends.
func LoadTestModel(t testing.TB, pte []byte) *wgdelegate.Model {
	t.Helper()
	m, err := wgdelegate.Load(context.Background(), pte)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// LoadTestDecoder loads cfg's decoder (EncodeTestDecoder) as a plain
// Model, closed when t ends, with its ProgramInfo and files; every call
// gives the same weights.
func LoadTestDecoder(t testing.TB, cfg models.LlamaConfig) (*wgdelegate.Model, ProgramInfo, models.Files) {
	t.Helper()
	f, info := EncodeTestDecoder(t, cfg)
	return LoadTestModel(t, f.PTE), info, f
}

// NewTestRunner is a Runner on a load of cfg's decoder of its own (what
// a session's tokens are checked against), closed when t ends.
func NewTestRunner(t testing.TB, cfg models.LlamaConfig) *Runner {
	t.Helper()
	m, info, _ := LoadTestDecoder(t, cfg)
	r, err := New(m, info)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// NewTestPool is a Pool of sessions on m, closed when t ends.
func NewTestPool(t testing.TB, m *wgdelegate.Model, info ProgramInfo, o SessionOptions) *Pool {
	t.Helper()
	p, err := NewPool(m, info, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
