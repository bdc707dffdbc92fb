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
//	if err != nil { ... }
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
// # On the device
//
// A step's logits are only looked at to pick the next token, so Generate
// has the model's Head (wgdelegate.Model.NewHead) do what the pick needs
// where the logits are, after the step's dispatches:
//
//   - greedy (no penalties): the argmax, 4 bytes read back a step; the
//     pick feeds the next step on the device, so step t+1 is submitted
//     before step t's token is read and the GPU is not left idle while
//     the host reads a token, checks it and encodes the next step. A stop
//     token is honoured when read: the step already submitted behind it
//     only wrote a cache row the runner does not count as filled;
//   - sampling (no penalties): the DeviceTopK largest logits with the
//     softmax normalizer; the chain above picks from them exactly as from
//     the whole row when top-k, the nucleus or the min-p floor lies among
//     them (with top-p or min-p but no top-k, the cut uses the device's
//     float32 normalizer, so one landing within about 1e-6 of TopP may
//     differ), and reads the row otherwise (Stats.LogitReads).
//
// Penalties, HostGreedy, DeviceTopK -1 and models without a Head (a
// program of several delegates) read every step's logits. Stats.OnDevice
// says which way a generation went, and Submit and Wait what the host
// spent preparing and submitting steps and waiting for their results.
//
// A Runner holds one sequence: Generate continues it (the next prompt goes
// after the tokens already generated) until Reset. It is not safe for
// concurrent use. The sequence lives in the model's KV cache, which a
// second sequence would overwrite, so a Runner owns its model's cache from
// New (or Open, Load) to Close (wgdelegate.Model.ClaimState): New on a
// model another Runner (or a Pool) holds fails with an error wrapping
// ErrCacheOwned, and works again once that runner is closed.
//
// # Sessions: many sequences on one model
//
// A Pool (NewPool) holds the model's cache for Sessions, each a sequence
// of its own, which share the model's weights on the device:
//
//	p, err := llm.NewPool(m, info, llm.SessionOptions{MaxSessions: 16})
//	if err != nil { ... } // ErrCacheOwned: a Runner or another Pool holds m
//	s, err := p.New()
//	if err != nil { ... } // ErrSessionsFull past the bounds
//	res, err := s.Generate(ctx, conversation, opts)
//	if err != nil { ... }
//	// next turn: the whole conversation again; only its new tokens are prefilled
//	res, err = s.Generate(ctx, append(conversation, more...), opts)
//	if err != nil { ... }
//
// Design. The model's cache buffers hold the state of one session, the
// resident one. When another session's turn comes, the pool saves the
// resident's cache into that session's store and restores the incoming
// session's (wgdelegate.StateClaim.Save and Restore: buffer copies the
// device runs in order with the steps, so nothing waits on the host).
// Only positions [0, pos) are copied: a [1, S, H, D] cache holds them as
// its first pos·H·D elements, float32 or packed halves alike, and the
// rows past pos are written before attention reads them. A session that
// runs alone copies nothing. The other design, a clone of the cache
// tensors per session with bind groups of its own (every dispatch that
// binds a cache recorded once per session), would make a switch free
// where this one copies 2·layers·pos·H·D elements each way. The copies
// cost what bandwidth allows: Stories 110M at 256 positions, float32,
// copies 2·12·256·768·4 = 18.9 MB out and in, about 40 µs at a GPU's
// 1 TB/s against a decode step that reads 440 MB of weights. On lavapipe
// (BenchmarkSessionSwitch, Stories 260K's shape, 2 shared vCPUs) a switch
// copied 0.2 MB (64 positions) to 0.7 MB (256), and two sessions
// switching at every step took 10-40% more time a token (1.8-3.0 ms)
// than two runners on two loads of the model (1.4-2.4 ms; what the clone
// would cost, less its bind groups), over 6 runs with the host's load
// varying: the copies and the pipelining a switch gives up. The clone
// pays off for
// long contexts and small weights switched every step, and would need
// per-session recordings in graph. Both designs hold one cache per
// session; this one also keeps one in the model (Model.StateBytes more).
//
// Prefix reuse. A session remembers the tokens its cache holds. Generate
// takes the whole sequence each time (a chat's conversation so far);
// the tokens its cache holds from the start are reused and the rest
// prefilled (Stats.ReusedTokens, PromptTokens), at least the last one,
// whose logits start the generation. An edited conversation reuses their
// common prefix. Fork copies a session (its tokens and cache), Reset
// forgets them, Close frees its store.
//
// Scheduling. The device runs one step at a time, so sessions take turns
// through a first-come-first-served queue. A generation gives the device
// to the waiting sessions between its steps and between the chunks of a
// long prefill (Stats.Yields, Queued), so a long generation does not hold
// short ones back and a long prompt does not delay others' first tokens
// by its whole prefill. Alone, a greedy generation pipelines its steps on
// the device (above); when another session waits it reads its pending
// step's token first, so that no step of it is in flight when its state
// is saved, and feeds that token from the host when its turn comes back.
// OnToken runs while the session holds the device: keep it short. The
// penalties look at the whole prompt given, reused or not, so a session's
// tokens are those of a fresh sequence on that prompt.
//
// # Tokenizers
//
// The runner works on token ids. Tokenizer turns text into ids and back;
// LoadTokenizer (ParseTokenizer for bytes) reads any of these files,
// choosing by their content (DetectTokenizer), not their name:
//
//   - llama2.c's tokenizer.bin (LoadLlama2CTokenizer): run.c's BPE merges
//     by score and byte-fallback pieces;
//   - a SentencePiece tokenizer.model, a protobuf (LoadSentencePiece), as
//     Llama 2 exports ship: BPE models, not unigram ones;
//   - a tiktoken tokenizer.model, lines of base64 token bytes and rank
//     (LoadTiktoken), as Llama 3 exports ship and ExecuTorch's Llama
//     runner reads: a token's id is its rank, Llama 3's 256 special
//     tokens follow the ranks (<|begin_of_text|> 128000, <|end_of_text|>
//     128001, <|start_header_id|> 128006, <|end_header_id|> 128007,
//     <|eot_id|> 128009, ...), text is split by Llama 3's regex and
//     merged lowest rank first (ParseTiktokenWith takes another regex
//     and special tokens);
//   - a Hugging Face tokenizer.json with a byte-level BPE model
//     (LoadHFTokenizer), as Llama 3, Qwen 2 and GPT-2 style exports ship:
//     added tokens, NFC (or another Unicode normalization) or no
//     normalizer, a ByteLevel pre-tokenizer alone or after Split regexes,
//     merges as "a b" strings or pairs, ignore_merges, a ByteLevel
//     decoder, and BOS from a TemplateProcessing post-processor. Other
//     models (WordPiece, Unigram), pre-tokenizers (Metaspace, ...) and
//     regex constructs with no RE2 equivalent are an *UnsupportedError.
//
// The byte-level tokenizers (Tiktoken, HFTokenizer) give the ids of the
// reference implementations, tiktoken and Hugging Face's tokenizers (the
// \s+(?!\S) lookahead of their regexes, which Go's regexp lacks, is
// written out by hand), decode every id to its bytes (the ids of a text
// decode back to it, after the normalizer where there is one), recognise
// special tokens written in the text, and encode in O(n log n) of a
// piece's length. StopTokens gives the ids a
// generation should stop at: EOS, and the end-of-turn tokens of instruct
// models (<|eot_id|>, <|im_end|>). Llama3ChatPrompt formats a
// conversation for a Llama 3 instruct model; package chat (llm/chat)
// renders a model's own chat template, as Hugging Face transformers does,
// and built-in Llama 3, Llama 2, ChatML and Mistral formats.
//
// Malformed tokenizer files are errors wrapping ErrTokenizer.
package llm
