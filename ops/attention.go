package ops

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// et_vk.sdpa.default args: [q (B,H,Sq,D), k (B,Hk,Skv,D), v (B,Hk,Skv,Dv), attn_mask (tensor or Null), scale (Double or Null), out (B,H,Sq,Dv)]
// aten.scaled_dot_product_attention.default args: [query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa (may be absent), out]
// sdpa_with_kv_cache.default args: [q (B,S,Hq,D), k (B,S,Hkv,D), v, k_cache (B,maxS,Hkv,D), v_cache, input_pos, seq_len, attn_mask, dropout_p, is_causal, scale, out (B,S,Hq,D)]
// llama.custom_sdpa.default args: [q (B,S,Hq,D), k_cache, v_cache, input_pos, attn_mask, dropout_p, is_causal, scale, out]
// update_cache.default args: [value (B,S,H,D), cache (B,maxS,H,D), input_pos, out (a [1] placeholder)]
//
// et_vk.sdpa follows backends/vulkan/custom_ops_lib.py: softmax(q·kᵀ·scale
// + mask)·v over the last two dims, scale defaulting to 1/sqrt(D), the
// mask additive (float32) or boolean (true = attend), broadcastable to
// [B, H, Sq, Skv]. Batch and head dims of k and v may be 1 (broadcast) or
// divide q's head count (grouped-query attention). The aten op is the same
// with torch's is_causal (key j visible to query i iff j <= i) and rank 2
// to 4 operands; dropout_p must be 0.
//
// The llama KV-cache ops use the [B, S, H, D] layout of ExecuTorch's
// extension/llm custom ops. update_cache writes value into cache rows
// input_pos .. input_pos+S-1, in place: the cache must be a writable tensor
// (an et_vk.prepack output, which persists across Execute calls); a
// constant cache gets a persistent writable copy (Builder.Persistent), made once
// at load. sdpa_with_kv_cache updates both caches, then attends q over
// cache rows [0, input_pos+S); custom_sdpa only attends. With is_causal
// (the llama export passes True) query i sits at absolute position
// input_pos+i and sees keys up to it. attn_mask must be Null there (as in
// the Vulkan backend's SDPA.cpp) and dropout_p 0. float32 only; with
// Config.HalfKVCache the caches may be held as packed halves
// (attention_f16.go).
//
// Kernel (shaders/attention.wgsl): one fused dispatch per attention, one
// workgroup of attnLanes lanes per up to attnMaxRows query rows that read
// the same kv head, with an online softmax (under the gpu family a
// one-row attention over a long cache splits its keys in blocks across
// workgroups and merges them in a second dispatch: attnKernels); the cache updates are one
// flat copy dispatch (both caches for sdpa_with_kv_cache). Where the
// graph holds the position on the device (Builder.DevicePos), the cache
// ops read input_pos there (the rows written, the keys attended, the
// causal offset), their params the same at every position.
func init() {
	Register("et_vk.sdpa.default", etvkSDPAOp)
	Register("aten.scaled_dot_product_attention.default", atenSDPAOp)
	// [q, k, v, k_cache, v_cache, input_pos, ...]: both caches in place.
	RegisterOp(Op{Name: "sdpa_with_kv_cache.default", Run: sdpaWithKVCacheOp, Writes: []int{3, 4}})
	Register("llama.custom_sdpa.default", customSDPAOp)
	RegisterOp(Op{Name: "update_cache.default", Run: updateCacheOp, Writes: []int{1}})
}

// attnLanes is the number of lanes sharing one query row's keys.
const attnLanes = 16

// attnMaxKeys keeps each lane's key loop (nkeys/attnLanes trips) far below
// llvmpipe's 65535 back-edges per invocation.
const attnMaxKeys = attnLanes * 32768

// attnMaxHeadDim bounds the unrolled head-dim code.
const attnMaxHeadDim = 512

// attnMaxRows is the most query rows one workgroup serves; attnRowBudget
// caps rows × (D + Dv) so the per-row registers (q and acc) stay modest.
const (
	attnMaxRows   = 4
	attnRowBudget = 512
)

// attnStrides are element strides of a [batch, head, seq, dim] view; the
// dim stride is 1.
type attnStrides struct{ b, h, s int64 }

// attnCall is one validated attention.
type attnCall struct {
	q, k, v, mask, out int32 // mask < 0 when absent
	boolMask           bool
	bsz, hq, sq, g     int64 // g: query heads per kv head
	nkeys, d, dv       int64
	causal             bool
	causalOff          int64
	halfK, halfV       bool // k, v: KV caches held as packed halves
	scale              float64
	qs, ks, vs, os     attnStrides
	ms                 [4]int64 // mask strides over (b, h, i, j)
	rows               int64    // a cache attention's cache rows (cacheAttention)
	// pos: a cache attention reading input_pos on the device; nkeys and
	// causalOff are then its offsets from input_pos (sq and 0).
	pos posSource
}

