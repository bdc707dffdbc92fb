// Package memplan plans tensor buffers, in pure Go so it can be
// table-tested without a device.
//
// # The exporter's plan is a budget, not a binding
//
// ExecuTorch's Vulkan exporter plans memory greedily with
// allow_overlapping_allocations=False: a tensor's lifetime runs from the
// first to the last node that refers to it, and a shared object is reused as
// soon as its tensor is dead. A chain x → linear → t1 → relu → t2 → linear
// → t3 thus alternates two objects (x and t2 in one, t1 and t3 in the
// other). That plan is valid for the graph as exported, one op at a time.
// The runtime rewrites the graph while recording it (a linear absorbs the
// relu after it, an elementwise chain becomes one kernel), and a rewrite
// changes lifetimes: the fused linear reads x and writes t2 in one dispatch,
// and the exporter gave both one object. Binding by mem_obj_id would make
// that kernel read the buffer it writes.
//
// So mem_obj_id is taken as the exporter's budget, and the binding is
// decided after the rewrites:
//
//  1. Build places every tensor: constants and tensors with a negative id
//     get a dedicated buffer, deferred constants none, and every other
//     tensor (a "transient") is planned in the shared object of its
//     mem_obj_id, sized to its largest user. Those objects, exactly the
//     exporter's bytes, are the pool.
//  2. The graph records every op (fusion decided then) without binding any
//     transient tensor.
//  3. Place binds the transients to the pool from the lifetimes the recorded
//     dispatches give them: a tensor's span runs from the first to the last
//     dispatch that binds it (from before the first dispatch for a graph
//     input, which is uploaded first; to after the last for a graph output,
//     which is read back last); a tensor no dispatch binds (absorbed by a
//     fusion) occupies nothing. Tensors are taken by first use; each keeps
//     its own object when that is free for its whole span, else takes the
//     smallest free object that fits. Only when no object of the pool is
//     free is one added (Binding.Extra), which the graph reports
//     (MemoryStats.AddedSharedBytes) and counts against its memory limit.
//  4. Step 3 runs again after every re-recording (new input shapes), since
//     fusion is decided again there.
//
// When no rewrite changed who writes what, Place returns the exporter's
// assignment unchanged (every tensor is free in its own object by
// induction on first use). Fusion only merges adjacent dispatches and drops
// the absorbed intermediates, so the tensors live at a fused dispatch are
// never more than at the two it replaces, and the pool holds them: no chain
// the project fuses needs an added buffer (the end-to-end tests assert 0).
// Fusion therefore stays on for every exporter-planned graph, and a fused
// kernel never binds a buffer both read and written; the graph checks that
// invariant for every dispatch before it makes the bind groups.
//
// Greedy and PlanLikeExporter reproduce the exporter's planner (largest
// tensor first, first object with no overlapping tensor, else a new one);
// tests, examples and benchmarks use them to write graphs the way real
// exports are planned.
//
// # Where two values can share a buffer, and the test of each
//
//	place                                   how it is kept sound                               tests
//	shared objects (mem_obj_id >= 0)         transients bound after recording from dispatch      memplan.TestPlace, TestPlaceRandom;
//	                                         lifetimes (Place); every dispatch checked           graph.FuzzPlan (random valid plans,
//	                                                                                             bit-equal outputs)
//	elementwise fusion (ops/fuse.go)         absorbed outputs never bound; a chain stops only    opstest fuse/* under both plans
//	                                         where a fixed buffer (constant, dedicated,          (fuse/shared_buffer), TestFuseDecisions
//	                                         prepacked) is both read and written
//	matmul epilogue fusion (linear+relu,     same lifetimes; the fused kernel's input and        wgdelegate.TestE2EMLPExporterPlan (3 and 4
//	gelu, clamp, sigmoid)                    output never share a buffer                         linears), opstest TestMatmulEpilogueFusion
//	views (view_copy, squeeze/unsqueeze,     the output shares its input's buffer (graph         graph TestViewAliasing (both plans, with
//	clone, alias_copy)                       Alias) only if no later op writes either in place   and without aliasing),
//	                                         (ops.Op.Writes) and neither is persistent; a        TestViewAliasRefusedForInPlaceWrites;
//	                                         transient group is placed as one lifetime; a        opstest shape cases under both plans
//	                                         dispatch writing an aliased value is an error
//	permute_copy and other copies            a copy kernel into its own output                   opstest shape cases under both plans
//	in-place cache updates (update_cache,    write only prepack outputs or persistent copies     opstest TestKVCache*, wgdelegate
//	sdpa_with_kv_cache)                      of constants, which are always dedicated            TestE2EDecoderKVCache under both plans
//	prepack outputs                          dedicated; one with mem_obj_id >= 0 is rejected;   wgdelegate.TestPrepackOutputAliasedRejected
//	                                         a deferred one (read only packed) gets no buffer
//	re-recording for new shapes              Place runs again after every recording; output      opstest TestFuseReexecute, e2e
//	                                         readbacks follow the new buffers                    dynamic-batch MLP and CNN under both plans
//	graph inputs and outputs                 planned like any transient: an input lives from     memplan.TestExporterLifetimes,
//	                                         before the first dispatch, an output to after the  e2e tests under the exporter's plan
//	                                         last
//	packed weights, tied constants           read-only; one packed buffer per content ID         graph TestPackedWeightCache, TestPackedArgDeferred
//	early warm-up dispatches                 bind scratch buffers, never the graph's            graph TestEarlyWarmUp
//
// Sizes: every allocation is AllocSize of its bytes (a multiple of 4, at
// least 4); the device rounds buffers up further to its own alignment.
package memplan
