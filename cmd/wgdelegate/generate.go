package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/llm/chat"
	"github.com/wgdelegate/wgdelegate/serialization"
)

const generateUsage = `Usage:
  wgdelegate generate [flags] MODEL

Generates tokens with MODEL, a Llama-style decoder export (tokens [1, T]
and input_pos in, logits out, KV caches in the graph), through the llm
package: the prompt is prefilled in as few Executes as the model allows,
then one token is decoded per Execute. The generated text (with
--tokenizer) or token ids are printed on stdout as they are produced; then
stderr gets the prompt tokens/s, decode tokens/s, time to first token and
memory. Ctrl-C stops the generation: the statistics so far are printed
(with --json, the object with "interrupted": true) and the exit status is
130.

Flags:
  --data FILE          a .ptd file holding named constants (repeatable)
  --tokenizer FILE     llama2.c's tokenizer.bin, a SentencePiece or a
                       tiktoken (Llama 3) tokenizer.model, or a Hugging Face
                       tokenizer.json (told apart by their bytes); without
                       one, prompts and output are token ids
  --prompt TEXT        the prompt, encoded with --tokenizer after BOS
  --chat               send --prompt as a user's message in the model's
                       chat format: the chat template beside the tokenizer
                       (chat_template.jinja, or the chat_template of
                       tokenizer_config.json or tokenizer.json), else a
                       built-in format fitting the tokenizer's special
                       tokens (Llama 3, ChatML, Mistral); the template's
                       end-of-turn token joins the stop tokens (see
                       'wgdelegate help template')
  --chat-template FILE the chat template to use (implies --chat): a Jinja
                       file, a tokenizer_config.json, or a built-in format:
                       llama3, llama2, chatml, mistral
  --ids 1,2,3          the prompt as token ids (the default is BOS alone:
                       the tokenizer's, the program's get_bos_id, or 1)
  -n N                 tokens to generate (default 64; 0 fills the cache)
  --temperature T      0 is greedy; above 0 samples from softmax(logits/T)
                       (default 0.8)
  --top-p P            sample from the most likely tokens whose
                       probabilities sum past P; 0 or 1 turns it off
                       (default 0.9)
  --top-k K            sample from the K most likely tokens only; 0 turns
                       it off (default 0)
  --min-p P            drop the tokens less than P times as likely as the
                       most likely one; 0 turns it off (default 0)
  --repeat-penalty R   make the tokens among the last --repeat-last-n
                       less likely (R above 1): a positive logit is
                       divided by R, a negative one multiplied; 1 or 0
                       turns it off (default 1)
  --frequency-penalty F
                       subtract F from a token's logit for each time it
                       occurs among the last --repeat-last-n (default 0)
  --presence-penalty F subtract F from the logit of every token that
                       occurs among the last --repeat-last-n (default 0)
  --repeat-last-n N    how many of the latest tokens (prompt, then output)
                       the three penalties look at (default 64, as 0 is):
                       -1 or all for every token, -2 or off turns the
                       penalties off (llama.cpp's 0; the values are
                       llm.GenerateOptions.RepeatLastN's)
  --seed S             sampler seed: the same seed gives the same tokens
                       (default 1)
  --stop 2,5           stop at any of these ids (default: the tokenizer's
                       EOS and end-of-turn tokens such as <|eot_id|>, else
                       the program's get_eos_ids, else none)
  --json               print one JSON object on stdout at the end instead
                       (tokens, text, prompt/decode tok/s, TTFT, memory)
  --cpu-threads N      compute threads of a CPU adapter (llvmpipe/lavapipe):
                       "inline" runs every dispatch on the driver's thread,
                       which suits decoding small models (see 'wgdelegate
                       help run'); N (1..64) workers; "default"
  --kernels F          kernel family: auto (default: cpu for a CPU adapter
                       such as lavapipe, gpu for a GPU), cpu or gpu (see
                       'wgdelegate help run')
  --f16-kv-cache       hold the KV caches as halves (enable_f16_kv_cache):
                       half the cache memory, values rounded to half
  --verify             check every weight against its SHA-256 key while
                       loading (see 'wgdelegate help run')
  -v, --verbose        debug logs on stderr
  -h, --help           print this help

Sampling runs as llama.cpp's samplers, in this order: the penalties on
the raw logits, greedy at --temperature 0 (then nothing else runs),
top-k, temperature and softmax, top-p, min-p, the draw. Unlike
llama.cpp's default chain the temperature comes before top-p and min-p
(as in run.c). The defaults are run.c's sampling: temperature 0.8, top-p
0.9, nothing else.

Decode tokens/s counts the decode steps (every token after the first)
over their time; prompt tokens/s the prompt over its prefill.

Examples:
  wgdelegate generate --ids 1 -n 64 --temperature 0 llama.pte
  wgdelegate generate --data llama.ptd --tokenizer tokenizer.model --prompt "Once upon a time" llama.pte
  wgdelegate generate --tokenizer tokenizer.bin --prompt "Hello" --seed 7 --top-p 0.95 stories.pte
  wgdelegate generate --tokenizer tokenizer.bin --top-k 40 --min-p 0.05 --repeat-penalty 1.1 stories.pte
  wgdelegate generate --json --ids 1,450,2 -n 32 llama.pte | jq .decode_tokens_per_s
  wgdelegate generate --tokenizer qwen/tokenizer.json --chat --prompt "Why is the sky blue?" qwen.pte
`

