package wgdelegate

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/graph"
)

// Head picks a decoder's next token on the device at the end of each
// step (the greedy pick, the first largest logit), so that a step reads
// back 4 bytes instead of the vocabulary's logits, and can feed that
// token to the next step without the host in between: Submit step t+1,
// then Wait for step t's token. The llm package's greedy decoding uses
// it. See graph.Head.
type Head = graph.Head

// HeadOptions name a Head's logits output and token input.
type HeadOptions = graph.HeadOptions

// HeadStep is a step submitted through a Head, awaiting Wait.
type HeadStep = graph.HeadStep

// StepOptions are what one step asks of a Head: the token fed from the
// previous pick, the top-k for a sampler.
type StepOptions = graph.StepOptions

// HeadResult is what a Head computed for one step: the greedy pick and,
// when asked, the largest logits with the softmax normalizer.
type HeadResult = graph.HeadResult

// TopLogit is one of a step's largest logits.
type TopLogit = graph.TopLogit

// MaxTopK is the largest StepOptions.TopK.
const MaxTopK = graph.MaxTopK

// NewHead makes a Head for the model's output o.Logits and input
// o.Token. A program of several delegate calls, or I/O a Head cannot
// serve, gives an error wrapping ErrUnsupported. Closing the model closes
// its heads.
func (m *Model) NewHead(o HeadOptions) (*Head, error) {
	if m.closed.Load() {
		return nil, m.closedErr()
	}
	if !m.direct {
		return nil, fmt.Errorf("wgdelegate: head: %w: the program calls %d delegates", ErrUnsupported, len(m.steps))
	}
	return m.steps[0].g.NewHead(o)
}
