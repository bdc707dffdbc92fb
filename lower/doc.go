// Package lower turns an analysed graph into a plan: the nodes the graph
// records, each one op of the chain or a fused op standing for several,
// decided once at load by passes over the whole chain, without a device.
// It is where every fusion decision lives; package ops records what a
// plan says (a fused op's kernel is registered under its kind with
// ops.RegisterFused and reads its members' arguments like any op), and
// package graph records the plan node by node (graph/record.go).
//
// # Input and output
//
// Lower reads an Input: the decoded chain, its Uses (each value's readers
// and writer, the graph outputs), the analysis' facts about each tensor
// (device dtype and size; constant; transient, that is in one of the
// exporter's shared objects; deferred; prepacked; held in chunks) and the
// load's options (ops.Config's NoElementwiseFusion and NoViewAliasing).
// It returns a Plan: its Nodes in chain order, every op of the chain in
// exactly one. A node is
//
//   - KindOp: one op, recorded by its registered function;
//   - KindView: a view op whose output takes its input's buffer instead of
//     a copy when the op's View says the bytes are the input's at the live
//     shapes (otherwise it records the copy);
//   - KindFused: a group (ops.Group: its kind, its members' names and
//     arguments, their roles), recorded by the kernel of its kind at the
//     group's first member. The kernel checks what depends on live shapes
//     (one row; an operand that broadcasts without growing the result;
//     the kernel the family picks) before it records anything; where it
//     records nothing, a guarded node records its Fallback instead: its
//     members as the passes after the one that made it lower them on
//     their own (a prefill's rms_norm group becomes the linears with
//     their epilogues). An elementwise chain records the longest prefix
//     that fits, and the graph offers the kernel the rest again.
//
// # The passes, in order
//
// Each claims ops before the next sees them; each is one file.
//
//  1. views (views.go): view_copy, squeeze, unsqueeze, clone, alias_copy,
//     _clone_dim_order and select_copy become KindView where no op after
//     them writes the input, its root or the output in place, and neither
//     is a persistent (prepacked) or deferred value.
//  2. rope_cache (rope.go): et_vk.apply_rotary_emb and the
//     sdpa_with_kv_cache that alone reads its rotated k (and takes its
//     rotated q, with a v computed before the rope) become one
//     FusedRopeCache: the cache update in the rope's dispatch, then the
//     attention. Guarded.
//  3. rope_tables (rope.go): the slices of the cos and sin tables that
//     only llama ropes read (over one start and end) become
//     FusedTableSlice nodes that record no copy, and the ropes
//     FusedRopeTables nodes reading the whole tables from the slices'
//     start row; both check the same guard (the start is a row of the
//     table) on the same value, so they decide alike.
//  4. norm_linears (norm.go): an et_vk.rms_norm read only by linears
//     without bias (aten.linear, et_vk.linear_q4gsw) whose weights are not
//     held in chunks becomes one FusedNormLinears, SwiGLU's sigmoid and
//     muls included where two of the linears are its gate and up. Guarded
//     (one row, every linear on its family's one-row kernel).
//  5. linear_epilogue (epilogue.go): a linear-family op whose kernel
//     applies an epilogue (ops.TakesEpilogue) takes the activation or SiLU
//     that follows it, then a residual add (alpha 1) or mul by a tensor of
//     its shape computed before it, as one FusedLinearEpilogue. Guarded.
//  6. elementwise (elementwise.go): runs of consecutive float32 unary and
//     binary ops (ops.FusableElementwise), each the sole reader of the
//     one before, become FusedElementwise chains.
//
// # One matcher, one legality check
//
// Every pass matches through the same steps (match.go): a value's sole
// reader (soleUse: one argument of one op reads it, and it is no graph
// output) and the op names and argument layouts the kernels take. Every
// group passes one check, legal: a group records all its members at its
// first member's place, so nothing that runs between its members may
// write a tensor it reads or touch one it writes before the member that
// writes it, and what it reads must hold its value before it runs. Under
// the exporter's greedy memory plans transient tensors share objects; the
// graph binds them after recording, from the lifetimes the recorded
// dispatches give them (memplan.Place), so a fused kernel never reads a
// buffer it writes through another name, and only values with buffers of
// their own need checking here, by id. The table tests give, per pass, the
// graphs that fuse and those that must not, the greedy-plan cases among
// them (graph in, plan out, no device).
package lower
