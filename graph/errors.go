package graph

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrInvalidGraph: the graph is well-formed flatbuffer data but does not
	// make sense (a value of the wrong kind where a tensor is needed, an
	// unsupported dtype, an aliased prepack output, ...).
	ErrInvalidGraph = errors.New("invalid graph")
	// ErrUnsupported: the graph uses ops or features this runtime lacks.
	ErrUnsupported = errors.New("unsupported")
	// ErrConstant: a constant's bytes are missing or too short.
	ErrConstant = errors.New("bad constant")
	// ErrInput: Execute was given inputs that do not match the graph.
	ErrInput = errors.New("bad input")
	// ErrReadBeforeWrite: an op reads a tensor that is neither an input nor
	// a constant and that no earlier op writes (also matches
	// ErrInvalidGraph).
	ErrReadBeforeWrite = errors.New("tensor read before any op writes it")
	// ErrDeviceLimit: a tensor does not fit a device limit (also matches
	// ErrUnsupported); the error is a *LimitError.
	ErrDeviceLimit = errors.New("device limit exceeded")
	// ErrClosed: the graph was closed.
	ErrClosed = errors.New("graph is closed")
)

// OpError reports a failure while recording one OperatorCall.
type OpError struct {
	Index int    // position in the chain
	Name  string // OperatorCall.name
	Err   error
}

func (e *OpError) Error() string {
	return fmt.Sprintf("graph: op %d (%s): %v", e.Index, e.Name, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// ConstantError reports a constant whose bytes cannot be resolved.
type ConstantError struct {
	ValueID    int32
	ConstantID int32
	Key        string // named key, empty for inline constants
	Msg        string
}

func (e *ConstantError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("graph: constant value %d (named key %q): %s", e.ValueID, e.Key, e.Msg)
	}
	return fmt.Sprintf("graph: constant value %d (inline constant %d): %s", e.ValueID, e.ConstantID, e.Msg)
}

func (e *ConstantError) Unwrap() error { return ErrConstant }

// InputError reports an Execute input that does not match the graph;
// Index is -1 when the number of inputs is wrong.
type InputError struct {
	Index int
	Msg   string
}

func (e *InputError) Error() string {
	if e.Index < 0 { // the inputs as a whole: their number
		return "graph: inputs: " + e.Msg
	}
	return fmt.Sprintf("graph: input %d: %s", e.Index, e.Msg)
}

func (e *InputError) Unwrap() error { return ErrInput }

func invalidf(format string, a ...any) error {
	return fmt.Errorf("graph: %w: %s", ErrInvalidGraph, fmt.Sprintf(format, a...))
}

// LimitError reports a tensor that exceeds a device limit.
type LimitError struct {
	ValueID  int32  // the tensor (for a shared memory object, its largest user)
	MemObjID int32  // -1 unless the buffer is a shared memory object
	Bytes    int64  // the buffer size needed
	Limit    uint64 // the device's limit
	Name     string // the limit's WebGPU name
	// Op is the op that needs the tensor in one buffer: the first that
	// reads it where a weight held in chunks cannot be read, else the op
	// that writes it, else the first that reads it ("" when none does).
	Op string
}

func (e *LimitError) Error() string {
	op := ""
	if e.Op != "" {
		op = "op " + e.Op + ": "
	}
	if e.MemObjID >= 0 {
		return fmt.Sprintf("graph: %sshared memory object %d (largest user value %d) needs %d bytes, over the device's %s of %d bytes",
			op, e.MemObjID, e.ValueID, e.Bytes, e.Name, e.Limit)
	}
	return fmt.Sprintf("graph: %stensor value %d needs %d bytes, over the device's %s of %d bytes", op, e.ValueID, e.Bytes, e.Name, e.Limit)
}

// Is makes errors.Is match ErrDeviceLimit and ErrUnsupported.
func (e *LimitError) Is(target error) bool {
	return target == ErrDeviceLimit || target == ErrUnsupported
}
