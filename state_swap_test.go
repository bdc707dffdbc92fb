package wgdelegate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

// swapCfg is models.TinyLlama, a two-layer GQA llama with a 16-position
// cache and up to 4 tokens per Execute.
var swapCfg = models.TinyLlama

// TestStateClaimSwap: two sequences take turns in one model through the
// claim's Save and Restore; each step's logits equal, bit for bit, those
// of a model that runs the sequence alone. Both cache op styles, float32
// and half caches.
func TestStateClaimSwap(t *testing.T) {
	ctx := context.Background()
	for _, split := range []bool{false, true} {
		for _, half := range []bool{false, true} {
			t.Run(fmt.Sprintf("split=%v/half=%v", split, half), func(t *testing.T) {
				cfg := swapCfg
				cfg.SplitCache = split
				l, err := models.NewLlama(cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				opt := wgdelegate.WithKernels(wgdelegate.KernelConfig{HalfKVCache: half})
				m, err := load(t, l.B, opt)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				aloneA, err := load(t, l.B, opt)
				if err != nil {
					t.Fatal(err)
				}
				defer aloneA.Close()
				aloneB, err := load(t, l.B, opt)
				if err != nil {
					t.Fatal(err)
				}
				defer aloneB.Close()
				if st := m.StateTensors(); len(st) != 2*int(cfg.Layers) {
					t.Fatalf("state %+v, want a k and a v cache per layer", st)
				}
				elem := int64(4)
				if half {
					elem = 2
				}
				row := 2 * cfg.Layers * cfg.KVHeads * cfg.HeadDim() * elem // k and v, every layer
				if got := m.StatePrefixBytes(3); got != 3*row {
					t.Errorf("StatePrefixBytes(3) = %d, want %d", got, 3*row)
				}
				claim, err := m.ClaimState("test")
				if err != nil {
					t.Fatal(err)
				}
				defer claim.Release()
				a, err := claim.NewStore()
				if err != nil {
					t.Fatal(err)
				}
				defer a.Release()
				b, err := claim.NewStore()
				if err != nil {
					t.Fatal(err)
				}
				defer b.Release()
				if a.Bytes() != m.StateBytes() || a.Buffers() != 2*int(cfg.Layers) {
					t.Errorf("store: %d bytes in %d buffers, want %d in %d", a.Bytes(), a.Buffers(), m.StateBytes(), 2*cfg.Layers)
				}
				step := func(what string, alone *wgdelegate.Model, tokens []int32, pos int64) {
					t.Helper()
					got, err := m.Execute(ctx, l.Inputs(tokens, pos)...)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					want, err := alone.Execute(ctx, l.Inputs(tokens, pos)...)
					if err != nil {
						t.Fatalf("%s alone: %v", what, err)
					}
					if !bytes.Equal(got[0].Data, want[0].Data) {
						t.Errorf("%s: logits differ from the sequence run alone", what)
					}
				}
				copied := func(n, got int64, err error) {
					t.Helper()
					if err != nil {
						t.Fatal(err)
					}
					if got != n*row {
						t.Errorf("copied %d bytes for %d positions, want %d", got, n, n*row)
					}
				}
				step("A prefill", aloneA, []int32{1, 7, 3}, 0)
				n, err := claim.Save(a, 3)
				copied(3, n, err)
				step("B prefill", aloneB, []int32{1, 9, 9, 2}, 0)
				step("B prefill 2", aloneB, []int32{5}, 4)
				n, err = claim.Save(b, 5)
				copied(5, n, err)
				n, err = claim.Restore(a, 3)
				copied(3, n, err)
				step("A decode", aloneA, []int32{4}, 3)
				n, err = claim.Save(a, 4)
				copied(4, n, err)
				// A fork of B continues as B.
				c, err := claim.NewStore()
				if err != nil {
					t.Fatal(err)
				}
				defer c.Release()
				n, err = claim.Copy(c, b, 5)
				copied(5, n, err)
				n, err = claim.Restore(c, 5)
				copied(5, n, err)
				step("B decode (forked)", aloneB, []int32{6}, 5)
			})
		}
	}
}

// TestStateClaimRejected: a released claim, a store of another model, a
// released store and a closed model are errors.
func TestStateClaimRejected(t *testing.T) {
	l, err := models.NewLlama(swapCfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := load(t, l.B)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	other, err := load(t, l.B)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	oc, err := other.ClaimState("other")
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Release()
	foreign, err := oc.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Release()

	c, err := m.ClaimState("test")
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name string
		err  error
	}{
		{"save into another model's store", func() error { _, err := c.Save(foreign, 1); return err }()},
		{"restore from nil", func() error { _, err := c.Restore(nil, 1); return err }()},
		{"copy from another model's store", func() error { _, err := c.Copy(s, foreign, 1); return err }()},
		{"copy into another model's store", func() error { _, err := c.Copy(foreign, s, 1); return err }()},
	} {
		if !errors.Is(r.err, wgdelegate.ErrStateStore) {
			t.Errorf("%s: %v, want ErrStateStore", r.name, r.err)
		}
	}
	s.Release()
	s.Release()
	if _, err := c.Save(s, 1); !errors.Is(err, wgdelegate.ErrStateStore) {
		t.Errorf("save into a released store: %v, want ErrStateStore", err)
	}
	c.Release()
	if _, err := c.NewStore(); !errors.Is(err, wgdelegate.ErrStateStore) {
		t.Errorf("NewStore on a released claim: %v, want ErrStateStore", err)
	}
	var none *wgdelegate.StateClaim
	if _, err := none.Save(foreign, 1); !errors.Is(err, wgdelegate.ErrStateStore) {
		t.Errorf("Save on a nil claim: %v, want ErrStateStore", err)
	}
	c2, err := m.ClaimState("again")
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := c2.NewStore(); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Errorf("NewStore on a closed model: %v, want ErrClosed", err)
	}
	if st := m.StateTensors(); st != nil {
		t.Errorf("a closed model's state: %+v", st)
	}
}
