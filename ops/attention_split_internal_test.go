package ops

import (
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestChooseAttn pins the attention's kernel table: the gpu family takes
// the split kernel (gpu/attn-split) for one-row attention over a KV cache
// of 1,024 rows or more, and the one-workgroup kernel otherwise (a
// prefill of several rows, a shorter cache, an attention not over a
// cache); the cpu family always keeps the one-workgroup kernel (measured
// faster on lavapipe: BenchmarkAttnKernels); Config.SkipKernels naming
// the split kernel restores the one-workgroup kernel, and is a known name.
func TestChooseAttn(t *testing.T) {
	decode := func(rows int64) attnCall { return attnCall{sq: 1, rows: rows, hq: 32, g: 4, bsz: 1} }
	cases := []struct {
		name    string
		fam     Family
		cfg     Config
		c       attnCall
		maxKeys int64
		want    string
	}{
		{"gpu decode 1024", FamilyGPU, Config{}, decode(1024), 1024, "gpu/attn-split"},
		{"gpu decode 2048", FamilyGPU, Config{}, decode(2048), 2048, "gpu/attn-split"},
		{"gpu decode 1023", FamilyGPU, Config{}, decode(1023), 1023, "any/attn"},
		{"gpu prefill", FamilyGPU, Config{}, attnCall{sq: 3, rows: 2048, hq: 32, g: 4, bsz: 1}, 2048, "any/attn"},
		{"gpu not a cache", FamilyGPU, Config{}, attnCall{sq: 1, hq: 32, g: 4, bsz: 1}, 4096, "any/attn"},
		{"gpu skipped", FamilyGPU, Config{SkipKernels: "gpu/attn-split"}, decode(2048), 2048, "any/attn"},
		{"cpu decode 2048", FamilyCPU, Config{}, decode(2048), 2048, "any/attn"},
	}
	for _, c := range cases {
		if got := chooseAttn(c.fam, c.cfg, c.c, c.maxKeys); got.name != c.want {
			t.Errorf("%s: %s, want %s", c.name, got.name, c.want)
		}
	}
	if !slices.Contains(KernelNames(), "gpu/attn-split") {
		t.Errorf("KernelNames %v lacks gpu/attn-split", KernelNames())
	}
	if err := checkSkipKernels(Config{SkipKernels: "gpu/attn-split"}); err != nil {
		t.Errorf("SkipKernels gpu/attn-split: %v", err)
	}
	for _, op := range []string{"sdpa_with_kv_cache.default", "llama.custom_sdpa.default"} {
		if !slices.Contains(FamilyOps(), op) {
			t.Errorf("FamilyOps lacks %s", op)
		}
	}
}

// TestSplitAttnRecords records a decode attention over a 1,024-row cache
// under the gpu family: two dispatches (the blocks, 16 per kv head, then
// the merge, one workgroup per query row), the first writing a scratch
// tensor the second reads; with the split skipped, one dispatch of one
// workgroup per kv head writing the output.
func TestSplitAttnRecords(t *testing.T) {
	for _, skip := range []string{"", "gpu/attn-split"} {
		r := &scratchRecorder{recorder: &recorder{maxPerDim: 65535, cfg: Config{Family: FamilyGPU, SkipKernels: skip}}}
		c := attnCall{q: 0, k: 1, v: 2, out: 3, mask: -1, bsz: 1, hq: 8, sq: 1, g: 4, nkeys: 700, d: 16, dv: 16, rows: 1024,
			causal: true, causalOff: 699, scale: 0.25,
			qs: attnStrides{128, 16, 128}, ks: attnStrides{32 * 1024, 16, 32}, vs: attnStrides{32 * 1024, 16, 32}, os: attnStrides{128, 16, 128}}
		if err := recordAttention(r, c); err != nil {
			t.Fatalf("skip %q: %v", skip, err)
		}
		if skip != "" && len(r.scratch) != 0 || skip == "" && (len(r.scratch) != 1 || r.scratch[0] != 8*16*5*4) {
			t.Errorf("skip %q: scratch tensors of %v floats, want none skipped, else one of 8 rows × 16 blocks × 5 vec4s", skip, r.scratch)
		}
		if skip != "" {
			if len(r.dispatches) != 1 || r.dispatches[0].out[0] != 3 || r.dispatches[0].groups[0] != 2 {
				t.Errorf("skip %q: dispatches %+v, want one of 2 workgroups writing the output", skip, r.dispatches)
			}
			continue
		}
		if len(r.dispatches) != 2 {
			t.Fatalf("%d dispatches, want 2", len(r.dispatches))
		}
		blocks, merge := r.dispatches[0], r.dispatches[1]
		if blocks.groups[0]*max(blocks.groups[1], 1) != 2*16 || blocks.out[0] == 3 {
			t.Errorf("blocks: grid %v writing %d, want 32 workgroups writing a scratch tensor", blocks.groups, blocks.out[0])
		}
		if merge.in[0] != blocks.out[0] || merge.out[0] != 3 || merge.groups[0] != 8 {
			t.Errorf("merge: reads %v, writes %v, grid %v; want the blocks' scratch in, the output out, 8 workgroups", merge.in, merge.out, merge.groups)
		}
	}
}

// scratchRecorder is a recorder that hands out scratch tensors (ids
// from 100), noting their sizes in floats.
type scratchRecorder struct {
	*recorder
	scratch []int64
}

func (r *scratchRecorder) Scratch(key int, dt serialization.DataType, dims []int64) (Tensor, error) {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	r.scratch = append(r.scratch, n)
	return Tensor{ID: int32(100 + len(r.scratch) - 1), DType: dt, Dims: dims, Numel: n, NBytes: 4 * n}, nil
}