// at returns cache attention c for input_pos pos: keys [0, pos+S), query
// i at position pos+i (an update function's call for a new input_pos).
func (c attnCall) at(pos int64) (attnCall, error) {
	if pos < 0 || pos+c.sq > c.rows {
		return c, Errorf(-1, "input_pos %d + seq_len %d outside the cache's %d rows", pos, c.sq, c.rows)
	}
	if !c.pos.dev {
		c.nkeys, c.causalOff = pos+c.sq, pos
	}
	return c, nil
}

// posSource is where a kernel reads a position (input_pos, or a SymInt
// derived from it) from: with dev, the graph's position tensor id
// (Builder.DevicePos) plus off, so that the params stay the same at
// every position; otherwise its params hold the value.
type posSource struct {
	dev bool
	id  int32
	off int64
}

// positionOf asks b for SymInt id on the device, declaring [lo, hi] as
// the values of id the caller's recording holds for.
func positionOf(b Builder, id int32, lo, hi int64) posSource {
	t, off, ok := b.DevicePos(id, lo, hi)
	if !ok {
		return posSource{}
	}
	return posSource{dev: true, id: t.ID, off: off}
}

// u32 is v as a WGSL u32 holds it, wrapping: a position offset added to
// the position in u32 arithmetic.
func u32(v int64) uint32 { return uint32(uint64(v)) }

// attnChunk is one vec4 of a head dim: I-th chunk, at element Off, N valid
// components.
type attnChunk struct{ I, Off, N int }

// attnShader is the template data of shaders/attention.wgsl.
type attnShader struct {
	Update   bool
	Pair     bool // Update: both caches in one dispatch
	Half1    bool // Update: cache (Half2: cache2) holds packed halves
	Half2    bool
	HalfK    bool // k (HalfV: v) holds packed halves
	HalfV    bool
	DevPos   bool // input_pos is read from the graph's position tensor (bound after the inputs)
	DevOff   bool // Update, DevPos: the rows written start at an offset from input_pos (params row, row2)
	Split    bool // the keys in blocks, partial states written to part (attnKernels)
	Combine  bool // the blocks' partial states merged into out
	Out      bool
	WG       int
	Lanes    int
	Vec4     bool // D and Dv multiples of 4: q, k, v and out as vec4 arrays
	Mask     bool
	BoolMask bool
	Dv       int
	VTail    bool
	Rows     []int // query rows per workgroup: 0..R-1
	WRows    int   // Lanes × R
	WAcc     int   // Lanes × R × vec4 chunks of Dv: the merge buffer
	QChunks  []attnChunk
	VChunks  []attnChunk
}

func attnChunks(d int64) []attnChunk {
	var cs []attnChunk
	for i := int64(0); i*4 < d; i++ {
		cs = append(cs, attnChunk{I: int(i), Off: int(4 * i), N: int(min(4, d-4*i))})
	}
	return cs
}

