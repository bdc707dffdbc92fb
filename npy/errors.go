package npy

import (
	"errors"
	"fmt"
)

// Sentinel errors classify a malformed or unsupported file. Every error the
// reader returns for bad input is a *FormatError wrapping one of them.
var (
	// ErrBadMagic: the file does not start with "\x93NUMPY".
	ErrBadMagic = errors.New("not a .npy file")
	// ErrVersion: the format version is not 1.0, 2.0 or 3.0.
	ErrVersion = errors.New("unsupported .npy format version")
	// ErrBadHeader: the header dict is malformed or lacks a required key.
	ErrBadHeader = errors.New("malformed .npy header")
	// ErrUnsupportedDType: the descr names a type this package does not map.
	ErrUnsupportedDType = errors.New("unsupported dtype")
	// ErrBigEndian: the descr is a big-endian ('>') multi-byte type.
	ErrBigEndian = errors.New("big-endian data is not supported")
	// ErrFortranOrder: the array is stored in Fortran (column-major) order.
	ErrFortranOrder = errors.New("fortran_order arrays are not supported")
	// ErrDataLength: the data is shorter or longer than the shape needs.
	ErrDataLength = errors.New("data length does not match the header")
	// ErrLimit: a length, dim count or size exceeds one of the caps.
	ErrLimit = errors.New("limit exceeded")
	// ErrBadShape: a tensor given to the writer has a negative dimension.
	ErrBadShape = errors.New("bad shape")
)

// FormatError reports a malformed or unsupported .npy file: Off is the byte
// offset the problem was found at (-1 when none applies), Err the sentinel
// that classifies it.
type FormatError struct {
	Off int64
	Msg string
	Err error
}

func (e *FormatError) Error() string {
	msg := e.Msg
	if msg == "" {
		msg = e.Err.Error()
	}
	if e.Off >= 0 {
		return fmt.Sprintf("npy: %s at offset %d", msg, e.Off)
	}
	return "npy: " + msg
}

// Unwrap returns the classifying sentinel.
func (e *FormatError) Unwrap() error { return e.Err }

func formatErr(off int64, err error, format string, args ...any) *FormatError {
	return &FormatError{Off: off, Msg: fmt.Sprintf(format, args...), Err: err}
}
