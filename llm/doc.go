// Package llm generates text with Llama-style decoders exported for the
// ExecuTorch Vulkan delegate, on top of the wgdelegate Model API: it opens
// the model, works out how it is called, prefills a prompt, decodes token
// by token with a KV cache carried across Executes, samples, and reports
// tokens per second.
//
//	r, err := llm.Open(ctx, "llama.pte", wgdelegate.WithDataFiles("llama.ptd"))
//	if err != nil { ... }
//	defer r.Close()
//	res, err := r.Generate(ctx, []int32{1}, llm.GenerateOptions{MaxNewTokens: 64})
//	fmt.Println(res.Tokens, res.Stats.DecodeTokensPerSecond())
//
// # Calling conventions
//
// Open (or New, for a Model already loaded) detects the convention
// (Convention) from the model's inputs and outputs and from its program:
//
//   - tokens [1, T]: int64 when the program's delegate call declares them
//     so (export_llama's), else the VkGraph's int32; T bounds the tokens
//     per Execute, and a longer prompt is prefilled in chunks of T;
//   - input_pos: a SymInt input, or an int64/int32 tensor [1] that the
//     graph reads with et_vk.select_as_symint;
//   - logits: the first output, float32 [1, V] for the last position or
//     [1, T, V] for every position (the runner uses the last);
//   - the KV cache length (the most positions a sequence may use): dim 1
//     of the caches of the graph's sdpa_with_kv_cache, update_cache or
//     custom_sdpa ops, or the program's get_max_seq_len metadata method
//     when it is smaller (InspectProgram; ProgramInfo.Metadata has every
//     constant metadata method's value).
//
// A model that does not fit is a *NotDecoderError (ErrNotDecoder).
//
// # Generating
//
// Generate feeds a prompt (one Execute per chunk), then samples a token
// from the last logits, feeds it at the next position, and so on: greedy
// at temperature 0, else softmax sampling from a seeded generator (the
// same seed gives the same tokens). It stops
// after MaxNewTokens, at a stop token, when ctx is cancelled, or when an
// OnToken callback returns an error; Stream yields the tokens as an
// iter.Seq2. A prompt that does not fit in the cache is a *CacheError
// wrapping ErrPromptTooLong, a generation that would run past it one
// wrapping ErrPositionPastEnd; both are checked before anything runs.
// Stats has the prefill and decode rates and the time to first token.
//
// # Sampling
//
// GenerateOptions has the samplers users of llama.cpp and ollama know,
// each off at its zero value (the zero GenerateOptions is greedy). They
// run as one chain, in this order:
//
//  1. penalties (RepeatPenalty, FrequencyPenalty, PresencePenalty) on the
//     raw logits of the tokens among the last RepeatLastN (the prompt,
//     then the output): a positive logit is divided by the repetition
//     penalty, a negative one multiplied, then count·frequency +
//     presence is subtracted, as llama.cpp's penalties sampler does;
//  2. greedy at Temperature 0: the largest logit, the first of equals;
//     nothing below runs;
//  3. TopK: the K largest logits stay;
//  4. Temperature: logits/T, then the softmax over what stays;
//  5. TopP: the smallest set of most likely tokens whose probabilities
//     sum past P (strictly past, as run.c cuts);
//  6. MinP: of those, the tokens at least MinP times as likely as the
//     most likely one;
//  7. a draw from what is left, renormalised.
//
// llama.cpp's default chain (penalties, top-k, top-p, min-p, temperature)
// applies the temperature last; here it comes before top-p and min-p, as
// in run.c and Hugging Face transformers, so top-p keeps its meaning and
// the greedy path still gives run.c's tokens. At temperature 1, or with
// neither top-p nor min-p, the two orders draw from the same distribution.
//
// A Runner holds one sequence: Generate continues it (the next prompt goes
// after the tokens already generated) until Reset. It is not safe for
// concurrent use.
//
// # Tokenizers
//
// The runner works on token ids. Tokenizer turns text into ids and back:
// LoadLlama2CTokenizer reads llama2.c's tokenizer.bin (run.c's BPE merge
// and byte-fallback pieces), LoadSentencePiece a SentencePiece
// tokenizer.model (as Llama 2 exports ship).
package llm
