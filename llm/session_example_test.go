package llm_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Two conversations on one loaded model: each session keeps its own KV
// cache between turns, so a conversation's next turn, sent whole,
// prefills only its new tokens.
func ExamplePool() {
	ctx := context.Background()
	pte, ptd, cleanup := writeExampleModel()
	defer cleanup()
	m, err := wgdelegate.Open(ctx, pte, wgdelegate.WithDataFiles(ptd))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	mf, err := serialization.MapFile(pte)
	if err != nil {
		log.Fatal(err)
	}
	info, err := llm.InspectProgram(mf.Bytes())
	mf.Close()
	if err != nil {
		log.Fatal(err)
	}

	p, err := llm.NewPool(m, info, llm.SessionOptions{MaxSessions: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	greedy := llm.GenerateOptions{MaxNewTokens: 4}
	alice, err := p.New()
	if err != nil {
		log.Fatal(err)
	}
	bob, err := p.New()
	if err != nil {
		log.Fatal(err)
	}
	convA, convB := []int32{1, 5, 9}, []int32{1, 7}
	for turn := range 2 {
		for _, c := range []struct {
			name string
			s    *llm.Session
			conv *[]int32
		}{{"alice", alice, &convA}, {"bob", bob, &convB}} {
			res, err := c.s.Generate(ctx, *c.conv, greedy)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("turn %d, %s: %d prompt tokens reused, %d prefilled\n", turn, c.name, res.Stats.ReusedTokens, res.Stats.PromptTokens)
			// The reply and the user's next message join the conversation.
			*c.conv = slices.Concat(*c.conv, res.Tokens, []int32{2, 3})
		}
	}
	st := p.Stats()
	fmt.Printf("%d sessions, %d saved states of %d bytes, %d switches\n", st.Sessions, st.Stores, st.StateBytes, st.Switches)
	// Output:
	// turn 0, alice: 0 prompt tokens reused, 3 prefilled
	// turn 0, bob: 0 prompt tokens reused, 2 prefilled
	// turn 1, alice: 6 prompt tokens reused, 3 prefilled
	// turn 1, bob: 5 prompt tokens reused, 3 prefilled
	// 2 sessions, 2 saved states of 8192 bytes, 2 switches
}
