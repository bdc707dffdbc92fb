package ops

import (
	"fmt"
	"sort"
	"sync"
)

// Func records the dispatches of one OperatorCall. args are the call's value
// ids exactly as serialized: schema arguments in order, then the output.
type Func func(b Builder, args []int32) error

var (
	regMu    sync.RWMutex
	registry = map[string]Func{}
)

// Register adds fn under the exact OperatorCall.name it implements. It is
// called from init functions; a duplicate name is a programming error and
// panics.
func Register(name string, fn Func) {
	regMu.Lock()
	defer regMu.Unlock()
	if fn == nil {
		panic("ops: Register " + name + " with nil func")
	}
	if _, dup := registry[name]; dup {
		panic("ops: Register called twice for " + name)
	}
	registry[name] = fn
}

var (
	hostReads  = map[string][]int{}
	packedArgs = map[string][]int{}
)

// RegisterPacked declares that op name reads its arguments args (weights)
// only through Packer.PackWeight. A constant whose every use is such an
// argument (or an et_vk.prepack source) then gets no buffer of its own:
// only its packed form is on the device. The op must call PackWeight for
// those arguments on every path (IdentitySpec when it wants the weight as
// exported).
func RegisterPacked(name string, args ...int) {
	regMu.Lock()
	defer regMu.Unlock()
	packedArgs[name] = append([]int(nil), args...)
}

// PackedArgs returns the argument indices op name reads through PackWeight.
func PackedArgs(name string) []int {
	regMu.RLock()
	defer regMu.RUnlock()
	return packedArgs[name]
}

// RegisterHostRead declares that op name reads the VALUES of its tensor
// arguments args on the host while recording (HostReader): the graph then
// re-records whenever those values change, as it does for new shapes.
func RegisterHostRead(name string, args ...int) {
	regMu.Lock()
	defer regMu.Unlock()
	hostReads[name] = append([]int(nil), args...)
}

// HostReads returns the argument indices op name reads on the host.
func HostReads(name string) []int {
	regMu.RLock()
	defer regMu.RUnlock()
	return hostReads[name]
}

// HostReader is implemented by builders that can hand an op the host value
// of a graph input's element (flat row-major index) during recording.
type HostReader interface {
	HostElement(id int32, flat int64) (float64, error)
}

// Lookup returns the implementation registered for name.
func Lookup(name string) (Func, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	fn, ok := registry[name]
	return fn, ok
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
