package wgdelegate

import (
	"log/slog"
	"time"

	"github.com/wgdelegate/wgdelegate/ops"
)

// Option configures Open and Load.
type Option func(*config)

// config is what the options set.
type config struct {
	dataFiles   []string
	data        [][]byte
	device      *Device
	packedCache string
	logger      *slog.Logger
	progress    func(Progress)
	kernels     KernelConfig
	memLimit    int64
	maxBinding  uint64
	verifyData  bool
}

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// WithMemoryLimit caps the tensor bytes each delegate graph of the model
// may allocate, checked before any buffer is created; a model over it
// fails to load with an error wrapping ErrUnsupported. Without it (or
// with n <= 0) the limit is graph.DefaultMemoryLimit: three quarters of
// the host's memory on a CPU adapter or an integrated GPU, whose buffers
// are host memory, and none on a discrete GPU, whose memory size WebGPU
// does not report.
func WithMemoryLimit(n int64) Option {
	return func(c *config) { c.memLimit = n }
}

// WithMaxBindingSize lowers the device's maxStorageBufferBindingSize and
// maxBufferSize to n (when smaller) for the model's loads: a weight over
// it is held in chunks of rows, as one over the device's own limits is
// (MemoryStats.NumChunkedWeights), and any other tensor over it fails the
// load with a *LimitError. It lets a test exercise the chunked paths with
// small weights, or check that a model would load on a device with
// smaller limits; 0 keeps the device's.
func WithMaxBindingSize(n uint64) Option {
	return func(c *config) { c.maxBinding = n }
}

// WithDataFiles names .ptd files holding named constants (weights the
// exporter kept out of the .pte). They are memory-mapped during the load and
// unmapped once the constants are on the GPU. Repeatable; the entries of
// every file are merged with the program's own named data, and a key given
// twice with different bytes is an error.
func WithDataFiles(paths ...string) Option {
	return func(c *config) { c.dataFiles = append(c.dataFiles, paths...) }
}

// WithData is WithDataFiles for .ptd files already in memory. The bytes are
// only read during the load.
func WithData(ptds ...[]byte) Option {
	return func(c *config) { c.data = append(c.data, ptds...) }
}

// WithVerifyData checks, before anything reaches the device, that every
// named tensor the model's constants refer to (in the program's named data
// or a .ptd) hashes to its key: the exporter keys named data by the
// lowercase hex SHA-256 of its bytes, so a flipped bit anywhere in a
// weight is found. A mismatch fails the load with a *DataMismatchError
// (ErrDataMismatch) naming the key and the constant that reads it. A key
// that is not a SHA-256 (64 hex digits; other tools may name their data)
// cannot be checked: such tensors are loaded, counted in
// Model.VerifyStats (Unverifiable, the first few Keys) and logged at debug
// level, never counted as verified. Inline constants (older exports keep
// weights in the delegate blob) have no key and are not checked; the
// file structure is checked on every load either way.
//
// Off by default, for its cost: the tensors are hashed (SHA-256) on
// GOMAXPROCS goroutines before the load starts, 100 MiB in 175–390 ms
// (about 2.5–3 ms per MiB) on two shared vCPUs of a busy host, where a
// load of a 100 MiB .ptd then took 20% (eight convolutions, whose weight
// packing dominates) to 90% (two linear layers) longer (README,
// "Loading").
func WithVerifyData() Option {
	return func(c *config) { c.verifyData = true }
}

// WithDevice loads the model on d; the caller closes d after every model
// loaded on it. Without it, models share a process-wide default device
// (the default adapter, Vulkan first), opened by the first Open or Load
// that needs it and closed when the last model using it is closed; its
// pipeline cache lives as long as it does, so a program that loads models
// one after another should open a Device itself to keep the cache warm.
func WithDevice(d *Device) Option {
	return func(c *config) { c.device = d }
}

