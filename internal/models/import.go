package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// ImportOptions says how ImportLlama2C lays out the program. The zero
// value keeps float32 weights, the checkpoint's seq_len as the KV cache
// length and DefaultImportMaxTokens tokens per Execute.
type ImportOptions struct {
	// Q4Group, when positive, writes every linear (the layers' and the
	// classifier) as et_vk.linear_q4gsw.default with weights quantized
	// in groups of Q4Group along K, as `export_llama -qmode 4w -G
	// Q4Group` does (LlamaConfig.Q4Group). It must be a multiple of 8
	// dividing the checkpoint's dim and hidden_dim.
	Q4Group int64
	// MaxSeq is the KV cache length, the most positions a sequence may
	// use: 0 means the checkpoint's seq_len, which it may not exceed
	// (export_llama's --max_seq_length).
	MaxSeq int64
	// MaxTokens bounds the tokens one Execute takes (the prefill chunk):
	// 0 means DefaultImportMaxTokens, or MaxSeq when that is smaller.
	MaxTokens int64
}

// DefaultImportMaxTokens is the tokens per Execute ImportLlama2C writes
// by default: a prompt of up to 32 tokens is prefilled in one Execute.
const DefaultImportMaxTokens = 32

// ErrImportOptions is wrapped by the errors ImportLlama2C returns for
// ImportOptions the checkpoint cannot be written with.
var ErrImportOptions = errors.New("import options do not fit the checkpoint")

// Imported is a llama2.c checkpoint written as an ExecuTorch program.
type Imported struct {
	// Cfg is the graph's configuration: the checkpoint's sizes with the
	// options applied.
	Cfg LlamaConfig
	// SeqLen is the checkpoint's seq_len.
	SeqLen int64
	// SharedClassifier reports that the checkpoint's classifier is its
	// token embedding (a positive vocab_size in the header).
	SharedClassifier bool
	// Params counts the checkpoint's weights, a shared classifier once.
	Params int64
	// Files are the .pte program and the .ptd holding every weight.
	Files
}

// ImportLlama2C converts a llama2.c checkpoint (ReadLlama2C's format) into
// the program ExecuTorch's Vulkan export of the same Llama would be:
// NewLlama's graph (rope tables and KV caches through et_vk.prepack,
// weights as named constants under the SHA-256 of their bytes, the
// exporter's greedy memory plan) with its Python scalars deduplicated as
// the exporter's graph builder does (DedupScalars), in a .pte whose
// forward plan calls the delegate with int64 tokens [1, MaxTokens] and
// input_pos [1] and a float32 logits output [1, vocab], as export_llama
// declares them; every weight goes in the .ptd. ctx is checked between
// the steps (read, build, encode).
func ImportLlama2C(ctx context.Context, ckpt []byte, opts ImportOptions) (*Imported, error) {
	cfg, w, err := ReadLlama2C(ckpt)
	if err != nil {
		return nil, err
	}
	imp := &Imported{SeqLen: cfg.MaxSeq, SharedClassifier: &w.Output[0] == &w.Embedding[0], Params: cfg.Params()}
	if imp.SharedClassifier {
		imp.Params -= cfg.Vocab * cfg.Dim
	}
	if cfg, err = importConfig(cfg, opts); err != nil {
		return nil, err
	}
	imp.Cfg = cfg
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("models: import: %w", err)
	}
	b, err := exportedLlama(cfg, w)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("models: import: %w", err)
	}
	if imp.Files, err = EncodeLlamaProgram(b, cfg); err != nil {
		return nil, err
	}
	return imp, nil
}

// importConfig applies opts to the configuration ReadLlama2C returned.
func importConfig(cfg LlamaConfig, opts ImportOptions) (LlamaConfig, error) {
	switch {
	case opts.MaxSeq < 0 || opts.MaxSeq > cfg.MaxSeq:
		return cfg, fmt.Errorf("models: %w: a cache of %d positions; the checkpoint's seq_len is %d", ErrImportOptions, opts.MaxSeq, cfg.MaxSeq)
	case opts.MaxSeq > 0:
		cfg.MaxSeq = opts.MaxSeq
	}
	switch {
	case opts.MaxTokens < 0 || opts.MaxTokens > cfg.MaxSeq:
		return cfg, fmt.Errorf("models: %w: %d tokens per Execute; the cache holds %d positions", ErrImportOptions, opts.MaxTokens, cfg.MaxSeq)
	case opts.MaxTokens > 0:
		cfg.MaxTokens = opts.MaxTokens
	default:
		cfg.MaxTokens = min(DefaultImportMaxTokens, cfg.MaxSeq)
	}
	if g := opts.Q4Group; g != 0 {
		if g < 0 || g%8 != 0 || cfg.Dim%g != 0 || cfg.Hidden%g != 0 {
			return cfg, fmt.Errorf("models: %w: 4-bit group size %d does not divide dim %d and hidden_dim %d (group sizes that do: %s)",
				ErrImportOptions, g, cfg.Dim, cfg.Hidden, q4Groups(cfg.Dim, cfg.Hidden))
		}
		cfg.Q4Group = g
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%w: %w", ErrImportOptions, err)
	}
	return cfg, nil
}

// q4Groups lists the 4-bit group sizes a model of dim and hidden takes:
// the multiples of 8 that divide both.
func q4Groups(dim, hidden int64) string {
	var gs []string
	for g := int64(8); g <= min(dim, hidden); g += 8 {
		if dim%g == 0 && hidden%g == 0 {
			gs = append(gs, strconv.FormatInt(g, 10))
		}
	}
	if len(gs) == 0 {
		return "none"
	}
	return strings.Join(gs, ", ")
}

