// Package lower turns an analysed graph into a plan: the nodes the graph
// records, each one op of the chain or a fused op standing for several,
// decided once at load by passes over the whole chain, without a device.
//
// DRAFT (the inventory this package is built from; replaced by the pass
// list as the passes land).
//
// Fusion entry points in ops (9, in 7 files): unary.go fuseUnaryHead;
// binary.go fuseBinaryHead; linear_family.go runLinear -> fuseEpilogue;
// norm.go fuseNormLinears; rope.go ropeDirectTables and fuseRopeCache;
// slice.go ropeSliceSkipped; the views: slice.go selectCopy and copy.go
// copyTensor asking Aliaser.
//
// Matchers (13 in 4 files): fuse.go fuseFrom, fuseParse; matmul.go
// fuseEpilogue, fuseActivation, fuseSiLU, fuseResidual; fuse_linear.go
// fuseNormLinears' group, findSwiGLU, fusableLinear, fusableQ4Linear;
// fuse_rope.go fuseRopeCache, ropeTableSlice, ropeDirectTables (with
// ropeSliceSkipped and readers); and the three "safe to fuse" checks:
// fuseFrom's clash loop, fusedSafe, fuseRopeCache's between-ops loop.
// pack.go's SoleConsumer is the shared sole-use helper.
//
// Capability interfaces (10) and the type assertions reaching them (26):
// Fuser (pack.go; 8 assertions: fuse.go 1, fuse_linear.go 2, fuse_rope.go
// 3, matmul.go 3 (one b.(Fuser).Absorb), pack.go 1 -- counted below),
// bufferSharer (fuse.go; 3), Aliaser (copy.go; 2), Packer (pack.go; 5:
// conv.go, linear_f16.go ×2, matmul.go ×2), Chunker (chunk.go; 1),
// Persister (pack.go; 1: attention.go), HalfCacher (attention_f16.go; 1),
// HostReader (registry.go; 1: symint.go), Configurer (config.go; 1),
// Profiler (device.go; 1). Fuser: fuse.go:184, fuse_linear.go:127, 382,
// fuse_rope.go:38, 176, 245, matmul.go:167, 229, 322, pack.go:104 = 10;
// bufferSharer: fuse.go:185, fuse_linear.go:128, fuse_rope.go:39 = 3;
// total 10+3+2+5+1+1+1+1+1+1 = 26.
//
// Order of the moves (each a green commit, the old path deleted as its
// pass lands): the plan and the recording loop over nodes; the elementwise
// chains; the linear epilogues (SiLU, activation, residual); rms_norm +
// linears (SwiGLU pair); the rope tables and rope + KV cache; the views.
// Then the remaining capability interfaces become Builder methods, the
// SymInt nodes get update functions, the graph type is split by lifetime,
// the head and the "done twice" list, and last the opstest backend.
package lower