// WithPackedCache sets the directory of the packed-weight cache: weights
// in the layout the kernels want (PackedCacheFile in dir), so a second load
// of the same model, in this or a later process, packs nothing and writes
// the packed bytes from the file's memory mapping straight to the GPU.
// Entries are keyed by the weight's content and tagged with the packing
// kernel's content ID, so a changed kernel repacks instead of using stale
// data. Each entry's bytes are checked against their CRC-32C before they
// are used; a corrupt entry (or file) is packed again and rewritten, and a
// cache that cannot be read or written is done without: the load never
// fails for the cache's sake, and Model.PackedCacheErrors says what went
// wrong. Delete the directory to clear it. "" (the default) disables the
// cache.
func WithPackedCache(dir string) Option {
	return func(c *config) { c.packedCache = dir }
}

// KernelConfig is a load's kernel choices (ops.Config): the kernel family
// (Family: auto, cpu or gpu), the matmul kernel, weight packing for
// linears and convolutions, elementwise fusion. The zero value is the
// default: the family the adapter's class implies (Device.KernelFamily),
// with the choices measured best for it.
type KernelConfig = ops.Config

// KernelFamily is a set of kernels shaped for one kind of device
// (KernelConfig.Family; the CLI's --kernels).
type KernelFamily = ops.Family

// Kernel families: KernelsAuto picks by the adapter's class (KernelsCPU
// for a CPU adapter such as lavapipe, KernelsGPU for a discrete or
// integrated GPU); KernelsCPU and KernelsGPU force a family on any
// adapter (the GPU kernels run correctly, slowly, on lavapipe).
const (
	KernelsAuto = ops.FamilyAuto
	KernelsCPU  = ops.FamilyCPU
	KernelsGPU  = ops.FamilyGPU
)

// ParseKernelFamily parses "auto", "cpu" or "gpu" ("" is auto).
func ParseKernelFamily(s string) (KernelFamily, error) { return ops.ParseFamily(s) }

// WithKernels loads the model with kernel choices k instead of the
// defaults, e.g. to compare kernels on one model, or to turn elementwise
// fusion off and see every op's dispatch in a profile. Models with
// different choices can be loaded side by side.
func WithKernels(k KernelConfig) Option {
	return func(c *config) { c.kernels = k }
}

// WithLogger sends the load's and the graphs' log records (debug-level
// build summaries, warnings) to l. The default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithProgress calls fn as the load advances (see Progress). fn runs on the
// loading goroutine, between phases: keep it cheap and do not call back
// into the Model being loaded.
func WithProgress(fn func(Progress)) Option {
	return func(c *config) { c.progress = fn }
}

// Phase is a stage of a load, reported through WithProgress.
type Phase int

// Load phases, in the order they are reported. PhaseBuild is reported once
// before each delegate graph is built (constants written, memory planned,
// pipelines compiled and dispatches recorded): BytesDone counts the
// constant bytes of the graphs already built, so it advances one delegate
// at a time.
const (
	PhaseParse Phase = iota // the file is parsed and checked
	PhaseBuild              // delegate graph Delegate of Delegates is being built
	PhaseDone               // the model is ready
)

func (p Phase) String() string {
	switch p {
	case PhaseParse:
		return "parse"
	case PhaseBuild:
		return "build"
	case PhaseDone:
		return "done"
	}
	return "Phase(?)"
}

// Progress is one progress report of a load.
type Progress struct {
	Phase Phase
	// Delegate is the index of the delegate graph being built (in build
	// order; Delegates when done), of Delegates in all. A delegate the plan
	// calls several times is built once.
	Delegate, Delegates int
	// BytesDone and BytesTotal count the constant bytes (weights) written
	// to the GPU so far and in all.
	BytesDone, BytesTotal int64
	// Elapsed is the time since the load started.
	Elapsed time.Duration
}

// PackedCacheFile is the name of the packed-weight cache file inside the
// WithPackedCache directory.
const PackedCacheFile = "packed-weights.wgdc"