// generateOptions are the parsed arguments of "wgdelegate generate".
type generateOptions struct {
	model, tokenizer string
	data             []string
	prompt           *string
	ids, stop        []int32
	stopSet          bool
	gen              llm.GenerateOptions
	json, verbose    bool
	chat             bool
	chatTemplate     string // --chat-template
	cpuThreads       int
	kernels          wgdelegate.KernelFamily // KernelConfig.Family (--kernels)
	f16KV            bool
	verify           bool
	// progressDelay is how long the load runs before its progress shows
	// (progressDelay; a test makes every load "slow" with 0).
	progressDelay time.Duration
}

func parseGenerateArgs(args []string) (generateOptions, error) {
	o := generateOptions{gen: llm.GenerateOptions{MaxNewTokens: 64, Temperature: 0.8, TopP: 0.9, Seed: 1, RepeatLastN: llm.DefaultRepeatLastN}, progressDelay: progressDelay}
	specs := []flagSpec{
		{names: []string{"data"}, value: true, set: appendFlag(&o.data)},
		{names: []string{"tokenizer"}, value: true, set: func(v string) error { o.tokenizer = v; return nil }},
		{names: []string{"prompt"}, value: true, set: func(v string) error { o.prompt = &v; return nil }},
		{names: []string{"chat"}, set: func(string) error { o.chat = true; return nil }},
		{names: []string{"chat-template"}, value: true, set: func(v string) error { o.chat, o.chatTemplate = true, v; return nil }},
		{names: []string{"ids"}, value: true, set: idsFlag(&o.ids)},
		{names: []string{"n"}, value: true, set: func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%q is not a token count (0 or more)", v)
			}
			o.gen.MaxNewTokens = n
			return nil
		}},
		{names: []string{"temperature"}, value: true, set: floatFlag(&o.gen.Temperature)},
		{names: []string{"top-p"}, value: true, set: floatFlag(&o.gen.TopP)},
		{names: []string{"top-k"}, value: true, set: func(v string) error {
			k, err := strconv.Atoi(v)
			if err != nil || k < 0 {
				return fmt.Errorf("%q is not a token count (0 or more)", v)
			}
			o.gen.TopK = k
			return nil
		}},
		{names: []string{"min-p"}, value: true, set: floatFlag(&o.gen.MinP)},
		{names: []string{"repeat-penalty"}, value: true, set: floatFlag(&o.gen.RepeatPenalty)},
		{names: []string{"frequency-penalty"}, value: true, set: floatFlag(&o.gen.FrequencyPenalty)},
		{names: []string{"presence-penalty"}, value: true, set: floatFlag(&o.gen.PresencePenalty)},
		{names: []string{"repeat-last-n"}, value: true, set: func(v string) error {
			switch v {
			case "all":
				o.gen.RepeatLastN = llm.RepeatLastNAll
				return nil
			case "off":
				o.gen.RepeatLastN = llm.RepeatLastNOff
				return nil
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < llm.RepeatLastNOff {
				return fmt.Errorf("%q is not a token count, 0 (the default, %d), -1 or all (every token), or -2 or off", v, llm.DefaultRepeatLastN)
			}
			o.gen.RepeatLastN = n
			return nil
		}},
		{names: []string{"seed"}, value: true, set: func(v string) error {
			s, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not a seed (an unsigned integer)", v)
			}
			o.gen.Seed = s
			return nil
		}},
		{names: []string{"stop"}, value: true, set: func(v string) error { o.stopSet = true; return idsFlag(&o.stop)(v) }},
		{names: []string{"json"}, set: func(string) error { o.json = true; return nil }},
		{names: []string{"cpu-threads"}, value: true, set: cpuThreadsFlag(&o.cpuThreads)},
		{names: []string{"kernels"}, value: true, set: kernelsFlag(&o.kernels)},
		{names: []string{"f16-kv-cache"}, set: func(string) error { o.f16KV = true; return nil }},
		{names: []string{"verify"}, set: func(string) error { o.verify = true; return nil }},
		{names: []string{"verbose", "v"}, set: func(string) error { o.verbose = true; return nil }},
	}
	pos, err := parseArgs("generate", args, specs)
	if err != nil {
		return o, err
	}
	// The sampling options are checked here, before any file is read or
	// the model loaded.
	if err := o.gen.Validate(); err != nil {
		return o, fmt.Errorf("generate: %w", err)
	}
	if o.prompt != nil && o.ids != nil {
		return o, errors.New("generate: give --prompt or --ids, not both")
	}
	if o.prompt != nil && o.tokenizer == "" {
		return o, errors.New("generate: --prompt needs --tokenizer (or give the prompt as --ids)")
	}
	if o.chat && o.prompt == nil {
		return o, errors.New("generate: --chat (and --chat-template) needs --prompt")
	}
	o.model, err = oneModel("generate", pos)
	return o, err
}

