// Package graph builds a decoded VkGraph on a WebGPU device and executes it.
//
// Build runs in phases, like the reference runtimes. Phases 1-3, the
// memory plan of phase 4, the plan of phase 5 (package lower) and every
// check of a graph are Analyze: device-free, one reading of the graph,
// done before the first GPU object exists.
//
//  1. Every op in the chain is looked up in the ops registry; all missing ops
//     are reported at once, before any GPU object exists.
//  2. Prescan: the sources of et_vk.prepack.default are collected, and every
//     argument of every other op (ValueList items included) and every graph
//     output counts as a direct use. A constant that is a prepack source and
//     never used directly is deferred: it gets no buffer of its own.
//  3. Values: tensors are sized (overflow-checked) and every constant's bytes
//     are resolved (inline region or named data) so a missing key fails
//     early, naming the key.
//  4. Memory: package memplan gives one buffer per non-negative mem_obj_id,
//     sized to its largest user, and a dedicated buffer to every constant and
//     negative-id tensor. Non-deferred constants are written with queue
//     writes straight from the caller's (memory-mapped) bytes. The shared
//     buffers are the exporter's budget: which tensor is bound to which is
//     decided after recording (step 5), from the lifetimes the recorded
//     dispatches give the tensors, so that a fused kernel never reads a
//     buffer it writes (see package memplan).
//  5. Package lower turns the chain into a plan (Analysis.Lowered): one
//     node per op, or a fused op standing for several (the elementwise
//     chains, a linear with its epilogue, rms_norm with the linears that
//     read it, the rope with its KV-cache attention, the rope tables read
//     whole, the views that share their input's buffer), every fusion
//     decided there once. The nodes record their dispatches in order
//     (record.go: an op through its registered function, a fused op
//     through its kind's kernel, or its fallback where the live shapes do
//     not fit it); prepack places its constant's bytes for its output's
//     dedicated buffer. Every form of a weight (as exported, prepacked,
//     packed, sliced into chunks, a persistent or half KV cache) is placed
//     and gets its buffer in one place, placeWeights (weights.go): what
//     the analysis decides before the recording, what the ops asked for
//     right after it; no buffer is made while an op records. Then the
//     transient tensors are bound to the shared buffers (memplan.Place)
//     and every
//     dispatch is checked to bind no buffer twice with one binding
//     writable. Parameters go to one uniform arena; bind groups are created
//     once.
//  6. One reused staging buffer per output.
//
// Execute uploads inputs, replays every dispatch in one compute pass and one
// submit, copies the outputs into their staging buffers in the same command
// buffer, and reads them back.
//
// # Dynamic shapes
//
// Serialized dims are upper bounds. Every op computes its outputs' live
// shapes from its inputs' (ops.Builder.SetDims), so when an Execute passes
// inputs smaller than the bounds the chain is re-recorded for them (same
// buffers, new uniforms and grids) and outputs come back with their live
// shapes. New SymInt input values alone (a decoder's input_pos) only
// re-run the ops that read them and rewrite their uniform params in place
// (refresh.go: the plan nodes whose SymInt reads moved); the chain is
// re-recorded only when they change a shape, kernel or grid. Same shapes and values as last time: nothing is
// re-recorded, and Execute makes no allocation beyond its outputs.
//
// # Float16
//
// FLOAT16 tensors (force_fp16 exports) are float32 on the device: Analyze
// gives every tensor its device dtype (DeviceDType) once, so ops see
// float32 and no kernel has a half variant (lavapipe's WGSL compiler
// rejects `enable f16`). Only two places know about halves: the load,
// which widens FLOAT16 constants (inline, named, prepacked) to float32
// exactly, and the host boundary, where a FLOAT16 input or output has its
// host dtype (HostDType: the staging_datatype when it is FLOAT32, as a
// force_fp16 export writes, else float16). Inputs take float16 data
// (widened) or float32/float64 data (rounded to half, as the reference
// runtime's staging copy does); outputs come back as halves' values, as
// float32 or narrowed to float16 (round to nearest even). Inside, values
// are float32 and never rounded to half, so results are at least as
// accurate as fp16 storage gives; the device memory of a FLOAT16 tensor
// is twice its serialized size (MemoryStats.Float16TensorBytes).
//
// FLOAT16 linear weights with K%8 == 0 are read as packed halves, 2 bytes
// a weight (ops/linear_f16.go, through the packed-weight cache). Which
// weights are read only packed is asked of the ops, not decided here by op
// name: Analyze asks every op that reads a weight (ops.LoadPackFor, with
// the load's device profile and kernel choices) whether its kernels read
// it only through a packing made at load; the linear family answers from
// its kernel table (both families read FLOAT16 weights as halves at every
// M). Those weights keep no float32 copy: Analyze defers them
// (Analysis.LoadPacked) and Build packs them before the first recording,
// so that a recording that stops early on SymInt placeholders cannot
// leave one unpacked for a re-recording, which never packs
// (ops.ErrNotPacked; a weight that other ops read too has its float32
// copy, which the linear then reads). ops.Config.NoHalfWeights keeps the
// float32 path.
//
// # Device profile and kernel families
//
// Build hands every op the device's profile (DeviceProfile: the adapter's
// class, CPU, integrated or discrete GPU, its vendor, name, limits and
// timestamp support; ops.Builder.DeviceProfile) with the load's kernel
// choices (Options.Kernels, ops.Builder.Config). ops.Resolve turns the two into the
// kernel family the ops record with: Kernels.Family when set (the CLI's
// --kernels cpu|gpu), else the class's (cpu on lavapipe, gpu on a GPU).
// The family only changes which kernels record; the graph, its memory plan
// and its plan (package lower's fusion decisions) are the same in both.
//
// # Half KV caches
//
// ops.Config.HalfKVCache (the reference runtime's enable_f16_kv_cache)
// holds KV caches as packed halves, two bytes an element
// (ops/attention_f16.go). Analyze picks them (Analysis.HalfKV): constants,
// or et_vk.prepack outputs of one, that nothing but the cache arguments
// of sdpa_with_kv_cache, update_cache and llama.custom_sdpa reads, that
// are neither graph inputs nor outputs, with an even head_dim; it defers
// them (no float32 buffer, not even the writable copy a constant cache
// otherwise gets), and Build makes each one's half buffer from its
// constant's values rounded to half before recording (makeHalfKV). Every
// other cache stays float32, so a graph output or another op's read of a
// cache sees its exact float32 values, never halves; a cache op may then
// get one half and one float32 cache. MemoryStats.HalfKVCacheBytes counts
// the half buffers.
//
// # Weights held in chunks
//
// A tensor larger than the device's maxStorageBufferBindingSize or
// maxBufferSize (Options.MaxBindingSize lowers both, for tests) cannot be
// one buffer. A constant over them that only ops able to read chunks read
// (ops.ChunkArgs: the linear family's weights, scales and biases but the
// q8ta linears', the tables of aten.embedding and embedding_q4gsw),
// directly or through et_vk.prepack, is held in chunks instead: Analyze
// defers it (Analysis.Chunked; it still counts against the memory limit)
// and the ops ask for the row ranges they need while recording
// (ops.Builder.SliceWeight, each range a buffer made from the constant's
// bytes through the deferred upload path, shared between the values of one
// named key, such as a tied embedding and classifier; Builder.Scratch, an op's
// private output). A linear then runs its kernel once per chunk of output
// columns into a scratch output and copies it into its columns of the
// output (packing each chunk, e.g. as halves, with its own packed-weight
// cache entry); an embedding runs shaders/embedding_chunk.wgsl once per
// chunk of table rows. Any other tensor over a limit is a *LimitError
// naming the op that needs it whole. MemoryStats (NumChunkedWeights,
// NumWeightChunks, ChunkBytes, ScratchBytes), DispatchInfo.Chunk and
// ChunkedWeights (for `wgdelegate inspect`) report them. A graph with no
// tensor over a limit records exactly what it did before.
//
// # Rejected inputs
//
// Every rejection is a returned error that errors.Is/As can classify; none
// panics, hangs, or allocates from an unchecked length. The catalogue, with
// the test that pins each entry:
//
//	input                                        error                                      test
//	blob/.pte/.ptd cut at any byte               *serialization.FormatError (ErrTruncated…) serialization.TestTruncateEveryByte
//	bad VH00 field, offsets/sizes past the end   FormatError: ErrBadHeader, ErrTruncated    serialization.TestRejectBlob
//	bad flatbuffer, vtable/strings out of range  FormatError: ErrBadFlatbuffer              serialization.TestRejectBlob
//	value id out of range (args, I/O, lists)     FormatError: ErrBadValueID                 serialization.TestRejectBlob
//	ValueList containing itself / a cycle        FormatError: ErrValueListCycle             serialization.TestRejectBlob
//	dims/list/value counts over the caps         FormatError: ErrLimit                      serialization.TestRejectBlob
//	unknown dtype, constant_id out of range      FormatError: ErrBadDataType, ErrBadIndex   serialization.TestRejectBlob
//	inline constant outside the constant region  *ConstantError (ErrConstant)               serialization.TestRejectInlineConstant, TestInlineConstant
//	.pte / .ptd structure (segments, eh00, FH01)  FormatError                               serialization.TestRejectProgram, TestRejectFlatTensor
//	execution plan (instructions, plan I/O ids)  FormatError                               serialization.TestRejectExecutionPlan
//	named key missing, or its data too short     *ConstantError naming the key              wgdelegate.TestMissingNamedKey, TestNamedDataTooShort
//	dims whose product overflows                 ErrInvalidGraph                            TestRejectGraphValues
//	tensor over maxStorageBufferBindingSize or
//	maxBufferSize (also shared memory objects),
//	unless a weight ops read in chunks           *LimitError naming the op (ErrDeviceLimit) TestDeviceLimit, TestChunkLimitError
//	tensors over the memory limit                ErrUnsupported                             TestMemoryLimit
//	op missing from the registry                 *ops.UnsupportedError listing all of them  wgdelegate.TestUnsupportedOpsListedAtOnce
//	op argument of the wrong kind or shape       *OpError wrapping *ops.ArgError (ops.ErrArg) TestRejectGraphValues, ops tests
//	tensor read before any op writes it          *OpError: ErrReadBeforeWrite, ErrInvalidGraph TestReadBeforeWrite
//	output nothing writes                        ErrReadBeforeWrite                         TestReadBeforeWrite
//	prepack into an aliased or constant tensor   ErrInvalidGraph / ops.ErrArg               wgdelegate.TestPrepackOutputAliasedRejected
//	mem_obj_ids whose tensors overlap in time    not rejected: re-bound (memplan.Place)     memplan.TestPlace, FuzzPlan
//	wrong input count, dtype, byte length        *InputError (ErrInput)                     wgdelegate.TestExecuteInputErrors
//	input larger than its bound, other rank,
//	SymInt input not a one-element int tensor    *InputError (ErrInput)                     TestExecuteInputBounds
//	int64 input value that overflows int32       *InputError (ErrInput)                     wgdelegate.TestExecuteInputErrors
//	NaN / ±Inf input values                      not rejected: computed as IEEE             TestNaNInfComputed
//	FLOAT16 input: bad byte count, int data      *InputError (ErrInput)                     wgdelegate.TestFP16InputErrors
//	FLOAT16 named data under 2 bytes/element     *ConstantError naming the key              TestFP16Constants
//	hostile bytes of any kind                    one of the above                           FuzzLoad, FuzzOpArgs, serialization.Fuzz*
package graph