func recordAttention(b Builder, c attnCall) error {
	rows := c.bsz * c.hq * c.sq
	if rows == 0 || c.dv == 0 {
		return nil
	}
	maxKeys := c.nkeys
	if c.pos.dev {
		maxKeys = c.rows // the declared positions' most
	}
	if maxKeys > attnMaxKeys {
		return Errorf(-1, "%d keys, at most %d supported", maxKeys, attnMaxKeys)
	}
	if c.d > attnMaxHeadDim || c.dv > attnMaxHeadDim {
		return Errorf(-1, "head dims %d/%d, at most %d supported", c.d, c.dv, attnMaxHeadDim)
	}
	sh := attnShader{Lanes: attnLanes, Mask: c.mask >= 0, BoolMask: c.boolMask, Dv: int(c.dv), VTail: c.dv%4 != 0,
		QChunks: attnChunks(c.d), VChunks: attnChunks(c.dv), HalfK: c.halfK, HalfV: c.halfV, DevPos: c.pos.dev}
	if (c.halfK && (c.d%2 != 0 || c.ks.s%2 != 0 || c.ks.h%2 != 0 || c.ks.b%2 != 0)) ||
		(c.halfV && (c.dv%2 != 0 || c.vs.s%2 != 0 || c.vs.h%2 != 0 || c.vs.b%2 != 0)) {
		return Errorf(-1, "half KV cache rows must start on a word (head dims %d/%d)", c.d, c.dv)
	}
	// Several query rows per workgroup share the k and v loads; one row
	// when there is only one (decode) or the head dims are large.
	r := int64(1)
	for r < attnMaxRows && r < c.g*c.sq && (r*2)*(c.d+c.dv) <= attnRowBudget {
		r *= 2
	}
	for i := range r {
		sh.Rows = append(sh.Rows, int(i))
	}
	sh.WRows = attnLanes * int(r)
	sh.WAcc = sh.WRows * len(sh.VChunks)
	groups := c.bsz * (c.hq / c.g) * ((c.g*c.sq + r - 1) / r)
	// A cache attention's blocks cover the cache, whatever the position
	// (its grid stays the same from step to step).
	splitKeys := maxKeys
	if c.rows > 0 {
		splitKeys = c.rows
	}
	kern := chooseAttn(familyOf(b), b.Config(), c, splitKeys)
	nsplit := int64(1)
	if kern.block > 0 {
		sh.Split = true
		nsplit = (splitKeys + kern.block - 1) / kern.block
	}
	// Every q/k/v/out offset is a sum of multiples of its row length (or a
	// multiple of D from a head index), so both dims ≡ 0 mod 4 keep them
	// vec4-aligned.
	sh.Vec4 = c.d%4 == 0 && c.dv%4 == 0
	inputs := []int32{c.q, c.k, c.v}
	if sh.Mask {
		inputs = append(inputs, c.mask)
	}
	if sh.DevPos {
		inputs = append(inputs, c.pos.id)
	}
	k, err := shaders.Render("attention.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), attnLanes)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(groups*nsplit), 1, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	out := c.out
	var part Tensor
	if sh.Split {
		// The blocks' partial states: per output row and block, (m, l)
		// and the unnormalized output, vec4s.
		outRows := c.bsz * c.hq * c.sq
		if part, err = b.Scratch(0, serialization.Float32, []int64{outRows * nsplit * (int64(len(sh.VChunks)) + 1) * 4}); err != nil {
			return err
		}
		out = part.ID
	}
	causal := uint32(0)
	if c.causal {
		causal = 1
	}
	nkeys, causalOff := u32(c.nkeys), u32(c.causalOff)
	if c.pos.dev {
		nkeys, causalOff = u32(c.pos.off+c.sq), u32(c.pos.off)
	}
	var p Params
	p.U32(uint32(groups)).U32(uint32(c.sq)).U32(uint32(c.hq / c.g)).U32(uint32(c.g))
	p.U32(nkeys).U32(causal).U32(causalOff).F32(float32(c.scale))
	for _, s := range []attnStrides{c.qs, c.ks, c.vs, c.os} {
		p.U32(uint32(s.b)).U32(uint32(s.h)).U32(uint32(s.s))
	}
	for _, s := range c.ms {
		p.U32(uint32(s))
	}
	if sh.Split {
		p.U32(uint32(nsplit)).U32(uint32(kern.block))
	}
	params := p.Bytes()
	if err := b.Dispatch(k, inputs, []int32{out}, params, grid); err != nil {
		return fmt.Errorf("ops: attention: %w", err)
	}
	if !sh.Split {
		return nil
	}
	// One workgroup per output row merges its blocks.
	sh.Split, sh.Combine = false, true
	cin := []int32{part.ID}
	if sh.DevPos {
		cin = append(cin, c.pos.id)
	}
	k, err = shaders.Render("attention.wgsl", sh, "main", shaders.Layout(len(cin), 1, true), attnLanes)
	if err != nil {
		return err
	}
	if grid, err = Grid(uint64(c.bsz*c.hq*c.sq), 1, b.MaxWorkgroupsPerDim()); err != nil {
		return err
	}
	if err := b.Dispatch(k, cin, []int32{c.out}, params, grid); err != nil {
		return fmt.Errorf("ops: attention: %w", err)
	}
	return nil
}

// attnKernel is one entry of attnKernels.
type attnKernel struct {
	name   string
	family Family // FamilyAuto: either
	// block > 0: the split kernel, keys in blocks of block, for
	// one-row attention over a KV cache of at least minKeys rows.
	block, minKeys int64
}

// attnKernels is the attention's kernel table, in order of preference
// (chooseAttn; Config.SkipKernels names its entries). The split kernel
// (flash-decoding) serves a decode step's attention over a long cache:
// one workgroup of 16 lanes per kv head (8 for Llama 3.2 1B) walking
// 2,000 keys leaves a GPU's SMs idle and serialises on its loads; blocks
// of 64 keys make that 8 × 32 workgroups at a 2,048-row cache, and a
// second dispatch per attention merges the blocks (one more dispatch a
// layer, so only caches of 1,024 rows or more take it: the 260K and 110M
// shapes, 512 and 256 rows, keep their dispatch counts). The grid covers
// the whole cache, whatever the position, so that a position on the
// device needs no new grid: the blocks past the live keys return at once
// and the merge reads only the live ones. On lavapipe the split kernel
// is slower (BenchmarkAttnKernels in graph, 32/8 heads of 64 over a
// 2,048-row cache, medians of 20 alternated steps: 2.9 vs 0.7 ms at
// position 100, 9.5 vs 2.8 at 1,000, 10.8 vs 5.5 at 2,000; each of its
// 256 workgroups costs lavapipe a fixed ~20 µs), so the cpu family keeps
// one workgroup per kv head; the GPU figures are owed (issue 33).
var attnKernels = []attnKernel{
	{name: "gpu/attn-split", family: FamilyGPU, block: 64, minKeys: 1024},
	{name: "any/attn", family: FamilyAuto},
}

// chooseAttn returns the first entry of attnKernels for family fam that
// fits attention c (maxKeys: the most keys it may attend) and that cfg
// does not skip.
func chooseAttn(fam Family, cfg Config, c attnCall, maxKeys int64) attnKernel {
	for _, k := range attnKernels {
		if (k.family != fam && k.family != FamilyAuto) || cfg.skipsKernel(k.name) {
			continue
		}
		if k.block > 0 && (c.rows == 0 || c.sq != 1 || maxKeys < k.minKeys) {
			continue
		}
		return k
	}
	return attnKernel{name: "any/attn"}
}

// attnKernelNames lists attnKernels' entries.
func attnKernelNames() []string {
	names := make([]string, len(attnKernels))
	for i, k := range attnKernels {
		names[i] = k.name
	}
	return names
}

// attnTensor fetches a float32 tensor argument.
func attnTensor(b Builder, args []int32, arg int, what string) (Tensor, error) {
	t, err := b.Tensor(args[arg])
	if err != nil {
		return Tensor{}, Errorf(arg, "%s: value %d is %v, want a tensor", what, args[arg], b.Kind(args[arg]))
	}
	if t.DType != serialization.Float32 {
		return Tensor{}, Errorf(arg, "%s: unsupported dtype %v (float32 only)", what, t.DType)
	}
	if t.MaxNumel >= 1<<32 {
		return Tensor{}, Errorf(arg, "%s: %d elements is too large", what, t.MaxNumel)
	}
	return t, nil
}

// attnKV reads the new keys and values, args 1 and 2 of every attention op
// that takes them (et_vk.sdpa, aten SDPA, sdpa_with_kv_cache).
func attnKV(b Builder, args []int32) (k, v Tensor, err error) {
	if k, err = attnTensor(b, args, 1, "k"); err != nil {
		return Tensor{}, Tensor{}, err
	}
	if v, err = attnTensor(b, args, 2, "v"); err != nil {
		return Tensor{}, Tensor{}, err
	}
	return k, v, nil
}

// attnScale reads an optional Double scale (Null: 1/sqrt(d)).
func attnScale(b Builder, id int32, arg int, d int64) (float64, error) {
	if b.IsNull(id) {
		return 1 / math.Sqrt(float64(d)), nil
	}
	s, err := b.Float(id)
	if err != nil {
		return 0, argErr(arg, err)
	}
	return s, nil
}

// attnDropout requires dropout_p to be Null or 0.
func attnDropout(b Builder, id int32, arg int) error {
	if b.IsNull(id) {
		return nil
	}
	p, err := b.Float(id)
	if err != nil {
		return argErr(arg, err)
	}
	if p != 0 {
		return Errorf(arg, "dropout_p %v is not supported (inference only: 0)", p)
	}
	return nil
}

// attnCausal reads an optional Bool is_causal (Null: def).
func attnCausal(b Builder, id int32, arg int, def bool) (bool, error) {
	if b.IsNull(id) {
		return def, nil
	}
	c, err := b.Bool(id)
	if err != nil {
		return false, argErr(arg, err)
	}
	return c, nil
}

// bhsd4 views dims (rank 2..4, [..., S, D]) as [B, H, S, D].
func bhsd4(dims []int64) [4]int64 {
	var v [4]int64
	for i := range v {
		v[i] = 1
	}
	copy(v[4-len(dims):], dims)
	return v
}

// bhsdStrides returns contiguous [B, H, S, D] strides; size-1 batch or head
// dims get stride 0 so they broadcast.
func bhsdStrides(v [4]int64) attnStrides {
	s := attnStrides{b: v[1] * v[2] * v[3], h: v[2] * v[3], s: v[3]}
	if v[0] == 1 {
		s.b = 0
	}
	if v[1] == 1 {
		s.h = 0
	}
	return s
}

// bhsdAttention validates a [.., S, D]-layout attention (et_vk.sdpa and
// aten.scaled_dot_product_attention) and records it.
func bhsdAttention(b Builder, args []int32, maskArg, outArg int, scaleID int32, scaleArg int, causal, gqa bool) error {
	q, err := attnTensor(b, args, 0, "q")
	if err != nil {
		return err
	}
	k, v, err := attnKV(b, args)
	if err != nil {
		return err
	}
	for i, t := range []Tensor{q, k, v} {
		if len(t.Dims) < 2 || len(t.Dims) > 4 {
			return Errorf(i, "dims %v: want rank 2 to 4 ([..., S, D])", t.Dims)
		}
	}
	qd, kd, vd := bhsd4(q.Dims), bhsd4(k.Dims), bhsd4(v.Dims)
	if kd[3] != qd[3] {
		return Errorf(1, "k head dim %d differs from q's %d", kd[3], qd[3])
	}
	if vd[2] != kd[2] {
		return Errorf(2, "v has %d keys, k has %d", vd[2], kd[2])
	}
	if vd[0] != kd[0] || vd[1] != kd[1] {
		return Errorf(2, "v dims %v do not match k dims %v", v.Dims, k.Dims)
	}
	bsz, hq, sq, d := qd[0], qd[1], qd[2], qd[3]
	bk, hk, skv, dv := kd[0], kd[1], kd[2], vd[3]
	if bk != bsz && bk != 1 && bsz != 1 {
		return Errorf(1, "k batch %d does not broadcast with q batch %d", bk, bsz)
	}
	if bk != bsz && bsz == 1 {
		return Errorf(1, "k batch %d larger than q batch %d is not supported", bk, bsz)
	}
	switch {
	case hk == hq || hk == 1:
	case gqa && hk > 0 && hq%hk == 0:
	default:
		return Errorf(1, "k has %d heads for q's %d", hk, hq)
	}
	scale, err := attnScale(b, scaleID, scaleArg, d)
	if err != nil {
		return err
	}
	outDims := append(append([]int64(nil), q.Dims[:len(q.Dims)-1]...), dv)
	if len(k.Dims) > len(q.Dims) {
		return Errorf(1, "k rank %d above q rank %d is not supported", len(k.Dims), len(q.Dims))
	}
	if _, err := Output(b, outArg, args[outArg], serialization.Float32, outDims); err != nil {
		return err
	}
	g := int64(1) // query heads per kv head
	switch {
	case hk == 1:
		g = max(hq, 1)
	case hk > 0 && hq > 0:
		g = hq / hk
	}
	c := attnCall{q: args[0], k: args[1], v: args[2], mask: -1, out: args[outArg],
		bsz: bsz, hq: hq, sq: sq, g: g, nkeys: skv, d: d, dv: dv, causal: causal, scale: scale,
		qs: attnStrides{b: hq * sq * d, h: sq * d, s: d}, ks: bhsdStrides(kd), vs: bhsdStrides(vd),
		os: attnStrides{b: hq * sq * dv, h: sq * dv, s: dv}}
	if !b.IsNull(args[maskArg]) {
		mt, err := b.Tensor(args[maskArg])
		if err != nil {
			return Errorf(maskArg, "attn_mask: value %d is %v, want a tensor or Null", args[maskArg], b.Kind(args[maskArg]))
		}
		switch mt.DType {
		case serialization.Float32:
		case serialization.Bool:
			c.boolMask = true
		default:
			return Errorf(maskArg, "attn_mask: unsupported dtype %v (float32 or bool)", mt.DType)
		}
		if causal {
			return Errorf(maskArg, "attn_mask and is_causal cannot both be set")
		}
		if len(mt.Dims) > 4 {
			return Errorf(maskArg, "attn_mask dims %v: rank above 4", mt.Dims)
		}
		md := bhsd4(mt.Dims)
		want := [4]int64{bsz, hq, sq, skv}
		stride := int64(1)
		for i := 3; i >= 0; i-- {
			if md[i] != 1 && md[i] != want[i] {
				return Errorf(maskArg, "attn_mask dims %v do not broadcast to %v", mt.Dims, want)
			}
			if md[i] != 1 {
				c.ms[i] = stride
			}
			stride *= md[i]
		}
		c.mask = args[maskArg]
	}
	return recordAttention(b, c)
}

func etvkSDPAOp(b Builder, args []int32) error {
	if len(args) != 6 {
		return Errorf(-1, "want 6 args [q, k, v, attn_mask, scale, out], have %d", len(args))
	}
	return bhsdAttention(b, args, 3, 5, args[4], 4, false, true)
}

func atenSDPAOp(b Builder, args []int32) error {
	if len(args) != 8 && len(args) != 9 {
		return Errorf(-1, "want 9 args [query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, out], have %d", len(args))
	}
	if err := attnDropout(b, args[4], 4); err != nil {
		return err
	}
	causal, err := attnCausal(b, args[5], 5, false)
	if err != nil {
		return err
	}
	gqa := false
	if len(args) == 9 {
		if gqa, err = attnCausal(b, args[7], 7, false); err != nil {
			return err
		}
	}
	return bhsdAttention(b, args, 3, len(args)-1, args[6], 6, causal, gqa)
}

// kvCache fetches a [B, max_seq_len, H, D] cache argument; half reports
// that it is held as packed halves (the returned tensor's id is then the
// packed buffer's, see halfCache).
func kvCache(b Builder, args []int32, ca int, what string) (_ Tensor, half bool, _ error) {
	c, err := attnTensor(b, args, ca, what)
	if err != nil {
		return Tensor{}, false, err
	}
	if len(c.Dims) != 4 {
		return Tensor{}, false, Errorf(ca, "%s dims %v: want [B, max_seq_len, heads, head_dim]", what, c.Dims)
	}
	if h, ok, err := halfCache(b, c, ca); err != nil || ok {
		return h, ok, err
	}
	if c.Constant {
		// sdpa_with_kv_cache handles its own prepacking: the exporter
		// passes the cache constant itself, and the op keeps a writable
		// copy that persists across Execute calls (as the Vulkan backend
		// does with a tensor "like" the constant).
		pc, err := b.Persistent(c.ID)
		if err != nil {
			return Tensor{}, false, argErr(ca, err)
		}
		return pc, false, nil
	}
	return c, false, nil
}

// cacheWrite is one validated cache row update: src's n elements into
// cache, per batch a block of S·H·D elements at dst0 of a bstride batch.
type cacheWrite struct {
	src, cache              int32
	n, block, dst0, bstride int64
	row                     int64 // elements a position (H·D)
	half                    bool  // cache holds packed halves
	// pos: input_pos is read on the device; dst0 is then its offset
	// from input_pos's row (0).
	pos posSource
}

// lastPos is the last input_pos the update fits the cache at.
func (w cacheWrite) lastPos() int64 {
	if w.row == 0 {
		return 0
	}
	return (w.bstride - w.block) / w.row
}

// at returns w writing from cache row pos instead: an update function's
// write for a new input_pos (a cache too short for it fails, and the op
// then records again, reporting it).
func (w cacheWrite) at(pos int64) (cacheWrite, error) {
	if pos < 0 || pos*w.row+w.block > w.bstride {
		return w, Errorf(-1, "input_pos %d: the update leaves the cache", pos)
	}
	if !w.pos.dev {
		w.dst0 = pos * w.row
	}
	return w, nil
}

// checkCacheUpdate validates writing value ([B, S, H, D]) into cache rows
// pos.. .
func checkCacheUpdate(value, cache Tensor, half bool, va, ca, posArg int, pos int64) (cacheWrite, error) {
	if len(value.Dims) != 4 {
		return cacheWrite{}, Errorf(va, "value dims %v: want [B, S, heads, head_dim]", value.Dims)
	}
	if cache.Constant {
		return cacheWrite{}, Errorf(ca, "cache %d is a constant; it must be a writable tensor (an et_vk.prepack output) to update in place", cache.ID)
	}
	vd, cd := value.Dims, cache.Dims
	if vd[0] != cd[0] || vd[2] != cd[2] || vd[3] != cd[3] {
		return cacheWrite{}, Errorf(va, "value dims %v do not match cache dims %v in batch, heads or head_dim", vd, cd)
	}
	if pos < 0 || pos+vd[1] > cd[1] {
		return cacheWrite{}, Errorf(posArg, "input_pos %d + seq_len %d outside the cache's %d rows", pos, vd[1], cd[1])
	}
	row := vd[2] * vd[3]
	if half && cd[3]%2 != 0 {
		return cacheWrite{}, Errorf(ca, "half cache dims %v: head_dim must be even", cd)
	}
	return cacheWrite{src: value.ID, cache: cache.ID, n: value.Numel, block: vd[1] * row, dst0: pos * row, bstride: cd[1] * row, row: row, half: half}, nil
}

// recordCacheWrites records one dispatch for one or two cache updates
// (sdpa_with_kv_cache's k and v) and, when out >= 0 (one update only),
// zeroes the one-element placeholder out.
func recordCacheWrites(b Builder, ws []cacheWrite, out int32) error {
	// An update into a half cache takes one invocation per pair of
	// elements (one word), so that no two write the same word.
	var n int64
	units := make([]int64, len(ws))
	for i, w := range ws {
		units[i] = w.n
		if w.half {
			units[i] = w.n / 2
		}
		n += units[i]
	}
	if n == 0 {
		return nil
	}
	if n >= 1<<32 {
		return Errorf(-1, "%d cache elements is too many for one dispatch", n)
	}
	sh := attnShader{Update: true, Pair: len(ws) == 2, Out: out >= 0 && len(ws) == 1, WG: 64, Half1: ws[0].half, DevPos: ws[0].pos.dev}
	if sh.Pair {
		sh.Half2 = ws[1].half
		if ws[1].pos.dev != sh.DevPos || ws[1].pos.id != ws[0].pos.id {
			return Errorf(-1, "the two cache updates read input_pos from different places")
		}
	}
	for _, w := range ws {
		sh.DevOff = sh.DevOff || (w.pos.dev && w.pos.off != 0)
	}
	var ins, outs []int32
	for _, w := range ws {
		ins, outs = append(ins, w.src), append(outs, w.cache)
	}
	if sh.DevPos {
		ins = append(ins, ws[0].pos.id)
	}
	if sh.Out {
		outs = append(outs, out)
	}
	k, err := shaders.Render("attention.wgsl", sh, "main", shaders.Layout(len(ins), len(outs), true), uint32(sh.WG))
	if err != nil {
		return err
	}
	groups, err := Grid(uint64(n), uint32(sh.WG), b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	var p Params
	var rows [2]uint32 // with DevOff, the row length input_pos's value is multiplied by
	for i, w := range ws {
		dst0 := u32(w.dst0)
		switch {
		case sh.DevOff:
			dst0, rows[i] = u32(w.pos.off*w.row), uint32(w.row)
		case sh.DevPos:
			dst0 = uint32(w.row) // the rows written start at input_pos
		}
		p.U32(uint32(units[i])).U32(uint32(w.block)).U32(dst0).U32(uint32(w.bstride))
	}
	if len(ws) == 1 {
		p.U32s(nil, 4) // the second update's fields, unused
	}
	if sh.DevOff {
		p.U32(rows[0]).U32(rows[1])
	}
	if err := b.Dispatch(k, ins, outs, p.Bytes(), groups); err != nil {
		return fmt.Errorf("ops: update_cache: %w", err)
	}
	return nil
}

func updateCacheOp(b Builder, args []int32) error {
	if len(args) != 4 {
		return Errorf(-1, "want 4 args [value, cache, input_pos, out], have %d", len(args))
	}
	value, err := attnTensor(b, args, 0, "value")
	if err != nil {
		return err
	}
	cache, half, err := kvCache(b, args, 1, "cache")
	if err != nil {
		return err
	}
	pos, err := b.Int(args[2])
	if err != nil {
		return argErr(2, err)
	}
	out := int32(-1)
	if b.Kind(args[3]) == serialization.KindTensor {
		if _, err := Output(b, 3, args[3], value.DType, []int64{1}); err != nil {
			return err
		}
		out = args[3]
	}
	w, err := checkCacheUpdate(value, cache, half, 0, 1, 2, pos)
	if err != nil {
		return err
	}
	w.pos = positionOf(b, args[2], 0, w.lastPos())
	b.OnRefresh(func(b Builder) error {
		ws, err := cacheWritesAt(b, args[2], w)
		if err != nil {
			return err
		}
		return recordCacheWrites(b, ws, out)
	})
	return recordCacheWrites(b, []cacheWrite{w}, out)
}

// cacheWritesAt returns ws moved to the input_pos value pos holds now.
func cacheWritesAt(b Builder, pos int32, ws ...cacheWrite) ([]cacheWrite, error) {
	p, err := b.Int(pos)
	if err != nil {
		return nil, err
	}
	out := make([]cacheWrite, len(ws))
	for i, w := range ws {
		if out[i], err = w.at(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// attentionAt returns cache attention c at the input_pos value pos holds
// now.
func attentionAt(b Builder, pos int32, c attnCall) (attnCall, error) {
	p, err := b.Int(pos)
	if err != nil {
		return c, err
	}
	return c.at(p)
}

// cacheAttention validates an attention of q ([B, S, Hq, D]) over cache
// rows [0, pos+S), sets out's shape and returns the call to record.
func cacheAttention(b Builder, args []int32, qa, ka, va, posArg, maskArg, dropArg, causalArg, scaleArg, outArg int, pos int64) (attnCall, error) {
	var none attnCall
	q, err := attnTensor(b, args, qa, "q")
	if err != nil {
		return none, err
	}
	kc, halfK, err := kvCache(b, args, ka, "k_cache")
	if err != nil {
		return none, err
	}
	vc, halfV, err := kvCache(b, args, va, "v_cache")
	if err != nil {
		return none, err
	}
	if len(q.Dims) != 4 {
		return none, Errorf(qa, "q dims %v: want [B, S, heads, head_dim]", q.Dims)
	}
	bsz, sq, hq, d := q.Dims[0], q.Dims[1], q.Dims[2], q.Dims[3]
	kd, vd := kc.Dims, vc.Dims
	if kd[0] != bsz || kd[3] != d {
		return none, Errorf(ka, "k_cache dims %v do not match q dims %v", kd, q.Dims)
	}
	if vd[0] != kd[0] || vd[1] != kd[1] || vd[2] != kd[2] {
		return none, Errorf(va, "v_cache dims %v do not match k_cache dims %v", vd, kd)
	}
	hk := kd[2]
	if hk == 0 || hq%hk != 0 {
		return none, Errorf(ka, "k_cache has %d heads for q's %d", hk, hq)
	}
	if pos < 0 || pos+sq > kd[1] {
		return none, Errorf(posArg, "input_pos %d + seq_len %d outside the cache's %d rows", pos, sq, kd[1])
	}
	if !b.IsNull(args[maskArg]) {
		return none, Errorf(maskArg, "attn_mask is not supported with a KV cache (must be Null)")
	}
	if err := attnDropout(b, args[dropArg], dropArg); err != nil {
		return none, err
	}
	causal, err := attnCausal(b, args[causalArg], causalArg, true)
	if err != nil {
		return none, err
	}
	scale, err := attnScale(b, args[scaleArg], scaleArg, d)
	if err != nil {
		return none, err
	}
	dv := vd[3]
	if _, err := Output(b, outArg, args[outArg], serialization.Float32, []int64{bsz, sq, hq, dv}); err != nil {
		return none, err
	}
	return attnCall{q: args[qa], k: kc.ID, v: vc.ID, mask: -1, out: args[outArg],
		bsz: bsz, hq: hq, sq: sq, g: hq / hk, nkeys: pos + sq, d: d, dv: dv, causal: causal, causalOff: pos, scale: scale, rows: kd[1],
		halfK: halfK, halfV: halfV, pos: positionOf(b, args[posArg], 0, kd[1]-sq),
		qs: attnStrides{b: sq * hq * d, h: d, s: hq * d},
		ks: attnStrides{b: kd[1] * hk * d, h: d, s: hk * d},
		vs: attnStrides{b: vd[1] * hk * dv, h: dv, s: hk * dv},
		os: attnStrides{b: sq * hq * dv, h: dv, s: hq * dv}}, nil
}

func sdpaWithKVCacheOp(b Builder, args []int32) error {
	if len(args) != 12 {
		return Errorf(-1, "want 12 args [q, k, v, k_cache, v_cache, input_pos, seq_len, attn_mask, dropout_p, is_causal, scale, out], have %d", len(args))
	}
	k, v, err := attnKV(b, args)
	if err != nil {
		return err
	}
	pos, err := b.Int(args[5])
	if err != nil {
		return argErr(5, err)
	}
	if args[3] == args[4] {
		return Errorf(4, "k_cache and v_cache are the same tensor")
	}
	// Validate the attention and set out's shape before any dispatch.
	call, err := cacheAttention(b, args, 0, 3, 4, 5, 7, 8, 9, 10, 11, pos)
	if err != nil {
		return err
	}
	for i, x := range []Tensor{k, v} {
		if len(x.Dims) != 4 || x.Dims[1] != call.sq {
			return Errorf(1+i, "dims %v: want [B, %d, heads, head_dim] like q", x.Dims, call.sq)
		}
	}
	kc, halfK, err := kvCache(b, args, 3, "k_cache")
	if err != nil {
		return err
	}
	vc, halfV, err := kvCache(b, args, 4, "v_cache")
	if err != nil {
		return err
	}
	kw, err := checkCacheUpdate(k, kc, halfK, 1, 3, 5, pos)
	if err != nil {
		return err
	}
	vw, err := checkCacheUpdate(v, vc, halfV, 2, 4, 5, pos)
	if err != nil {
		return err
	}
	kw.pos, vw.pos = call.pos, call.pos
	b.OnRefresh(func(b Builder) error {
		ws, err := cacheWritesAt(b, args[5], kw, vw)
		if err != nil {
			return err
		}
		c, err := attentionAt(b, args[5], call)
		if err != nil {
			return err
		}
		if err := recordCacheWrites(b, ws, -1); err != nil {
			return err
		}
		return recordAttention(b, c)
	})
	if err := recordCacheWrites(b, []cacheWrite{kw, vw}, -1); err != nil {
		return err
	}
	return recordAttention(b, call)
}

func customSDPAOp(b Builder, args []int32) error {
	if len(args) != 9 {
		return Errorf(-1, "want 9 args [q, k_cache, v_cache, input_pos, attn_mask, dropout_p, is_causal, scale, out], have %d", len(args))
	}
	pos, err := b.Int(args[3])
	if err != nil {
		return argErr(3, err)
	}
	call, err := cacheAttention(b, args, 0, 1, 2, 3, 4, 5, 6, 7, 8, pos)
	if err != nil {
		return err
	}
	b.OnRefresh(func(b Builder) error {
		c, err := attentionAt(b, args[3], call)
		if err != nil {
			return err
		}
		return recordAttention(b, c)
	})
	return recordAttention(b, call)
}