// idsFlag parses a comma-separated list of token ids.
func idsFlag(dst *[]int32) func(string) error {
	return func(v string) error {
		*dst = (*dst)[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil || n < 0 {
				return fmt.Errorf("%q is not a list of token ids like 1,2,3", v)
			}
			*dst = append(*dst, int32(n))
		}
		return nil
	}
}

func floatFlag(dst *float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		*dst = f
		return nil
	}
}

// loadTokenizer reads any tokenizer file llm reads, told apart by its
// bytes (llm.ParseTokenizer).
func loadTokenizer(path string) (llm.Tokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := llm.ParseTokenizer(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// tokenizerFormat names tok's file format, for messages.
func tokenizerFormat(tok llm.Tokenizer) llm.TokenizerFormat {
	switch tok.(type) {
	case *llm.Llama2CTokenizer:
		return llm.FormatLlama2C
	case *llm.SentencePiece:
		return llm.FormatSentencePiece
	case *llm.Tiktoken:
		return llm.FormatTiktoken
	case *llm.HFTokenizer:
		return llm.FormatHFTokenizer
	}
	return llm.FormatUnknownTokenizer
}

// chatPrompt returns the text to encode for --prompt, whether BOS goes
// first, and the ids of the stop texts of the chat template: with --chat,
// the prompt as a user's message rendered by the model's chat template
// (chatTemplate) with the generation prompt. A rendered prompt that starts
// with the template's bos_token is encoded after the tokenizer's BOS id
// instead of as text (a SentencePiece tokenizer does not read "<s>" in
// text as its BOS).
func chatPrompt(o generateOptions, tok llm.Tokenizer) (string, bool, []int32, error) {
	if !o.chat {
		return *o.prompt, true, nil, nil
	}
	tpl, err := chatTemplate(o, tok)
	if err != nil {
		return "", false, nil, err
	}
	text, err := tpl.Render(chat.Conversation{Messages: []chat.Message{{Role: "user", Content: *o.prompt}}}, chat.Options{AddGenerationPrompt: true})
	if err != nil {
		return "", false, nil, fmt.Errorf("generate: --chat: %w", err)
	}
	bos := false
	if b := tpl.Tokens().BOS; strings.HasPrefix(text, b) && llm.IsBOSText(tok, b) {
		text, bos = text[len(b):], true
	}
	return text, bos, stopIDs(tok, tpl.Stops()), nil
}

// chatTemplate finds --chat's template: --chat-template's (a Jinja file,
// a tokenizer_config.json or a built-in format), else the one beside the
// tokenizer (chat.Find), else the built-in format the tokenizer's special
// tokens fit. A Jinja file without tokens of its own gets those of the
// tokenizer_config.json beside the tokenizer.
func chatTemplate(o generateOptions, tok llm.Tokenizer) (*chat.Template, error) {
	return findChatTemplate(o.tokenizer, o.chatTemplate, tok, "generate: --chat-template", "generate: --chat")
}

// findChatTemplate is chatTemplate for a tokenizer file and a
// --chat-template value (""), its errors prefixed with flagMsg (for the
// flag's template) or findMsg (for the one looked for).
func findChatTemplate(tokenizer, flag string, tok llm.Tokenizer, flagMsg, findMsg string) (*chat.Template, error) {
	dir := filepath.Dir(tokenizer)
	if flag != "" {
		tpl, err := loadChatTemplate(flag)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagMsg, err)
		}
		if tpl.Tokens().BOS == "" && tpl.Tokens().EOS == "" {
			c, err := chat.LoadConfig(filepath.Join(dir, chat.TokenizerConfigFile))
			switch {
			case err == nil:
				tpl = tpl.WithTokens(c.Tokens)
			case !errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("%s: %w", findMsg, err)
			}
		}
		return tpl, nil
	}
	tpl, _, err := chat.Find(dir)
	if err == nil {
		return tpl, nil
	}
	if !errors.Is(err, chat.ErrNoTemplate) {
		return nil, fmt.Errorf("%s: %w", findMsg, err)
	}
	if _, _, named := llm.SpecialTokenID(tok, ""); named {
		if name := chat.GuessBuiltin(func(s string) bool { _, ok, _ := llm.SpecialTokenID(tok, s); return ok }); name != "" {
			return chat.Builtin(name)
		}
	}
	return nil, fmt.Errorf("%s: no chat template beside %s (%s, or a chat_template in %s or %s), and the tokens of its tokenizer (a %v) fit no built-in format: give --chat-template FILE or one of %s: %w",
		findMsg, tokenizer, chat.TemplateFile, chat.TokenizerConfigFile, chat.TokenizerFile, tokenizerFormat(tok), strings.Join(chat.BuiltinNames(), ", "), chat.ErrNoTemplate)
}

