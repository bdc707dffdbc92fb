package wgdelegate_test

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate"
)

// ExampleFromInt8 builds the int8 input of a statically quantized program
// whose boundary quantize was removed (ExecuTorch's quantize_io_pass): the
// caller quantizes, q = round(x/scale) + zero_point, and passes the codes.
func ExampleFromInt8() {
	t := wgdelegate.FromInt8([]int64{2, 2}, []int8{-128, -1, 0, 127})
	v, _ := t.Int8s()
	fmt.Println(t, t.Data, v)
	// Output:
	// int8 [2 2] [128 255 0 127] [-128 -1 0 127]
}
