package serialization

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// Sentinel errors classify what went wrong. Every error that comes from bad
// input is a *FormatError whose Err is one of these, so callers can test with
// errors.Is and still get the byte offset with errors.As.
var (
	// ErrBadMagic means a fixed magic (VH00, eh00, FH01) is missing.
	ErrBadMagic = errors.New("bad magic")
	// ErrBadIdentifier means a flatbuffer file identifier (VK00, ET12, FT01)
	// does not match.
	ErrBadIdentifier = errors.New("bad flatbuffer identifier")
	// ErrTruncated means the data ends before a range it declares.
	ErrTruncated = errors.New("truncated data")
	// ErrBadHeader means header fields are inconsistent with each other.
	ErrBadHeader = errors.New("bad header")
	// ErrBadFlatbuffer means a flatbuffer is structurally invalid (misaligned
	// offsets, malformed vtables, unterminated strings, missing tables).
	ErrBadFlatbuffer = errors.New("bad flatbuffer")
	// ErrLimit means a count or size exceeds one of the package's caps
	// (MaxTensorDims, MaxListLen, ...).
	ErrLimit = errors.New("limit exceeded")
	// ErrBadValueID means a value id is outside [0, len(Graph.Values)), or
	// an EValue index (a DelegateCall argument) is outside its execution
	// plan's values.
	ErrBadValueID = errors.New("value id out of range")
	// ErrBadIndex means an index into a table other than the values
	// (constants, segments, delegate data, a plan's delegates) is out of
	// range.
	ErrBadIndex = errors.New("index out of range")
	// ErrValueListCycle: a ValueList contains itself, directly or through
	// other ValueLists.
	ErrValueListCycle = errors.New("ValueList cycle")
	// ErrBadDataType means a VkDataType is not one the schema defines.
	ErrBadDataType = errors.New("unknown data type")
	// ErrBadConstant means a constant's bytes do not fit where they are said
	// to be.
	ErrBadConstant = errors.New("bad constant")
	// ErrNamedConstant means a constant lives in named data, so its bytes
	// cannot be taken from the blob's constant region.
	ErrNamedConstant = errors.New("constant is named data")
	// ErrMissingKey means a named-data key is not present.
	ErrMissingKey = errors.New("missing named data key")
	// ErrDuplicateKey means one named-data key was given two different values.
	ErrDuplicateKey = errors.New("duplicate named data key")
	// ErrNoDelegate means a program has no delegate with the wanted id. The
	// concrete error is a *NoDelegateError.
	ErrNoDelegate = errors.New("no such delegate")
)

// FormatError reports malformed input. Off is the byte offset in the input
// passed to the exported function (-1 when no single offset applies), Val the
// offending value if there is one, and Err the sentinel that classifies it.
// It follows debug/elf.FormatError, with Err added for errors.Is.
type FormatError struct {
	Off int64
	Msg string
	Val any
	Err error
}

// Error formats the error as "serialization: <msg> (<val>) at offset <off>".
func (e *FormatError) Error() string {
	var b strings.Builder
	b.WriteString("serialization: ")
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	b.WriteString(msg)
	if e.Val != nil {
		fmt.Fprintf(&b, " (%v)", e.Val)
	}
	if e.Off >= 0 {
		fmt.Fprintf(&b, " at offset %d", e.Off)
	}
	return b.String()
}

// Unwrap returns the classifying sentinel (or underlying cause).
func (e *FormatError) Unwrap() error { return e.Err }

func formatErr(off int64, err error, val any, format string, args ...any) *FormatError {
	return &FormatError{Off: off, Msg: fmt.Sprintf(format, args...), Val: val, Err: err}
}

// NoDelegateError is returned by (*Program).DelegateBlob when no delegate has
// the wanted id. Have lists the distinct delegate ids the program does hold,
// in file order, so that "this is a QNN model, not a Vulkan one" is visible
// in the message.
type NoDelegateError struct {
	Want string
	Have []string
}

// Error names the wanted delegate and the ones the program has.
func (e *NoDelegateError) Error() string {
	if len(e.Have) == 0 {
		return fmt.Sprintf("serialization: no %s delegate; program has no delegates", e.Want)
	}
	return fmt.Sprintf("serialization: no %s delegate; program has delegates: [%s]", e.Want, strings.Join(e.Have, " "))
}

// Unwrap returns ErrNoDelegate.
func (e *NoDelegateError) Unwrap() error { return ErrNoDelegate }

// recoveredPanics counts panics turned into errors at the decode boundary.
// The verifier is meant to make them impossible; tests and fuzzers assert the
// count stays zero so a gap in the verifier is noticed rather than masked.
var recoveredPanics atomic.Int64

// recoverFormat converts a panic in generated flatbuffer code into a
// *FormatError. Use as: defer recoverFormat(&err, off).
func recoverFormat(err *error, off int64) {
	if r := recover(); r != nil {
		recoveredPanics.Add(1)
		*err = formatErr(off, ErrBadFlatbuffer, nil, "malformed flatbuffer: %v", r)
	}
}
