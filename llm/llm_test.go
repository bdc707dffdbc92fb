package llm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// testCfg is models.TinyLlama, a small two-layer GQA llama: 4 query
// heads over 2 key/value heads of 8, a 16-position cache, up to 4 tokens
// per Execute.
var testCfg = models.TinyLlama

// layouts are the calling conventions the tests write.
var layouts = []struct {
	name   string
	layout models.LlamaLayout
	want   llm.Convention
}{
	{"tensor-pos-last-logits", models.LlamaLayout{}, llm.Convention{TokenType: wgdelegate.Int32, MaxTokens: 4, PosType: wgdelegate.Int64, Vocab: 40, MaxSeqLen: 16}},
	{"symint-pos-last-logits", models.LlamaLayout{SymIntPos: true}, llm.Convention{TokenType: wgdelegate.Int32, MaxTokens: 4, PosSymInt: true, PosType: wgdelegate.Int64, Vocab: 40, MaxSeqLen: 16}},
	{"symint-pos-all-logits", models.LlamaLayout{AllLogits: true}, llm.Convention{TokenType: wgdelegate.Int32, MaxTokens: 4, PosSymInt: true, PosType: wgdelegate.Int64, AllLogits: true, Vocab: 40, MaxSeqLen: 16}},
}

// load writes v as a .pte + .ptd and opens it with llm.Load.
func load(t *testing.T, v *models.LlamaVariant) *llm.Runner {
	t.Helper()
	f, err := models.Encode(v.B, true)
	if err != nil {
		t.Fatal(err)
	}
	r, err := llm.Load(context.Background(), f.PTE, wgdelegate.WithData(f.PTD))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// loadTwice loads testCfg's decoder in layout twice: one runner to
// check, one to compare it with.
func loadTwice(t *testing.T, layout models.LlamaLayout) (*llm.Runner, *llm.Runner) {
	t.Helper()
	v, err := models.NewLlamaLayout(testCfg, nil, layout)
	if err != nil {
		t.Fatal(err)
	}
	return load(t, v), load(t, v)
}

// loadTestCfg is load of testCfg's decoder in the default layout.
func loadTestCfg(t *testing.T) *llm.Runner {
	t.Helper()
	v, err := models.NewLlamaLayout(testCfg, nil, models.LlamaLayout{})
	if err != nil {
		t.Fatal(err)
	}
	return load(t, v)
}

// lastRow returns the last position's logits of a reference output
// ([1, V] or [1, S, V]) as a [1, V] tensor.
func lastRow(want *reference.Tensor, vocab int64) *reference.Tensor {
	out := reference.New(want.DType, []int64{1, vocab})
	copy(out.V, want.V[int64(len(want.V))-vocab:])
	return out
}

// TestConventionsAgainstReference detects each calling convention, for
// float and 4-bit (linear_q4gsw) weights, then runs a 6-token prompt
// (prefilled in chunks of 4 + 2) and 8 greedy steps through Forward,
// checking every step's logits against the reference replay, and checks
// that Generate gives the same tokens with the prompt prefilled in chunks
// and fed one token per Execute.
func TestConventionsAgainstReference(t *testing.T) {
	ctx := context.Background()
	for _, q4 := range []int64{0, 16} {
		for _, lc := range layouts {
			t.Run(fmt.Sprintf("%s/q4=%d", lc.name, q4), func(t *testing.T) {
				cfg := testCfg
				cfg.Q4Group = q4
				v, err := models.NewLlamaLayout(cfg, nil, lc.layout)
				if err != nil {
					t.Fatal(err)
				}
				r := load(t, v)
				if got := r.Convention(); got != lc.want {
					t.Fatalf("convention %+v, want %+v", got, lc.want)
				}
				ref := v.NewReference()
				prompt := []int32{1, 7, 23, 5, 39, 0}
				// Forward chunks the prompt itself (4 + 2 tokens); the
				// reference replays the same chunks.
				logits, err := r.Forward(ctx, prompt)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ref.Step(prompt[:4], 0); err != nil {
					t.Fatal(err)
				}
				toks, pos := prompt[4:], int64(4)
				var greedy []int32
				for step := 0; ; step++ {
					want, err := ref.Step(toks, pos)
					if err != nil {
						t.Fatal(err)
					}
					pos += int64(len(toks))
					if r.Pos() != pos {
						t.Fatalf("step %d: Pos %d, want %d", step, r.Pos(), pos)
					}
					got := wgdelegate.FromFloat32([]int64{1, cfg.Vocab}, logits)
					if _, err := models.Compare(got, lastRow(want, cfg.Vocab), models.Tolerance{Abs: 1e-4, Rel: 1e-4}); err != nil {
						t.Fatalf("step %d (pos %d): logits: %v", step, pos, err)
					}
					greedy = append(greedy, models.Argmax(logits, int(cfg.Vocab)))
					if step == 8 {
						break
					}
					toks = greedy[len(greedy)-1:]
					if logits, err = r.Forward(ctx, toks); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
				}
				for _, chunk := range []int{0, 1, 3} {
					r.Reset()
					res, err := r.Generate(ctx, prompt, llm.GenerateOptions{MaxNewTokens: len(greedy), PrefillChunk: chunk})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(res.Tokens, greedy) {
						t.Fatalf("PrefillChunk %d: Generate %v, Forward greedy %v", chunk, res.Tokens, greedy)
					}
					if s := res.Stats; s.PromptTokens != len(prompt) || s.GeneratedTokens != len(greedy) || s.DecodeSteps != len(greedy)-1 {
						t.Fatalf("stats %+v", s)
					}
				}
			})
		}
	}
}

// TestPrefillEqualsOneByOne: greedy generation after a prefill of T
// tokens in one Execute equals the generation after feeding them one
// Execute at a time, and a sequence continued by a second Generate equals
// one long Generate.
func TestPrefillEqualsOneByOne(t *testing.T) {
	ctx := context.Background()
	r := loadTestCfg(t)
	prompt := []int32{3, 14, 15, 9}
	all, err := r.Generate(ctx, prompt, llm.GenerateOptions{MaxNewTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	r.Reset()
	one, err := r.Generate(ctx, prompt, llm.GenerateOptions{MaxNewTokens: 10, PrefillChunk: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(all.Tokens, one.Tokens) {
		t.Fatalf("prefill in one Execute: %v; one token per Execute: %v", all.Tokens, one.Tokens)
	}
	r.Reset()
	first, err := r.Generate(ctx, prompt, llm.GenerateOptions{MaxNewTokens: 4})
	if err != nil {
		t.Fatal(err)
	}
	rest, err := r.Generate(ctx, nil, llm.GenerateOptions{MaxNewTokens: 6})
	if err != nil {
		t.Fatal(err)
	}
	if got := append(first.Tokens, rest.Tokens...); !slices.Equal(got, all.Tokens) {
		t.Fatalf("continued: %v, in one: %v", got, all.Tokens)
	}
	if r.Pos() != int64(len(prompt)+10-1) {
		t.Fatalf("Pos %d after %d prompt and 10 new tokens", r.Pos(), len(prompt))
	}
	// Forward feeds the last generated token first, as Generate would.
	r.Reset()
	if _, err := r.Generate(ctx, prompt, llm.GenerateOptions{MaxNewTokens: 4}); err != nil {
		t.Fatal(err)
	}
	logits, err := r.Forward(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := models.Argmax(logits, int(testCfg.Vocab)); got != all.Tokens[4] || r.Pos() != int64(len(prompt)+4) {
		t.Fatalf("Forward after Generate: token %d at Pos %d, want %d at %d", got, r.Pos(), all.Tokens[4], len(prompt)+4)
	}
	if _, err := r.Forward(ctx, nil); !errors.Is(err, llm.ErrOption) {
		t.Fatalf("Forward with nothing to feed: %v", err)
	}
}

// TestGenerateControls: stop tokens, streaming (callback and iterator,
// broken early), cancellation, deterministic seeded sampling, and
// generating to the end of the cache.
func TestGenerateControls(t *testing.T) {
	ctx := context.Background()
	r := loadTestCfg(t)
	prompt := []int32{2, 4, 6}
	full, err := r.Generate(ctx, prompt, llm.GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := int(testCfg.MaxSeq) - len(prompt) + 1; len(full.Tokens) != want || full.Stop != -1 {
		t.Fatalf("MaxNewTokens 0: %d tokens (stop %d), want %d: to the end of the cache", len(full.Tokens), full.Stop, want)
	}

	t.Run("stop", func(t *testing.T) {
		k := 3
		stop := full.Tokens[k]
		k = slices.Index(full.Tokens, stop)
		r.Reset()
		var streamed []int32
		res, err := r.Generate(ctx, prompt, llm.GenerateOptions{MaxNewTokens: 12, StopTokens: []int32{stop},
			OnToken: func(tok int32) error { streamed = append(streamed, tok); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stop != stop || !slices.Equal(res.Tokens, full.Tokens[:k]) || !slices.Equal(streamed, res.Tokens) {
			t.Fatalf("stop at %d: %v (stop %d), streamed %v; want %v", stop, res.Tokens, res.Stop, streamed, full.Tokens[:k])
		}
	})
	t.Run("stream", func(t *testing.T) {
		r.Reset()
		var got []int32
		for tok, err := range r.Stream(ctx, prompt, llm.GenerateOptions{MaxNewTokens: 10}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tok)
			if len(got) == 5 {
				break
			}
		}
		if !slices.Equal(got, full.Tokens[:5]) {
			t.Fatalf("streamed %v, want %v", got, full.Tokens[:5])
		}
		if s := r.LastStats(); s.GeneratedTokens != 5 {
			t.Fatalf("LastStats %+v after 5 streamed tokens", s)
		}
		r.Reset()
		var errs int
		for _, err := range r.Stream(ctx, prompt, llm.GenerateOptions{Temperature: -1}) {
			if !errors.Is(err, llm.ErrOption) {
				t.Fatalf("stream with temperature -1: %v", err)
			}
			errs++
		}
		if errs != 1 {
			t.Fatalf("%d errors streamed, want 1", errs)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		r.Reset()
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		res, err := r.Generate(cctx, prompt, llm.GenerateOptions{MaxNewTokens: 10, OnToken: func(tok int32) error {
			cancel()
			return nil
		}})
		if !errors.Is(err, context.Canceled) || len(res.Tokens) != 1 {
			t.Fatalf("cancelled after the first token: %d tokens, err %v", len(res.Tokens), err)
		}
		callbackErr := errors.New("enough")
		r.Reset()
		if _, err := r.Generate(ctx, prompt, llm.GenerateOptions{OnToken: func(int32) error { return callbackErr }}); !errors.Is(err, callbackErr) {
			t.Fatalf("OnToken error: got %v", err)
		}
	})
	t.Run("penalties", func(t *testing.T) {
		// A presence penalty far above any logit, over the whole
		// history, makes greedy decoding pick a token it has not seen
		// yet, in the prompt or in its own output, at every step.
		r.Reset()
		res, err := r.Generate(ctx, prompt, llm.GenerateOptions{PresencePenalty: 1e6, RepeatLastN: -1})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int32]bool{}
		for _, tok := range prompt {
			seen[tok] = true
		}
		for i, tok := range res.Tokens {
			if seen[tok] {
				t.Fatalf("token %d (%d) repeats the prompt %v or the output %v", i, tok, prompt, res.Tokens[:i])
			}
			seen[tok] = true
		}
		// Without it, this model's greedy output repeats (or the test
		// above proves nothing).
		seen = map[int32]bool{}
		repeats := false
		for _, tok := range append(slices.Clone(prompt), full.Tokens...) {
			repeats = repeats || seen[tok]
			seen[tok] = true
		}
		if !repeats {
			t.Fatalf("greedy output %v after %v has no repeat to remove", full.Tokens, prompt)
		}
	})
	t.Run("seeded", func(t *testing.T) {
		opts := llm.GenerateOptions{MaxNewTokens: 10, Temperature: 1.5, TopP: 0.95, Seed: 42}
		var runs [2][]int32
		for i := range runs {
			r.Reset()
			res, err := r.Generate(ctx, prompt, opts)
			if err != nil {
				t.Fatal(err)
			}
			runs[i] = res.Tokens
		}
		if !slices.Equal(runs[0], runs[1]) {
			t.Fatalf("same seed, different tokens: %v and %v", runs[0], runs[1])
		}
	})
}

// TestErrors checks each rejection: a model that is not a decoder, a
// prompt longer than the cache, a position past its end, a token outside
// the vocabulary, bad options.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("not-a-decoder", func(t *testing.T) {
		mlp := models.NewMLP(models.DefaultMLP)
		f, err := models.Encode(mlp.B, false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = llm.Load(ctx, f.PTE)
		var nd *llm.NotDecoderError
		if !errors.Is(err, llm.ErrNotDecoder) || !errors.As(err, &nd) {
			t.Fatalf("MLP: got %v, want a *NotDecoderError", err)
		}
		m, err := wgdelegate.Load(ctx, f.PTE)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if _, err := llm.New(m, llm.ProgramInfo{MaxSeqLen: 8}); !errors.Is(err, llm.ErrNotDecoder) {
			t.Fatalf("New on an MLP: %v", err)
		}
	})
	v, err := models.NewLlamaLayout(testCfg, nil, models.LlamaLayout{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := models.Encode(v.B, false)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wgdelegate.Load(ctx, f.PTE)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	t.Run("no-cache-length", func(t *testing.T) {
		if _, err := llm.New(m, llm.ProgramInfo{}); !errors.Is(err, llm.ErrNotDecoder) {
			t.Fatalf("New without MaxSeqLen: %v", err)
		}
	})
	info, err := llm.InspectProgram(f.PTE)
	if err != nil || info.MaxSeqLen != testCfg.MaxSeq {
		t.Fatalf("InspectProgram: %+v, %v; want MaxSeqLen %d", info, err, testCfg.MaxSeq)
	}
	r, err := llm.New(m, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	long := make([]int32, testCfg.MaxSeq+1)
	for _, tc := range []struct {
		name string
		run  func() error
		want error
	}{
		{"prompt-too-long", func() error { _, err := r.Generate(ctx, long, llm.GenerateOptions{MaxNewTokens: 1}); return err }, llm.ErrPromptTooLong},
		{"forward-too-long", func() error { _, err := r.Forward(ctx, long); return err }, llm.ErrPromptTooLong},
		{"past-end-generate", func() error {
			_, err := r.Generate(ctx, long[:4], llm.GenerateOptions{MaxNewTokens: int(testCfg.MaxSeq) - 2})
			return err
		}, llm.ErrPositionPastEnd},
		{"token-range", func() error { _, err := r.Forward(ctx, []int32{1, int32(testCfg.Vocab)}); return err }, llm.ErrTokenRange},
		{"negative-token", func() error { _, err := r.Forward(ctx, []int32{-1}); return err }, llm.ErrTokenRange},
		{"temperature", func() error {
			_, err := r.Generate(ctx, []int32{1}, llm.GenerateOptions{Temperature: -0.5})
			return err
		}, llm.ErrOption},
		{"top-p", func() error { _, err := r.Generate(ctx, []int32{1}, llm.GenerateOptions{TopP: 1.5}); return err }, llm.ErrOption},
		{"top-k", func() error { _, err := r.Generate(ctx, []int32{1}, llm.GenerateOptions{TopK: -1}); return err }, llm.ErrOption},
		{"min-p", func() error { _, err := r.Generate(ctx, []int32{1}, llm.GenerateOptions{MinP: 2}); return err }, llm.ErrOption},
		{"repeat-penalty", func() error {
			_, err := r.Generate(ctx, []int32{1}, llm.GenerateOptions{RepeatPenalty: -1})
			return err
		}, llm.ErrOption},
		{"repeat-last-n", func() error {
			_, err := r.Generate(ctx, []int32{1}, llm.GenerateOptions{RepeatLastN: -5})
			return err
		}, llm.ErrOption},
		{"empty-prompt", func() error { _, err := r.Generate(ctx, nil, llm.GenerateOptions{}); return err }, llm.ErrOption},
		{"negative-max", func() error { _, err := r.Generate(ctx, []int32{1}, llm.GenerateOptions{MaxNewTokens: -1}); return err }, llm.ErrOption},
		{"stop-past-vocabulary", func() error {
			_, err := r.Generate(ctx, []int32{1}, llm.GenerateOptions{StopTokens: []int32{2, int32(testCfg.Vocab)}})
			return err
		}, llm.ErrOption},
		{"negative-stop", func() error {
			_, err := r.Generate(ctx, []int32{1}, llm.GenerateOptions{StopTokens: []int32{-1}})
			return err
		}, llm.ErrOption},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.Reset()
			err := tc.run()
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if r.Pos() != 0 {
				t.Fatalf("a rejected request moved the position to %d", r.Pos())
			}
		})
	}
	t.Run("past-end-forward", func(t *testing.T) {
		r.Reset()
		if _, err := r.Forward(ctx, long[:testCfg.MaxSeq]); err != nil {
			t.Fatal(err)
		}
		_, err := r.Forward(ctx, []int32{1})
		var ce *llm.CacheError
		if !errors.Is(err, llm.ErrPositionPastEnd) || !errors.As(err, &ce) || ce.Pos != testCfg.MaxSeq || ce.MaxSeqLen != testCfg.MaxSeq {
			t.Fatalf("a step at position %d: %v", testCfg.MaxSeq, err)
		}
	})
}

// TestDeclaredInt64Tokens: a program whose delegate call declares int64
// tokens and input_pos (as export_llama writes them) is fed int64 tokens.
func TestDeclaredInt64Tokens(t *testing.T) {
	ctx := context.Background()
	v, err := models.NewLlamaLayout(testCfg, nil, models.LlamaLayout{})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := v.B.Blob()
	if err != nil {
		t.Fatal(err)
	}
	pte, err := serialization.EncodePTE(serialization.PTEOptions{NamedData: v.B.NamedBlobs(),
		Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: blob,
			Inputs: []serialization.EValueSpec{{ScalarType: serialization.ScalarTypeLong, Sizes: []int32{1, 4}},
				{ScalarType: serialization.ScalarTypeLong, Sizes: []int32{1}}},
			Outputs: []serialization.EValueSpec{{ScalarType: serialization.ScalarTypeFloat, Sizes: []int32{1, int32(testCfg.Vocab)}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := llm.Load(ctx, pte)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if c := r.Convention(); c.TokenType != wgdelegate.Int64 {
		t.Fatalf("token type %v, want int64 as declared", c.TokenType)
	}
	ref := v.NewReference()
	logits, err := r.Forward(ctx, []int32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Step([]int32{1, 2, 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := models.Compare(wgdelegate.FromFloat32([]int64{1, testCfg.Vocab}, logits), want, models.Tolerance{Abs: 1e-4, Rel: 1e-4}); err != nil {
		t.Fatal(err)
	}
}

// TestInspectRealProgram reads the metadata methods of a real exported
// llama (stories260K for Qualcomm's QNN backend, so not one this runner
// can run): their values come back with ErrNotDecoder.
func TestInspectRealProgram(t *testing.T) {
	var data []byte
	for _, up := range []string{"../..", "../../.."} {
		b, err := os.ReadFile(filepath.Join(up, "shared", "testdata", "executorch", "stories260k_qnn.pte"))
		if err == nil {
			data = b
			break
		}
	}
	if data == nil {
		t.Skip("stories260k_qnn.pte not found beside the repository")
	}
	info, err := llm.InspectProgram(data)
	if !errors.Is(err, llm.ErrNotDecoder) {
		t.Fatalf("a QNN program: %v, want ErrNotDecoder", err)
	}
	for name, want := range map[string]int64{"get_max_seq_len": 128, "get_vocab_size": 512, "get_n_layers": 5, "get_bos_id": 1, "get_eos_id": 2} {
		if got, ok := info.Metadata[name]; !ok || got != want {
			t.Errorf("%s = %d (present %v), want %d", name, got, ok, want)
		}
	}
	if info.BOS != 1 || !slices.Equal(info.EOS, []int32{2}) {
		t.Errorf("BOS %d, EOS %v; want 1, [2]", info.BOS, info.EOS)
	}
	if !slices.Contains(info.Methods, "kv_forward") {
		t.Errorf("methods %v", info.Methods)
	}
}

// TestGreedyOnDevice: greedy generation picks tokens on the device (the
// model's Head, steps pipelined) and gives exactly the tokens, stop and
// cache positions of picking on the host from read-back logits
// (HostGreedy): to the end of the cache, with a stop token, across two
// Generate calls of one sequence (the last token pending), with a prompt
// prefilled in chunks, and followed by Forward. Penalties fall back to
// the host. Every calling convention.
func TestGreedyOnDevice(t *testing.T) {
	ctx := context.Background()
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			dev, host := loadTwice(t, l.layout)
			type run struct {
				prompt []int32
				opts   llm.GenerateOptions
			}
			check := func(what string, runs []run, forward []int32) {
				t.Helper()
				dev.Reset()
				host.Reset()
				for i, rn := range runs {
					got, err := dev.Generate(ctx, rn.prompt, rn.opts)
					if err != nil {
						t.Fatalf("%s, run %d: %v", what, i, err)
					}
					ho := rn.opts
					ho.HostGreedy = true
					want, err := host.Generate(ctx, rn.prompt, ho)
					if err != nil {
						t.Fatalf("%s, run %d on the host: %v", what, i, err)
					}
					penalized := rn.opts.PresencePenalty != 0
					if got.Stats.OnDevice == penalized || want.Stats.OnDevice {
						t.Fatalf("%s, run %d: OnDevice %v (host run %v)", what, i, got.Stats.OnDevice, want.Stats.OnDevice)
					}
					if !slices.Equal(got.Tokens, want.Tokens) || got.Stop != want.Stop || dev.Pos() != host.Pos() {
						t.Fatalf("%s, run %d: device %v stop %d pos %d; host %v stop %d pos %d", what, i,
							got.Tokens, got.Stop, dev.Pos(), want.Tokens, want.Stop, host.Pos())
					}
					if got.Stats.GeneratedTokens != want.Stats.GeneratedTokens || got.Stats.DecodeSteps != want.Stats.DecodeSteps {
						t.Fatalf("%s, run %d: stats %+v, host %+v", what, i, got.Stats, want.Stats)
					}
				}
				if forward != nil {
					a, err := dev.Forward(ctx, forward)
					if err != nil {
						t.Fatal(err)
					}
					b, err := host.Forward(ctx, forward)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(a, b) {
						t.Fatalf("%s: Forward after generating: logits differ", what)
					}
				}
			}
			full, err := host.Generate(ctx, []int32{2, 4, 6}, llm.GenerateOptions{HostGreedy: true})
			if err != nil {
				t.Fatal(err)
			}
			check("to the end of the cache", []run{{[]int32{2, 4, 6}, llm.GenerateOptions{}}}, nil)
			check("stop token", []run{{[]int32{2, 4, 6}, llm.GenerateOptions{MaxNewTokens: 12, StopTokens: []int32{full.Tokens[3]}}}}, []int32{7})
			check("one sequence, two calls", []run{
				{[]int32{2, 4, 6}, llm.GenerateOptions{MaxNewTokens: 3}},
				{[]int32{9}, llm.GenerateOptions{MaxNewTokens: 4}},
				{nil, llm.GenerateOptions{MaxNewTokens: 2}},
			}, []int32{5})
			check("chunked prefill", []run{{[]int32{1, 2, 3, 4, 5, 6, 7}, llm.GenerateOptions{MaxNewTokens: 5, PrefillChunk: 3}}}, nil)
			check("one token", []run{{[]int32{3}, llm.GenerateOptions{MaxNewTokens: 1}}}, []int32{8})
			check("penalties on the host", []run{{[]int32{2, 4, 6}, llm.GenerateOptions{MaxNewTokens: 6, PresencePenalty: 3}}}, nil)
		})
	}
}

// TestSampledOnDevice: sampling reads back the step's largest logits from
// the device head (DeviceTopK) and draws the same tokens as reading every
// step's logits (DeviceTopK -1); a chain that keeps tokens past them
// reads the row after all (Stats.LogitReads). Every calling convention.
func TestSampledOnDevice(t *testing.T) {
	ctx := context.Background()
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			dev, host := loadTwice(t, l.layout)
			for _, tc := range []struct {
				opts  llm.GenerateOptions
				reads bool // every step reads the row back
			}{
				{llm.GenerateOptions{Temperature: 1, TopK: 5, Seed: 3}, false},
				{llm.GenerateOptions{Temperature: 0.9, TopK: 12, TopP: 0.8, MinP: 0.02, Seed: 4}, false},
				{llm.GenerateOptions{Temperature: 1.1, TopP: 0.3, Seed: 5, DeviceTopK: 40}, false},
				{llm.GenerateOptions{Temperature: 1, Seed: 6}, true},
			} {
				o := tc.opts
				o.MaxNewTokens = 10
				dev.Reset()
				host.Reset()
				got, err := dev.Generate(ctx, []int32{2, 4, 6, 8, 10}, o)
				if err != nil {
					t.Fatal(err)
				}
				ho := o
				ho.DeviceTopK = -1
				want, err := host.Generate(ctx, []int32{2, 4, 6, 8, 10}, ho)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Tokens, want.Tokens) || dev.Pos() != host.Pos() {
					t.Fatalf("%+v: device %v (pos %d), host %v (pos %d)", tc.opts, got.Tokens, dev.Pos(), want.Tokens, host.Pos())
				}
				st := got.Stats
				if !st.OnDevice || want.Stats.OnDevice {
					t.Fatalf("%+v: OnDevice %v, host run %v", tc.opts, st.OnDevice, want.Stats.OnDevice)
				}
				if tc.reads && st.LogitReads != len(got.Tokens) {
					t.Errorf("%+v: %d logit reads for %d tokens, want every step", tc.opts, st.LogitReads, len(got.Tokens))
				}
				if tc.opts.TopK > 0 && st.LogitReads != 0 {
					t.Errorf("%+v: %d logit reads with top-k inside the read-back", tc.opts, st.LogitReads)
				}
			}
			if _, err := dev.Generate(ctx, []int32{1}, llm.GenerateOptions{Temperature: 1, DeviceTopK: wgdelegate.MaxTopK + 1}); !errors.Is(err, llm.ErrOption) {
				t.Errorf("DeviceTopK past MaxTopK: %v", err)
			}
		})
	}
}