// exportedLlama writes the graph ImportLlama2C encodes: NewLlama's, with
// the scalars deduplicated. Only the builder is kept, so the float
// weights can be collected once it has their bytes.
func exportedLlama(cfg LlamaConfig, w *LlamaWeights) (*serialization.Builder, error) {
	l, err := NewLlama(cfg, w)
	if err != nil {
		return nil, err
	}
	DedupScalars(l.B.Graph())
	return l.B, nil
}

// EncodeLlamaProgram writes a Llama graph (NewLlama's layout, cfg's
// sizes) as export_llama's program: a .pte whose forward plan calls the
// VulkanBackend delegate with int64 tokens [1, MaxTokens] and int64
// input_pos [1] and gets float32 logits [1, Vocab], and a .ptd with every
// named constant.
func EncodeLlamaProgram(b *serialization.Builder, cfg LlamaConfig) (Files, error) {
	blob, err := b.Blob()
	if err != nil {
		return Files{}, fmt.Errorf("models: encoding the delegate blob: %w", err)
	}
	if cfg.MaxTokens > math.MaxInt32 || cfg.Vocab > math.MaxInt32 {
		return Files{}, fmt.Errorf("models: %d tokens per Execute or a vocabulary of %d do not fit a .pte's sizes", cfg.MaxTokens, cfg.Vocab)
	}
	long := serialization.ScalarTypeLong
	d := serialization.DelegateSpec{ID: serialization.VulkanBackendID, Blob: blob,
		Inputs:  []serialization.EValueSpec{{ScalarType: long, Sizes: []int32{1, int32(cfg.MaxTokens)}}, {ScalarType: long, Sizes: []int32{1}}},
		Outputs: []serialization.EValueSpec{{ScalarType: serialization.ScalarTypeFloat, Sizes: []int32{1, int32(cfg.Vocab)}}}}
	var f Files
	if f.PTE, err = serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{d}}); err != nil {
		return Files{}, fmt.Errorf("models: encoding the .pte: %w", err)
	}
	if f.PTD, err = serialization.EncodePTD(b.NamedBlobs()); err != nil {
		return Files{}, fmt.Errorf("models: encoding the .ptd: %w", err)
	}
	return f, nil
}

// DedupScalars makes equal Python scalars of g one value, as the
// exporter's VkGraphBuilder does (vkgraph-format.md §3.7): Int and Double
// values are keyed by their number, so 1 and 1.0 are one key and the one
// written first is kept (a float argument may then name an Int value),
// and Bool values by their own key. Every reference (op arguments,
// ValueList members, graph inputs and outputs) is pointed at the kept
// value, the others are removed and the value ids renumbered. Null
// values, strings, lists and SymInts stay as they are: the exporter makes
// a fresh one each time. It returns how many values it removed.
func DedupScalars(g *serialization.Graph) int {
	// key is a scalar's identity in the exporter's dict: a number (an
	// Int that a float64 holds exactly, or a Double), an Int beyond
	// float64's exact range (equal only to itself, as in Python), or a
	// Bool (keyed by "True"/"False", apart from 1 and 0).
	type key struct {
		class byte // 'n' number, 'i' large Int, 'b' Bool
		num   float64
		i     int64
	}
	first := map[key]int32{}
	remap := make([]int32, len(g.Values)) // old id -> the old id kept for it
	newID := make([]int32, len(g.Values)) // kept old id -> new id
	var keep []serialization.Value
	for i, v := range g.Values {
		remap[i] = int32(i)
		k, scalar := key{}, true
		switch v.Kind {
		case serialization.KindInt:
			k = key{class: 'n', num: float64(v.Int)}
			if v.Int > 1<<53 || v.Int < -(1<<53) {
				k = key{class: 'i', i: v.Int}
			}
		case serialization.KindDouble:
			// NaN equals nothing, not even itself, as a Python dict key
			// made afresh each time.
			k, scalar = key{class: 'n', num: v.Double}, !math.IsNaN(v.Double)
		case serialization.KindBool:
			k = key{class: 'b'}
			if v.Bool {
				k.i = 1
			}
		default:
			scalar = false
		}
		if scalar {
			if j, ok := first[k]; ok {
				remap[i] = j
				continue
			}
			first[k] = int32(i)
		}
		newID[i] = int32(len(keep))
		keep = append(keep, v)
	}
	removed := len(g.Values) - len(keep)
	if removed == 0 {
		return 0
	}
	id := func(old int32) int32 {
		if old < 0 || int(old) >= len(remap) {
			return old // out of range: left for the decoder to reject
		}
		return newID[remap[old]]
	}
	for i := range g.Chain {
		for j, a := range g.Chain[i].Args {
			g.Chain[i].Args[j] = id(a)
		}
	}
	for i := range keep {
		if keep[i].Kind == serialization.KindValueList {
			ids := make([]int32, len(keep[i].IDs))
			for j, a := range keep[i].IDs {
				ids[j] = id(a)
			}
			keep[i].IDs = ids
		}
	}
	for i, a := range g.InputIDs {
		g.InputIDs[i] = uint32(id(int32(a)))
	}
	for i, a := range g.OutputIDs {
		g.OutputIDs[i] = uint32(id(int32(a)))
	}
	g.Values = keep
	return removed
}