// stopTokens returns the ids a generation stops at: --stop's, else the
// tokenizer's (EOS and end-of-turn tokens), else the program's get_eos_ids;
// with --chat and no --stop, the chat template's stop ids join them.
func stopTokens(o generateOptions, tok llm.Tokenizer, programEOS, chatStops []int32) []int32 {
	if o.stopSet {
		return o.stop
	}
	var stop []int32
	if tok != nil {
		stop = llm.StopTokens(tok)
	}
	if len(stop) == 0 {
		stop = slices.Clone(programEOS)
	}
	for _, id := range chatStops {
		if !slices.Contains(stop, id) {
			stop = append(stop, id)
		}
	}
	return stop
}

// stopIDs maps a template's stop texts to token ids: a special token's
// id, else the one id the text encodes to; a text that is more than one
// token is left out (generation stops on ids).
func stopIDs(tok llm.Tokenizer, stops []string) []int32 {
	var ids []int32
	for _, s := range stops {
		if id, ok := llm.TokenID(tok, s); ok && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

func generateCommand(args []string, stdout, stderr io.Writer) error {
	o, err := parseGenerateArgs(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// After the first Ctrl-C, which stops the generation and prints the
	// statistics, a second one kills the process as usual.
	context.AfterFunc(ctx, stop)
	return generate(ctx, o, stdout, stderr)
}

// generateResult is what --json prints; the names are a stable interface.
type generateResult struct {
	Tokens          []int32 `json:"tokens"`
	Text            *string `json:"text,omitempty"`
	Stop            int32   `json:"stop"`
	PromptTokens    int     `json:"prompt_tokens"`
	GeneratedTokens int     `json:"generated_tokens"`
	PrefillMS       float64 `json:"prefill_ms"`
	PromptTokPerS   float64 `json:"prompt_tokens_per_s"`
	DecodeSteps     int     `json:"decode_steps"`
	DecodeMS        float64 `json:"decode_ms"`
	DecodeTokPerS   float64 `json:"decode_tokens_per_s"`
	TTFTMS          float64 `json:"time_to_first_token_ms"`
	LoadMS          float64 `json:"load_ms"`
	GPUBytes        int64   `json:"gpu_bytes"`
	GoHeapBytes     uint64  `json:"go_heap_bytes"`
	MaxSeqLen       int64   `json:"max_seq_len"`
	MaxTokens       int64   `json:"max_tokens_per_execute"`
	// Interrupted is true when Ctrl-C stopped the generation: the rest
	// is what was done until then.
	Interrupted bool `json:"interrupted,omitempty"`
}

func generate(ctx context.Context, o generateOptions, stdout, stderr io.Writer) error {
	if err := checkModelFile(o.model); err != nil {
		return err
	}
	var tok llm.Tokenizer
	if o.tokenizer != "" {
		var err error
		if tok, err = loadTokenizer(o.tokenizer); err != nil {
			return err
		}
	}
	mf, err := serialization.MapFile(o.model)
	if err != nil {
		return err
	}
	info, err := llm.InspectProgram(mf.Bytes())
	mf.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", o.model, err)
	}
	log := newLogger(stderr, o.verbose)
	dev, release, err := openDevice(ctx, wgdelegate.DeviceOptions{Logger: log, CPUThreads: o.cpuThreads})
	if err != nil {
		return err
	}
	defer release()
	po := newProgressOut(stderr, o.verbose)
	po.delay = o.progressDelay
	pr := newProgress(po, filepath.Base(o.model))
	start := time.Now()
	m, err := wgdelegate.Open(ctx, o.model, append([]wgdelegate.Option{wgdelegate.WithDevice(dev), wgdelegate.WithDataFiles(o.data...),
		wgdelegate.WithLogger(log), wgdelegate.WithProgress(pr.update),
		wgdelegate.WithKernels(wgdelegate.KernelConfig{Family: o.kernels, HalfKVCache: o.f16KV})}, verifyOption(o.verify)...)...)
	pr.finish(err == nil)
	if err != nil {
		return withDataHint(err, o.model, o.data)
	}
	defer m.Close()
	verifyNote(stderr, m, o.verify, o.verbose)
	load := time.Since(start)
	r, err := llm.New(m, info)
	if err != nil {
		return fmt.Errorf("%s: %w", o.model, err)
	}

	prompt := o.ids
	var chatStops []int32
	switch {
	case o.prompt != nil:
		text, bos, stops, err := chatPrompt(o, tok)
		if err != nil {
			return err
		}
		chatStops = stops
		if prompt, err = tok.Encode(text, bos); err != nil {
			return err
		}
	case prompt == nil && tok != nil && tok.BOS() >= 0:
		prompt = []int32{tok.BOS()}
	case prompt == nil && info.BOS >= 0:
		prompt = []int32{info.BOS}
	case prompt == nil:
		prompt = []int32{1}
	}
	o.stop = stopTokens(o, tok, info.EOS, chatStops)
	gen := o.gen
	gen.StopTokens = o.stop
	var text strings.Builder
	prev := prompt[len(prompt)-1]
	gen.OnToken = func(t int32) error {
		var s string
		if tok != nil {
			s = tok.Decode(prev, t)
			text.WriteString(s)
		} else {
			s = strconv.Itoa(int(t))
			if prev >= 0 && text.Len() > 0 {
				s = " " + s
			}
			text.WriteString(s)
		}
		prev = t
		if o.json {
			return nil
		}
		_, err := io.WriteString(stdout, s)
		return err
	}
	res, err := r.Generate(ctx, prompt, gen)
	interrupted := err != nil && ctx.Err() != nil
	if err != nil && !interrupted {
		if !o.json && text.Len() > 0 {
			fmt.Fprintln(stdout)
		}
		return err
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	st := res.Stats
	out := generateResult{Tokens: res.Tokens, Stop: res.Stop, PromptTokens: st.PromptTokens, GeneratedTokens: st.GeneratedTokens,
		PrefillMS: ms(st.Prefill), PromptTokPerS: st.PromptTokensPerSecond(), DecodeSteps: st.DecodeSteps,
		DecodeMS: ms(st.Decode), DecodeTokPerS: st.DecodeTokensPerSecond(), TTFTMS: ms(st.TimeToFirstToken),
		LoadMS: ms(load), GPUBytes: m.MemoryStats().TotalBytes(), GoHeapBytes: mem.HeapAlloc,
		MaxSeqLen: r.Convention().MaxSeqLen, MaxTokens: r.Convention().MaxTokens, Interrupted: interrupted}
	if out.Tokens == nil {
		out.Tokens = []int32{}
	}
	if o.json {
		if tok != nil {
			s := text.String()
			out.Text = &s
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout)
		if interrupted {
			fmt.Fprintf(stderr, "interrupted after %d generated tokens\n", out.GeneratedTokens)
		}
		fmt.Fprintf(stderr, "prompt: %d tokens in %.1f ms (%.1f tok/s)\n", out.PromptTokens, out.PrefillMS, out.PromptTokPerS)
		fmt.Fprintf(stderr, "decode: %d tokens, %d steps in %.1f ms (%.1f tok/s)\n", out.GeneratedTokens, out.DecodeSteps, out.DecodeMS, out.DecodeTokPerS)
		fmt.Fprintf(stderr, "time to first token: %.1f ms (load %.1f ms)\n", out.TTFTMS, out.LoadMS)
		fmt.Fprintf(stderr, "memory: GPU %s, Go heap %s\n", mib(out.GPUBytes), mib(int64(out.GoHeapBytes)))
	}
	if interrupted {
		// context.Canceled in the chain makes the exit status 130.
		return fmt.Errorf("generate: interrupted: %w", ctx.Err())
	}
	return nil
}
