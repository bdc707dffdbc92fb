package llm_test

import (
	"errors"
	"fmt"

	"github.com/wgdelegate/wgdelegate/llm"
)

// ExampleGenerateOptions_Validate checks sampling options before any model
// is loaded, as the CLI's generate does with its flags.
func ExampleGenerateOptions_Validate() {
	for _, o := range []llm.GenerateOptions{
		{Temperature: 0.8, TopP: 0.9},
		{Temperature: 0.8, TopP: 1.5},
		{RepeatPenalty: 1.1, RepeatLastN: llm.RepeatLastNOff},
		{RepeatLastN: -3},
	} {
		err := o.Validate()
		fmt.Println(errors.Is(err, llm.ErrOption), err)
	}
	// Output:
	// false <nil>
	// true llm: bad option: top-p 1.5, want 0..1
	// false <nil>
	// true llm: bad option: repeat-last-n -3, want a token count, 0 (the default, 64), -1 (every token) or -2 (off)
}
