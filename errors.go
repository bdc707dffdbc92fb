package wgdelegate

import (
	"errors"
	"fmt"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// The errors below are the ones Open, Load and Execute return from the
// packages underneath, re-exported so that this package alone is enough to
// classify a failure. Each is the very value (or, for a type, an alias of
// the very type) its own package defines, so errors.Is and errors.As match
// whichever name is used.

// Errors from reading a model file (package serialization). Malformed input
// is a *FormatError carrying the byte offset and wrapping one of the
// sentinels below; a program without a VulkanBackend delegate is a
// *NoDelegateError wrapping ErrNoDelegate.
var (
	// ErrBadMagic: a fixed magic (VH00, eh00, FH01) is missing.
	ErrBadMagic = serialization.ErrBadMagic
	// ErrBadIdentifier: a flatbuffer file identifier (VK00, ET12, FT01)
	// does not match.
	ErrBadIdentifier = serialization.ErrBadIdentifier
	// ErrTruncated: the data ends before a range it declares.
	ErrTruncated = serialization.ErrTruncated
	// ErrBadHeader: header fields are inconsistent with each other.
	ErrBadHeader = serialization.ErrBadHeader
	// ErrBadFlatbuffer: a flatbuffer is structurally invalid.
	ErrBadFlatbuffer = serialization.ErrBadFlatbuffer
	// ErrLimit: a count or size in the file exceeds one of serialization's
	// caps (MaxTensorDims, MaxValues, ...). Device limits are ErrDeviceLimit.
	ErrLimit = serialization.ErrLimit
	// ErrBadValueID: a value id or EValue index is out of range.
	ErrBadValueID = serialization.ErrBadValueID
	// ErrBadIndex: an index into another table (constants, segments,
	// delegate data, a plan's delegates) is out of range.
	ErrBadIndex = serialization.ErrBadIndex
	// ErrValueListCycle: a ValueList contains itself.
	ErrValueListCycle = serialization.ErrValueListCycle
	// ErrBadDataType: a VkDataType the schema does not define.
	ErrBadDataType = serialization.ErrBadDataType
	// ErrBadConstant: a constant's bytes do not fit where the blob says
	// they are. A constant that cannot be resolved at load is ErrConstant.
	ErrBadConstant = serialization.ErrBadConstant
	// ErrNamedConstant: a constant lives in named data, not in the blob.
	ErrNamedConstant = serialization.ErrNamedConstant
	// ErrMissingKey: a named-data key is not present.
	ErrMissingKey = serialization.ErrMissingKey
	// ErrDuplicateKey: one named-data key was given two different values.
	ErrDuplicateKey = serialization.ErrDuplicateKey
	// ErrNoDelegate: the program has no VulkanBackend delegate.
	ErrNoDelegate = serialization.ErrNoDelegate
)

// FormatError reports malformed input at a byte offset (Off) of the file;
// its Err is one of the sentinels above.
type FormatError = serialization.FormatError

// NoDelegateError names the delegates a program has when it has none of
// the wanted id.
type NoDelegateError = serialization.NoDelegateError

// Errors from building and running a delegate graph (package graph).
var (
	// ErrInvalidGraph: the graph is well-formed data that does not make
	// sense (a value of the wrong kind, an unsupported dtype, ...).
	ErrInvalidGraph = graph.ErrInvalidGraph
	// ErrUnsupported: the graph uses ops or features this runtime lacks;
	// missing ops come as one *UnsupportedError listing all of them.
	ErrUnsupported = graph.ErrUnsupported
	// ErrConstant: a constant's bytes are missing or too short; the error
	// is a *ConstantError.
	ErrConstant = graph.ErrConstant
	// ErrInput: Execute was given inputs that do not match the model; the
	// error is an *InputError.
	ErrInput = graph.ErrInput
	// ErrReadBeforeWrite: an op reads a tensor nothing wrote first (also
	// matches ErrInvalidGraph).
	ErrReadBeforeWrite = graph.ErrReadBeforeWrite
	// ErrDeviceLimit: a tensor does not fit a device limit (also matches
	// ErrUnsupported); the error is a *LimitError.
	ErrDeviceLimit = graph.ErrDeviceLimit
	// ErrClosed: Execute on a closed model.
	ErrClosed = graph.ErrClosed
)

// OpError reports a failure while recording one op of a delegate graph.
type OpError = graph.OpError

// ConstantError reports a constant whose bytes cannot be resolved.
type ConstantError = graph.ConstantError

// InputError reports an Execute input that does not match the model.
type InputError = graph.InputError

// LimitError reports a tensor that exceeds a device limit.
type LimitError = graph.LimitError

// ErrArg classifies a bad op argument (a wrong value kind, a bad shape, an
// unsupported dtype); the error is an *ArgError inside an *OpError.
var ErrArg = ops.ErrArg

// ArgError describes a bad argument of one op.
type ArgError = ops.ArgError

// UnsupportedError lists every op of a graph that has no implementation.
type UnsupportedError = ops.UnsupportedError

// ErrDeviceLost is returned by every GPU operation once the device is lost
// (driver reset): close the Device and its models and open a new one.
var ErrDeviceLost = gpu.ErrDeviceLost

// OptionError reports a DeviceOptions field out of range (OpenDevice
// returns it before touching the driver).
type OptionError = gpu.OptionError

// ErrIndex: Model.InputInfo or Model.OutputInfo was given an index the
// model does not have; the error is an *IndexError. Unlike the errors
// above it is this package's own.
var ErrIndex = errors.New("index out of range")

// IndexError reports an input or output index outside the model's:
// What is "input" or "output", Count how many the model has.
type IndexError struct {
	What  string
	Index int
	Count int
}

func (e *IndexError) Error() string {
	return fmt.Sprintf("wgdelegate: %s %d out of range: the model has %d %s(s)", e.What, e.Index, e.Count, e.What)
}

// Unwrap returns ErrIndex.
func (e *IndexError) Unwrap() error { return ErrIndex }
