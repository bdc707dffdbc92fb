package ops

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// et_vk.embedding_q4gsw.default args: [weight, weight_scales, group_size, indices, is_linear_weight, out]
//
//	weight UINT8 [V, D/2] (constant, read as exported); two 4-bit codes per
//	byte, value code−8, the even d in the low nibble when is_linear_weight
//	(the linear packing, the only form exported since 2026-06-29) and in
//	the high nibble otherwise; scales float32 [V, D/g] or [V] (one group
//	per row); indices int32; is_linear_weight Bool (or Int);
//	out float32 [*indices.shape, D], out[i, d] = (code(v, d) − 8)·s[v, d/g]
//	for v = indices[i].
func init() {
	Register("et_vk.embedding_q4gsw.default", embeddingQ4gswOp)
}

// q4embeddingShader is the template data of shaders/q4embedding.wgsl.
type q4embeddingShader struct {
	HighEven bool
	WG       int
}

// q4embeddingWG is the kernel's workgroup size.
const q4embeddingWG = 64

func embeddingQ4gswOp(b Builder, args []int32) error {
	if len(args) != 6 {
		return Errorf(-1, "want 6 args [weight, scales, group_size, indices, is_linear_weight, out], have %d", len(args))
	}
	w, err := qlinearWeight(b, 0, args[0], serialization.Uint8)
	if err != nil {
		return err
	}
	v, rb := w.Dims[0], w.Dims[1]
	d := 2 * rb
	if d%8 != 0 {
		return Errorf(0, "weight dims %v: embedding dim %d is not a multiple of 8", w.Dims, d)
	}
	s, err := b.Tensor(args[1])
	if err != nil {
		return argErr(1, err)
	}
	if s.DType != serialization.Float32 {
		return Errorf(1, "scales are %v, want float32", s.DType)
	}
	spr := int64(1)
	switch {
	case len(s.Dims) == 2 && s.Dims[0] == v:
		spr = s.Dims[1]
	case len(s.Dims) == 1 && s.Dims[0] == v:
	default:
		return Errorf(1, "scales dims %v, want [%d, groups] or [%d]", s.Dims, v, v)
	}
	g, err := b.Int(args[2])
	if err != nil {
		return argErr(2, err)
	}
	if g <= 0 || g*spr < d {
		return Errorf(2, "group size %d with %d groups per row does not cover D = %d", g, spr, d)
	}
	ix, err := indexTensorArg(b, args[3], 3, "indices")
	if err != nil {
		return err
	}
	linear, err := b.Bool(args[4])
	if err != nil {
		iv, ierr := b.Int(args[4])
		if ierr != nil {
			return Errorf(4, "is_linear_weight: value %d is %v, want Bool or Int", args[4], b.Kind(args[4]))
		}
		linear = iv != 0
	}
	if v == 0 && ix.Numel > 0 {
		return Errorf(0, "empty table")
	}
	dims := append(append([]int64(nil), ix.Dims...), d)
	if _, err := Output(b, 5, args[5], serialization.Float32, dims); err != nil {
		return err
	}
	total := ix.Numel * (d / 8)
	if total == 0 {
		return nil
	}
	if total*8 > matmulMaxElems {
		return Errorf(-1, "output of %d elements is too large", total*8)
	}
	e := chunkEmbedding{w: args[0], s: args[1], idx: ix, out: args[5], v: v, d: d, rowBytes: rb, g: g, spr: spr,
		sh: chunkEmbeddingShader{Q4: true, HighEven: !linear}}
	if ok, err := recordEmbeddingChunked(b, e); ok || err != nil {
		return err // a table held in chunks (chunk_embedding.go)
	}
	sh := q4embeddingShader{HighEven: !linear, WG: q4embeddingWG}
	k, err := shaders.Render("q4embedding.wgsl", sh, "main", shaders.Layout(3, 1, true), uint32(sh.WG))
	if err != nil {
		return err
	}
	groups, err := Grid(uint64(total), uint32(sh.WG), b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	var p Params
	p.U32(uint32(total)).U32(uint32(d / 8)).U32(uint32(rb / 4)).U32(uint32(v))
	p.U32(uint32(g)).U32(uint32(spr)).U32(0).U32(0)
	if err := b.Dispatch(k, []int32{args[0], args[1], args[3]}, []int32{args[5]}, p.Bytes(), groups); err != nil {
		return fmt.Errorf("ops: embedding_q4gsw: %w", err)
	}
	return nil
}
