package serialization

// Caps on counts and sizes read from untrusted input. Each is checked before
// anything sized by the count is allocated; exceeding one is a *FormatError
// wrapping ErrLimit. They are far above what real exports contain (a large
// LLM graph has tens of thousands of values) but small enough that a forged
// length cannot make the decoder allocate gigabytes.
const (
	// MaxTensorDims is the largest tensor rank accepted (ExecuTorch's own
	// kTensorDimensionLimit is 16).
	MaxTensorDims = 16
	// MaxListLen caps the items of one IntList, DoubleList, BoolList or
	// ValueList.
	MaxListLen = 1 << 24
	// MaxValues caps VkGraph.values and ExecutionPlan.values.
	MaxValues = 1 << 20
	// MaxChainLen caps VkGraph.chain and the instructions of one
	// ExecutionPlan chain.
	MaxChainLen = 1 << 20
	// MaxChains caps ExecutionPlan.chains (upstream writes exactly one).
	MaxChains = 1 << 16
	// MaxArgs caps OperatorCall.args and DelegateCall.args.
	MaxArgs = 1 << 16
	// MaxIOIDs caps VkGraph.input_ids and VkGraph.output_ids, and
	// ExecutionPlan.inputs and ExecutionPlan.outputs.
	MaxIOIDs = 1 << 16
	// MaxOperators caps ExecutionPlan.operators (one entry per distinct
	// kernel a plan calls).
	MaxOperators = 1 << 16
	// MaxConstants caps VkGraph.constants and VkGraph.shaders.
	MaxConstants = 1 << 20
	// MaxStringLen caps any string (op names, keys, delegate ids, String values).
	MaxStringLen = 1 << 20
	// MaxPlans caps Program.execution_plan.
	MaxPlans = 1 << 16
	// MaxDelegates caps delegates per plan, Program.backend_delegate_data and
	// compile specs per delegate.
	MaxDelegates = 1 << 16
	// MaxSegments caps Program.segments and FlatTensor.segments.
	MaxSegments = 1 << 20
	// MaxNamedData caps Program.named_data and FlatTensor.named_data.
	MaxNamedData = 1 << 20
	// MaxTensorBytes caps the byte size computed from a tensor's dims (1 TiB).
	MaxTensorBytes = 1 << 40
	// MaxFlatbufferSize is the largest flatbuffer accepted: flatbuffers use
	// 32-bit offsets and the Go runtime library assumes positions < 2 GiB.
	MaxFlatbufferSize = 1<<31 - 1
)
