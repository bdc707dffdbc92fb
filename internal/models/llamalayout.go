package models

import (
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// LlamaLayout is a calling convention a Llama-style export may have, for
// testing runners that must detect it (the llm package). The zero value is
// NewLlama's: input_pos an int64 tensor [1] read through
// et_vk.select_as_symint, the last position's logits [1, Vocab].
type LlamaLayout struct {
	// SymIntPos makes input_pos a SymInt graph input.
	SymIntPos bool
	// AllLogits returns the logits of every position, [1, S, Vocab]
	// (and makes input_pos a SymInt, as the un-exported stack has it).
	AllLogits bool
}

// LlamaVariant is a Llama written with a LlamaLayout.
type LlamaVariant struct {
	Cfg    LlamaConfig
	Layout LlamaLayout
	W      *LlamaWeights
	// B is the graph for the GPU, with zeroed caches and the exporter's
	// memory plan applied.
	B *serialization.Builder
	s *stack
}

// NewLlamaLayout writes the llama of cfg and w (RandomLlamaWeights when
// nil) with the calling convention layout.
func NewLlamaLayout(cfg LlamaConfig, w *LlamaWeights, layout LlamaLayout) (*LlamaVariant, error) {
	w, err := llamaWeights(cfg, w)
	if err != nil {
		return nil, err
	}
	s := &stack{vocab: cfg.Vocab, dim: cfg.Dim, heads: cfg.Heads, kvHeads: cfg.KVHeads, headDim: cfg.HeadDim(),
		hidden: cfg.Hidden, maxTokens: cfg.MaxTokens, maxSeq: cfg.MaxSeq, eps: cfg.Eps, w: w,
		splitCache: cfg.SplitCache, exported: !layout.AllLogits, q4Group: cfg.Q4Group}
	s.cos, s.sin = ropeTables(cfg.MaxSeq, cfg.HeadDim(), cfg.RopeTheta)
	b := s.build(nil, false)
	if err := relayout(b, layout); err != nil {
		return nil, err
	}
	ApplyPlan(b, PlanExporter)
	return &LlamaVariant{Cfg: cfg, Layout: layout, W: w, B: b, s: s}, nil
}

// relayout rewrites a freshly built stack graph for layout: with
// AllLogits (an un-exported stack: outputs h and logits) it keeps only the
// logits; with SymIntPos alone (an exported stack) it drops the
// select_as_symint op and makes its SymInt output the input_pos input.
func relayout(b *serialization.Builder, layout LlamaLayout) error {
	g := b.Graph()
	if layout.AllLogits {
		if len(g.OutputIDs) != 2 {
			return fmt.Errorf("models: relayout: %d outputs, want h and logits", len(g.OutputIDs))
		}
		g.OutputIDs = g.OutputIDs[1:]
		return nil
	}
	if !layout.SymIntPos {
		return nil
	}
	i := slices.IndexFunc(g.Chain, func(op serialization.OpCall) bool { return op.Name == "et_vk.select_as_symint.default" })
	if i < 0 || len(g.InputIDs) != 2 {
		return fmt.Errorf("models: relayout: no select_as_symint op to replace")
	}
	op := g.Chain[i]
	g.InputIDs[1] = uint32(op.Args[len(op.Args)-1])
	g.Chain = slices.Delete(g.Chain, i, i+1)
	return nil
}

// LlamaVariantReference replays steps of a LlamaVariant on the reference
// interpreter, carrying the KV caches on the host.
type LlamaVariantReference struct {
	r   *stackReference
	all bool
}

// NewReference starts a replay with zeroed caches.
func (v *LlamaVariant) NewReference() *LlamaVariantReference {
	return &LlamaVariantReference{r: v.s.newReference(), all: v.Layout.AllLogits}
}

// Step runs tokens at input_pos pos and returns the logits as the
// variant's graph returns them: [1, Vocab], or [1, S, Vocab] with
// AllLogits.
func (r *LlamaVariantReference) Step(tokens []int32, pos int64) (*reference.Tensor, error) {
	outs, err := r.r.step(tokens, pos)
	if err != nil {
		return nil, err
	}
	return outs[len(outs)-1], nil
}
