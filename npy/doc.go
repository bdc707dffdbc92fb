// Package npy reads and writes NumPy .npy files as host tensors. Its Tensor
// is wgdelegate.Tensor (both alias one type), so an array read here feeds
// Model.Execute as it is, and an output of Execute is written as it is:
//
//	x, err := npy.ReadFile("x.npy") // what np.save wrote
//	if err != nil { ... }
//	outs, err := m.Execute(ctx, x)
//	if err != nil { ... }
//	if err := npy.WriteFile("y.npy", outs[0]); err != nil { ... } // np.load reads it
//
// The package is pure Go: it links neither cgo nor the GPU code, so a
// program that only prepares or checks arrays can use it alone.
//
// The format (numpy.lib.format, "NEP 1") is a 6-byte magic "\x93NUMPY", a
// major and minor version byte, a little-endian header length (uint16 in
// version 1.0, uint32 in 2.0 and 3.0), then an ASCII (3.0: UTF-8) Python
// dict literal such as
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//
// padded with spaces and a final '\n' so the data starts on a 64-byte
// boundary, and finally the raw element bytes.
//
// Supported element types, as descr strings: '<f4' (float32), '<i4' (int32),
// '<i8' (int64), '|b1' (bool), '<f8' (float64), '|u1' (uint8), '|i1' (int8)
// and '<f2' (float16). Only little-endian, C-order arrays are accepted:
// big-endian data, Fortran order, structured and object dtypes are rejected
// with a *FormatError rather than converted.
//
// The reader treats its input as untrusted: the header length is capped
// (MaxHeaderLen) before anything is allocated for it, the header is parsed by
// a small literal parser with a nesting cap instead of anything eval-like,
// element counts are overflow-checked, and data is read in growing chunks so
// a forged shape cannot make it allocate more than the input holds.
//
// Errors are typed: everything the reader rejects is a *FormatError with
// the byte offset, wrapping one of the sentinels (ErrBadMagic, ErrVersion,
// ErrBadHeader, ErrUnsupportedDType, ErrBigEndian, ErrFortranOrder,
// ErrDataLength, ErrLimit); a tensor the writer cannot write is an error
// wrapping ErrUnsupportedDType, ErrBadShape, ErrDataLength or ErrLimit. I/O
// errors are returned wrapped, as they came.
//
// The writer produces the same bytes as NumPy's np.save (checked against
// files NumPy wrote, in testdata/), including the spare spaces NumPy leaves
// after the dict so the first axis can grow in place.
package npy
