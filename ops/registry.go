package ops

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// Func records the dispatches of one OperatorCall. args are the call's value
// ids exactly as serialized: schema arguments in order, then the output.
type Func func(b Builder, args []int32) error

// Op is one op's registration: its implementation and what the graph must
// know of its arguments before recording anything.
type Op struct {
	// Name is the exact OperatorCall.name the op implements.
	Name string
	// Run records the op's dispatches.
	Run Func
	// Packed lists the arguments (weights) the op reads only through
	// Builder.PackWeight. A constant whose every use is such an argument (or
	// an et_vk.prepack source) then gets no buffer of its own: only its
	// packed form is on the device. Run must call PackWeight for those
	// arguments on every path (IdentitySpec when it wants the weight as
	// exported).
	Packed []int
	// HostReads lists the tensor arguments whose VALUES the op reads on the
	// host while recording (Builder.HostElement): the graph re-records whenever
	// those values change, as it does for new shapes.
	HostReads []int
	// Writes lists the arguments, other than the op's output, that it
	// writes in place (a KV cache update). A value an op writes after it
	// was produced cannot share a buffer with a view of it (package
	// lower's views pass).
	Writes []int
	// LoadPacks lists the weight arguments the op's kernels may read only
	// through a packing made at load, before recording; LoadPack says,
	// for one such weight, device and load, whether they do and which
	// (LoadPackFor). The graph then gives the weight as exported no
	// buffer and packs it at load.
	LoadPacks []int
	LoadPack  func(arg int, w WeightInfo, fam Family, cfg Config) (LoadPack, bool)
	// View is set for an op whose output may hold its input's bytes as
	// they are (view_copy, squeeze, clone, a select from a dim of size
	// 1...). It checks the args and sets the output's shape like Run, and
	// reports the input when the output's bytes are the input's at the
	// live shapes; the graph then gives the output the input's buffer
	// instead of running Run, where package lower's views pass planned
	// it.
	View func(b Builder, args []int32) (in int32, ok bool, err error)
}

// WeightInfo is what the graph's analysis knows of a weight before any
// device object exists: its serialized dtype (FLOAT16 as such) and dims.
type WeightInfo struct {
	DType serialization.DataType
	Dims  []int64
}

// LoadPack is a packing a weight is read through, made at load: Name is
// its PackSpec.Name, Spec builds the spec for the weight.
type LoadPack struct {
	Name string
	Spec func(w Tensor, maxPerDim uint32) (PackSpec, error)
}

var (
	regMu    sync.RWMutex
	registry = map[string]Op{}
)

// RegisterOp adds op under op.Name. It is called from init functions; a
// duplicate name or a nil Run is a programming error and panics.
func RegisterOp(op Op) {
	regMu.Lock()
	defer regMu.Unlock()
	if op.Run == nil {
		panic("ops: Register " + op.Name + " with nil func")
	}
	if _, dup := registry[op.Name]; dup {
		panic("ops: Register called twice for " + op.Name)
	}
	op.Packed = append([]int(nil), op.Packed...)
	op.HostReads = append([]int(nil), op.HostReads...)
	op.Writes = append([]int(nil), op.Writes...)
	op.LoadPacks = append([]int(nil), op.LoadPacks...)
	registry[op.Name] = op
}

// Register is RegisterOp for an op with no packed arguments and no host
// reads.
func Register(name string, fn Func) { RegisterOp(Op{Name: name, Run: fn}) }

// PackedArgs returns the argument indices op name reads through PackWeight.
func PackedArgs(name string) []int {
	regMu.RLock()
	defer regMu.RUnlock()
	return registry[name].Packed
}

// LoadPackArgs returns the argument indices op name's kernels may read
// only through a packing made at load (Op.LoadPacks).
func LoadPackArgs(name string) []int {
	regMu.RLock()
	defer regMu.RUnlock()
	return registry[name].LoadPacks
}

// LoadPackFor reports whether op name's kernels, on a device of profile p
// with choices cfg, read argument arg, weight w, only through a packing
// made at load, and which: the question the graph's analysis asks before
// it gives a weight no buffer of its own.
func LoadPackFor(name string, arg int, w WeightInfo, p DeviceProfile, cfg Config) (LoadPack, bool) {
	regMu.RLock()
	op := registry[name]
	regMu.RUnlock()
	if op.LoadPack == nil || !slices.Contains(op.LoadPacks, arg) {
		return LoadPack{}, false
	}
	return op.LoadPack(arg, w, Resolve(cfg, p), cfg)
}

// ViewOf returns op name's Op.View, or nil.
func ViewOf(name string) func(b Builder, args []int32) (int32, bool, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	return registry[name].View
}

// HostReads returns the argument indices op name reads on the host.
func HostReads(name string) []int {
	regMu.RLock()
	defer regMu.RUnlock()
	return registry[name].HostReads
}

// WritesArgs returns the argument indices op name writes in place.
func WritesArgs(name string) []int {
	regMu.RLock()
	defer regMu.RUnlock()
	return registry[name].Writes
}

// Lookup returns the implementation registered for name.
func Lookup(name string) (Func, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	op, ok := registry[name]
	return op.Run, ok
}

// Names lists every registered op name, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// UnsupportedError lists every op of a graph that has no implementation.
type UnsupportedError struct {
	Ops []string // distinct names, in first-use order
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("ops: unsupported ops: %v", e.Ops)
}

// CheckSupported returns an *UnsupportedError naming every op in names that
// is not registered, or nil.
func CheckSupported(names []string) error {
	var missing []string
	seen := map[string]bool{}
	for _, n := range names {
		if _, ok := Lookup(n); !ok && !seen[n] {
			seen[n] = true
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return &UnsupportedError{Ops: missing}
	}
	return nil
}
