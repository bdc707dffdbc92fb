package ops_test

import (
	"fmt"
	"strings"

	"github.com/wgdelegate/wgdelegate/ops"
)

// The gpu family's linear kernels in order of preference: a call runs the
// first that fits it. A load whose Config.SkipKernels names some of them
// runs the next that fits instead, e.g. the kernels that issue 33's
// replaced, for a benchmark that measures both in one run.
func ExampleLinearKernelNames() {
	var gpu []string
	for _, name := range ops.LinearKernelNames() {
		if strings.HasPrefix(name, "gpu/") {
			gpu = append(gpu, name)
		}
	}
	fmt.Println(strings.Join(gpu, " "))
	old := ops.Config{Family: ops.FamilyGPU, SkipKernels: "gpu/q4gemv,gpu/qcgemv,gpu/tiled128,gpu/skinny"}
	fmt.Println(old.SkipKernels)
	// Output:
	// gpu/gemv-half gpu/tiled-half gpu/skinny gpu/gemv gpu/tiled128 gpu/tiled gpu/q4gemv gpu/qcgemv gpu/qgemv gpu/qtiled
	// gpu/q4gemv,gpu/qcgemv,gpu/tiled128,gpu/skinny
}
