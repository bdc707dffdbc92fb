package llm_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
)

// writeExampleModel writes a small random-weight Llama export (the
// project's writer; an ExecuTorch export_llama .pte works the same way)
// to a new temporary directory and returns the paths of its .pte and
// .ptd, and cleanup, which removes the directory.
func writeExampleModel() (pte, ptd string, cleanup func()) {
	dir, err := os.MkdirTemp("", "llm-example")
	if err != nil {
		log.Fatal(err)
	}
	cfg := models.LlamaConfig{Dim: 32, Hidden: 48, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 40,
		MaxSeq: 32, MaxTokens: 8, Eps: 1e-5, RopeTheta: 10000, Seed: 3}
	l, err := models.NewLlama(cfg, nil)
	if err != nil {
		log.Fatal(err)
	}
	f, err := models.Encode(l.B, true)
	if err != nil {
		log.Fatal(err)
	}
	pte, ptd = filepath.Join(dir, "llama.pte"), filepath.Join(dir, "llama.ptd")
	if err := os.WriteFile(pte, f.PTE, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(ptd, f.PTD, 0o644); err != nil {
		log.Fatal(err)
	}
	return pte, ptd, func() { os.RemoveAll(dir) }
}

// openExampleRunner opens the model writeExampleModel writes; close
// closes the runner and removes its files.
func openExampleRunner(ctx context.Context) (r *llm.Runner, close func()) {
	pte, ptd, cleanup := writeExampleModel()
	r, err := llm.Open(ctx, pte, wgdelegate.WithDataFiles(ptd))
	if err != nil {
		cleanup()
		log.Fatal(err)
	}
	return r, func() {
		r.Close()
		cleanup()
	}
}

// Open a Llama export, see how it is called, and generate greedily from a
// prompt of token ids.
func ExampleOpen() {
	ctx := context.Background()
	pte, ptd, cleanup := writeExampleModel()
	defer cleanup()

	r, err := llm.Open(ctx, pte, wgdelegate.WithDataFiles(ptd))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	c := r.Convention()
	fmt.Printf("tokens %v [1, %d], input_pos SymInt %v, vocabulary %d, cache %d positions\n",
		c.TokenType, c.MaxTokens, c.PosSymInt, c.Vocab, c.MaxSeqLen)

	res, err := r.Generate(ctx, []int32{1, 5, 9}, llm.GenerateOptions{MaxNewTokens: 10})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d tokens generated, %d decode steps, next position %d\n", len(res.Tokens), res.Stats.DecodeSteps, r.Pos())
	// Output:
	// tokens int32 [1, 8], input_pos SymInt false, vocabulary 40, cache 32 positions
	// 10 tokens generated, 9 decode steps, next position 12
}

// Stream tokens as they are sampled (temperature and top-p sampling with
// a seed), stopping early by breaking out of the loop.
func ExampleRunner_Stream() {
	ctx := context.Background()
	r, closeRunner := openExampleRunner(ctx) // llm.Open on a small Llama export
	defer closeRunner()

	n := 0
	opts := llm.GenerateOptions{MaxNewTokens: 20, Temperature: 0.8, TopP: 0.9, Seed: 7}
	for tok, err := range r.Stream(ctx, []int32{1}, opts) {
		if err != nil {
			log.Fatal(err)
		}
		if tok < 0 || tok >= 40 {
			log.Fatalf("token %d", tok)
		}
		if n++; n == 5 {
			break
		}
	}
	fmt.Println(n, "tokens streamed;", r.LastStats().GeneratedTokens, "generated")
	// Output: 5 tokens streamed; 5 generated
}

// Encode text and decode ids with a llama2.c tokenizer.bin.
func ExampleParseLlama2CTokenizer() {
	// A tokenizer whose piece for token i is "<i>" (models'
	// WriteLlama2CTokenizer); text without pieces falls back to bytes.
	var buf bytes.Buffer
	if err := models.WriteLlama2CTokenizer(&buf, 300); err != nil {
		log.Fatal(err)
	}
	tk, err := llm.ParseLlama2CTokenizer(buf.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	ids, err := tk.Encode("Hi", true)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids, tk.Decode(ids[0], ids[1])+tk.Decode(ids[1], ids[2]))
	// Output: [1 75 108] <75><108>
}
