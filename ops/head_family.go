package ops

import (
	"fmt"
	"slices"
	"strings"
)

// The device head's kernels (graph's Head: the greedy pick, argmax.wgsl,
// and the sampler's top-k, topk.wgsl, over one row of logits) are no op,
// but their choice is data like the linear family's: headKernels, the
// first entry of the load's family that fits the row's length, passed
// over by Config.SkipKernels by name.
//
// One workgroup scans a row of 32,000 logits, or of 128,256 (Llama 3),
// one dependent load after another per lane (about 125 and 500 of them):
// on a GPU that is one of its 132 SMs working while the rest idle. The
// two-level kernels split the row in chunks, one workgroup each, then
// reduce the chunks' results in one workgroup: argmax one dispatch more
// (chunks of 512: 251 workgroups at 128,256), top-k eight more (its
// radix select decides each 8-bit digit in a dispatch of its own, chunks
// of 1024). At 32,000 the one-workgroup argmax is predicted at 5-15 µs
// on an H100 (../shared/spec/gpu-predictions.md §2), about what a second
// dispatch costs, so the split starts past 32,768: a 32,000-token model
// keeps its dispatch count. On lavapipe (the cpu family) the numbers are
// measured in headKernels' comments.

// HeadKernel is the kernel a head picks with over rows of logits: its
// table entry, and Chunk, the elements per workgroup of the two-level
// kernels' first dispatch (0: one workgroup does it all).
type HeadKernel struct {
	Name  string
	Chunk int64
}

// headEntry is one entry of headKernels.
type headEntry struct {
	name   string
	family Family // FamilyAuto: either
	topk   bool   // the top-k kernel (else argmax)
	chunk  int64  // 0: the one-workgroup kernel
	minN   int64  // the shortest row it serves
}

// headKernels is the head's kernel table, in order of preference.
//
// The cpu family (lavapipe, 2 vCPUs shared with other work;
// BenchmarkHeadKernels in graph, a step copying 128,256 logits and
// picking from them, medians of 30 steps alternated, two runs each): the
// two-level argmax was slower at every chunk tried (4096: 1093-1098 µs
// against 414-420 for one workgroup; 16384: 701 against 488; 32768:
// 761-868 against 634-762; 65536: 595-598 against 586-587), so the cpu
// family keeps the one-workgroup argmax; the two-level top-k was faster
// from 16384 on (32768: 4762-5246 µs against 5528-6302; 65536:
// 4726-5332 against 5711-6403), so it takes chunks of 32768 where there
// are at least three. The gpu family's chunks are sized for a GPU's SMs;
// on lavapipe its two-level kernels are 5-10 times slower than one
// workgroup (251 workgroups of 256 lanes each), which says nothing about
// a GPU.
var headKernels = []headEntry{
	{name: "gpu/argmax-split", family: FamilyGPU, chunk: 512, minN: 32769},
	{name: "any/argmax", family: FamilyAuto},
	{name: "gpu/topk-split", family: FamilyGPU, topk: true, chunk: 1024, minN: 32769},
	{name: "cpu/topk-split", family: FamilyCPU, topk: true, chunk: 32768, minN: 65537},
	{name: "any/topk", family: FamilyAuto, topk: true},
}

// maxHeadGroups bounds the first dispatch's workgroups (one dimension of
// the grid); a longer row gets longer chunks.
const maxHeadGroups = 65535

// HeadKernels returns the argmax and top-k kernels a load with choices
// cfg picks on a device of profile p over rows of n logits. A
// Config.SkipKernels naming no kernel is an ErrConfig.
func HeadKernels(cfg Config, p DeviceProfile, n int64) (argmax, topk HeadKernel, err error) {
	if err := checkSkipKernels(cfg); err != nil {
		return argmax, topk, err
	}
	fam := Resolve(cfg, p)
	pick := func(top bool) HeadKernel {
		for _, e := range headKernels {
			if e.topk != top || (e.family != fam && e.family != FamilyAuto) || cfg.skipsKernel(e.name) || n < e.minN {
				continue
			}
			k := HeadKernel{Name: e.name, Chunk: e.chunk}
			for k.Chunk > 0 && (n+k.Chunk-1)/k.Chunk > maxHeadGroups {
				k.Chunk *= 2
			}
			return k
		}
		return HeadKernel{Name: "any/argmax"} // not reached: the any/ entries fit every row
	}
	return pick(false), pick(true), nil
}

// headKernelNames lists headKernels' entries (names Config.SkipKernels
// takes).
func headKernelNames() []string {
	names := make([]string, len(headKernels))
	for i, e := range headKernels {
		names[i] = e.name
	}
	return names
}

// KernelNames lists every kernel table entry Config.SkipKernels may
// name: the linear family's (LinearKernelNames), the head's and the
// attention's (attnKernels in attention.go).
func KernelNames() []string {
	return slices.Concat(LinearKernelNames(), headKernelNames(), attnKernelNames())
}

// checkSkipKernels returns an error naming the first of cfg.SkipKernels
// that is no table entry.
func checkSkipKernels(cfg Config) error {
	names := KernelNames()
	for _, name := range cfg.skipped() {
		if !slices.Contains(names, name) {
			return fmt.Errorf("%w: Config.SkipKernels: no kernel %q (have %s)", ErrConfig, name, strings.Join(names, ", "))
		}
	}
	return nil
}
