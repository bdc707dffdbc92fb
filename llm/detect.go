package llm

import (
	"fmt"
	"strings"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Convention is how a Llama-style decoder is called, as New detects it.
type Convention struct {
	// TokenType is the dtype the tokens input is fed as: Int64 when the
	// program declares int64 tokens (export_llama's), else what the
	// model's input takes (Int32 in the VkGraph).
	TokenType wgdelegate.DataType
	// MaxTokens is how many tokens one Execute takes: the bound of the
	// tokens input [1, MaxTokens]. Prefill runs in chunks of up to it.
	MaxTokens int64
	// PosSymInt is true when input_pos is a SymInt input; otherwise it is
	// a one-element tensor of PosType (read in the graph with
	// et_vk.select_as_symint).
	PosSymInt bool
	PosType   wgdelegate.DataType
	// AllLogits is true when the model returns the logits of every
	// position it is given, [1, T, Vocab], instead of the last one's
	// [1, Vocab].
	AllLogits bool
	// Vocab is the vocabulary size (the logits' last dim).
	Vocab int64
	// MaxSeqLen is the number of positions the KV cache holds.
	MaxSeqLen int64
}

// ProgramInfo is what the model file says about a decoder beyond its
// inputs and outputs.
type ProgramInfo struct {
	// MaxSeqLen is the KV cache length, from the caches of the graph's
	// sdpa_with_kv_cache, update_cache and custom_sdpa ops (the smallest,
	// if they differ), or the get_max_seq_len metadata method's value when
	// that is smaller; 0 when neither is there.
	MaxSeqLen int64
	// TokenType is the tokens' ScalarType as the program's delegate call
	// declares it (Int64 for export_llama), or 0 (Bool, unset) when the
	// file is a raw delegate blob or declares none.
	TokenType wgdelegate.DataType
	// Methods are the program's execution plans (forward, and metadata
	// methods such as get_max_seq_len when the exporter wrote them).
	Methods []string
	// Metadata holds the value of every method that returns a constant
	// Int or Bool (export_llama's get_max_seq_len, get_vocab_size,
	// get_bos_id, use_kv_cache, ...), by method name.
	Metadata map[string]int64
	// BOS is get_bos_id's value, -1 without it; EOS the values of
	// get_eos_ids (export_llama writes the list as one Int output each)
	// or get_eos_id.
	BOS int32
	EOS []int32
}

// InspectProgram reads a .pte program (or a raw VH00 delegate blob) for
// what a runner needs and the model's I/O does not say: the KV cache
// length and the declared token dtype.
func InspectProgram(data []byte) (ProgramInfo, error) {
	info := ProgramInfo{BOS: -1}
	var blobs [][]byte
	switch wgdelegate.Detect(data) {
	case wgdelegate.FormatBlob:
		blobs = append(blobs, data)
	case wgdelegate.FormatProgram:
		p, err := serialization.ParseProgram(data)
		if err != nil {
			return info, err
		}
		info.Methods = p.Plans
		for i := range p.ExecutionPlans {
			ep := &p.ExecutionPlans[i]
			if v, ok := ep.Int(); ok && len(ep.Inputs) == 0 {
				if info.Metadata == nil {
					info.Metadata = map[string]int64{}
				}
				info.Metadata[ep.Name] = v
			}
			switch ep.Name {
			case "get_bos_id":
				if v, ok := ep.Int(); ok {
					info.BOS = int32(v)
				}
			case "get_eos_ids", "get_eos_id":
				for _, sc := range ep.Scalars {
					if sc.Kind == "Int" {
						info.EOS = append(info.EOS, int32(sc.Int))
					}
				}
			}
		}
		for i := range p.Delegates {
			if p.Delegates[i].ID == serialization.VulkanBackendID {
				blobs = append(blobs, p.Delegates[i].Data)
			}
		}
		if args, err := p.DelegateIO(serialization.VulkanBackendID); err == nil && len(args) > 0 && args[0].Kind == "Tensor" {
			if dt, ok := serialization.ScalarTypeDataType(args[0].ScalarType); ok && (dt == wgdelegate.Int64 || dt == wgdelegate.Int32) {
				info.TokenType = dt
			}
		}
	default:
		return info, wgdelegate.ErrUnknownFormat
	}
	if len(blobs) == 0 {
		return info, &NotDecoderError{Reason: "the program has no VulkanBackend delegate"}
	}
	for _, raw := range blobs {
		b, err := serialization.DecodeBlob(raw)
		if err != nil {
			return info, err
		}
		if n := cacheLen(b.Graph); n > 0 && (info.MaxSeqLen == 0 || n < info.MaxSeqLen) {
			info.MaxSeqLen = n
		}
	}
	info.MaxSeqLen = seqLen(info.MaxSeqLen, info.Metadata["get_max_seq_len"])
	return info, nil
}

// seqLen is the positions a sequence may use: the cache length, or the
// program's get_max_seq_len when that is smaller (or the only one known).
func seqLen(cache, meta int64) int64 {
	if meta > 0 && (cache == 0 || meta < cache) {
		return meta
	}
	return cache
}

// cacheLen returns the smallest KV cache length (dim 1 of a [1, S, H, D]
// cache) among the graph's cache ops, 0 when there are none.
func cacheLen(g *serialization.Graph) int64 {
	var n int64
	for _, op := range g.Chain {
		var arg int
		switch {
		case strings.HasSuffix(op.Name, "sdpa_with_kv_cache.default"):
			arg = 3
		case strings.HasSuffix(op.Name, "update_cache.default"), strings.HasSuffix(op.Name, "custom_sdpa.default"):
			arg = 1
		default:
			continue
		}
		if arg >= len(op.Args) || op.Args[arg] < 0 || int(op.Args[arg]) >= len(g.Values) {
			continue
		}
		v := &g.Values[op.Args[arg]]
		if v.Kind != serialization.KindTensor || v.Tensor == nil || len(v.Tensor.Dims) != 4 {
			continue
		}
		if s := int64(v.Tensor.Dims[1]); s > 0 && (n == 0 || s < n) {
			n = s
		}
	}
	return n
}

// Detect works out m's calling convention. The model must take the tokens
// [1, T] (int32 or int64) and input_pos (a SymInt, or an int32/int64
// tensor [1]), and return float32 logits [1, V] or [1, T, V] as its first
// output. maxSeqLen is the KV cache length (ProgramInfo.MaxSeqLen); the
// model's I/O alone does not say it. tokenType, when Int64 or Int32,
// overrides the dtype the tokens are fed as.
func Detect(m *wgdelegate.Model, maxSeqLen int64, tokenType wgdelegate.DataType) (Convention, error) {
	var c Convention
	if m.NumInputs() != 2 {
		return c, &NotDecoderError{Reason: fmt.Sprintf("%d inputs, want tokens and input_pos", m.NumInputs())}
	}
	if m.NumOutputs() < 1 {
		return c, &NotDecoderError{Reason: "no outputs"}
	}
	dt, shape, _ := m.InputInfo(0) // indices in range: the counts are checked above
	if (dt != wgdelegate.Int32 && dt != wgdelegate.Int64) || len(shape) != 2 || shape[0] != 1 || shape[1] < 1 {
		return c, &NotDecoderError{Reason: fmt.Sprintf("input 0 is %v %v, want int tokens [1, T]", dt, shape)}
	}
	c.TokenType, c.MaxTokens = dt, shape[1]
	if tokenType == wgdelegate.Int64 || tokenType == wgdelegate.Int32 {
		c.TokenType = tokenType
	}
	dt, shape, _ = m.InputInfo(1)
	switch {
	case dt == wgdelegate.Int64 && len(shape) == 0:
		c.PosSymInt, c.PosType = true, wgdelegate.Int64
	case (dt == wgdelegate.Int32 || dt == wgdelegate.Int64) && len(shape) == 1 && shape[0] == 1:
		c.PosType = dt
	default:
		return c, &NotDecoderError{Reason: fmt.Sprintf("input 1 is %v %v, want input_pos (a SymInt or an int tensor [1])", dt, shape)}
	}
	dt, shape, _ = m.OutputInfo(0)
	switch {
	case dt != wgdelegate.Float32:
		return c, &NotDecoderError{Reason: fmt.Sprintf("output 0 is %v, want float32 logits", dt)}
	case len(shape) == 2 && shape[0] == 1:
		c.Vocab = shape[1]
	case len(shape) == 3 && shape[0] == 1 && shape[1] == c.MaxTokens:
		c.Vocab, c.AllLogits = shape[2], true
	default:
		return c, &NotDecoderError{Reason: fmt.Sprintf("output 0 has shape %v, want logits [1, V] or [1, %d, V]", shape, c.MaxTokens)}
	}
	if c.Vocab < 1 {
		return c, &NotDecoderError{Reason: fmt.Sprintf("output 0 has shape %v: no vocabulary", shape)}
	}
	if maxSeqLen <= 0 {
		return c, &NotDecoderError{Reason: "no KV cache length: the graph has no sdpa_with_kv_cache, update_cache or custom_sdpa op and none was given"}
	}
	if c.MaxTokens > maxSeqLen {
		c.MaxTokens = maxSeqLen
	}
	c.MaxSeqLen = maxSeqLen
	return c, nil
}
