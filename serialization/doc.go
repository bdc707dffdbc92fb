// Package serialization reads and writes the files an ExecuTorch Vulkan
// delegate travels in, and is the only package in this module that touches
// flatbuffers. Everything else gets plain Go structs (Graph, Value, Tensor,
// OpCall, Program, NamedDataMap) and never sees a byte offset.
//
// # Formats
//
// The section numbers below refer to the project's format notes (the
// ExecuTorch Vulkan delegate format: VH00 header, VkGraph schema, .pte and
// .ptd containers), which follow the upstream sources.
//
//   - The delegate blob (§1): a 30-byte "VH00" header padded to 32, the
//     VkGraph flatbuffer at offset 32 padded to 16, then a region of inline
//     constant bytes. ParseHeader, DecodeBlob and EncodeBlob handle it.
//   - The VkGraph flatbuffer (§2, identifier "VK00"): the graph of values
//     and operator calls. DecodeGraph and EncodeGraph handle it; Builder
//     assembles one value at a time, like upstream's VkGraphBuilder.
//   - The .pte program (§7.1, identifier "ET12", optional "eh00" header):
//     ParseProgram finds the delegates, their bytes (inline or in a segment),
//     the program's named data, its execution plans (inputs, outputs and
//     every instruction of every chain, a KernelCall with the operator it
//     names) and the DelegateCall instructions with the host-side types of
//     their arguments (DelegateIO); EncodePTE writes a minimal one for tests.
//   - The .ptd file (§7.2, identifier "FT01", "FH01" header): named tensor
//     data kept outside the .pte. ParseFlatTensor and EncodePTD.
//
// The schemas in schema/ were written from the spec, field by field in
// upstream's slot order; internal/fb holds the code flatc generates from
// them (see generate.go; a test fails if the two drift apart).
//
// # Untrusted input
//
// Every reader assumes hostile bytes. The flatbuffers Go runtime has no
// verifier, so this package carries its own (verify.go): each table, vector
// and string is bounds- and alignment-checked right before the generated
// accessors read it, the way the C++ flatbuffers::Verifier would. Counts
// are checked against named caps (MaxTensorDims, MaxListLen, MaxValues, ...)
// before anything is allocated from them, and the total decoded data is
// bounded by the input's size, so a small file whose tables all share one
// big vector cannot make the decoder allocate gigabytes. Value ids, constant
// ids, segment and delegate indices are range-checked during decoding, so
// callers can index with what they get. A recover at each entry point turns
// any panic the checks missed into an error, and the fuzz tests fail if that
// ever happens.
//
// Errors from bad input are *FormatError values carrying the byte offset
// (relative to the slice passed in) and a sentinel such as ErrTruncated or
// ErrBadValueID for errors.Is. A program without the wanted delegate gives
// a *NoDelegateError that lists the delegates it does have.
//
// # Defaults
//
// flatc omits scalars equal to their schema default, and the decoder must
// give the default back: an absent constant_id is constant 0, an absent
// mem_obj_id is shared object 0, an absent datatype is BOOL, storage type and
// layout default to 255 and staging_datatype to 127 (UNSET). The exporter
// writes -1 explicitly for "not a constant" and "dedicated allocation". The
// writers omit defaults the same way, so their output matches flatc's in
// content (not in byte placement).
//
// # Zero copy
//
// Large data is never copied. Blob.Constants, delegate bytes, segments and
// named data are sub-slices of the input, cut with a capped capacity so an
// append cannot spill into the file. MapFile maps .pte and .ptd files
// read-only, so a multi-gigabyte model costs page cache, not heap. The
// flip side: results refer into the input and must not outlive it, and for
// a MappedFile must not be used after Close.
package serialization
