package ops

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// et_vk.apply_rotary_emb.default args: [xq (B,S,Hq,D), xk (B,S,Hk,D), freqs_cos (S,D/2), freqs_sin (S,D/2), ValueList[xq_out, xk_out]]
// et_vk.apply_rotary_emb_hf.default args: [xq (B,S,Hq,D), xk (B,S,Hk,D), freqs_cos (T,rd), freqs_sin (T,rd), start_pos, ValueList[xq_out, xk_out]]
// et_vk.apply_rotary_emb_interleaved.default args: [x (B,N,C), freqs_cis (N·C elements of (cos, sin) pairs, any rank), out (B,N,C)]
//
// Semantics from backends/vulkan/custom_ops_lib.py and patterns/rope.py:
// apply_rotary_emb is llama's rope, rotating element pairs (2j, 2j+1) of
// each head by position s's angle j. apply_rotary_emb_hf is HuggingFace's
// rotate_half over the first rd = freqs_cos.shape[-1] elements of each
// head (the rest pass through), with table rows start_pos .. start_pos+S-1.
// apply_rotary_emb_interleaved is EdgeTAM's complex rope: x's (real, imag)
// pairs times freqs_cis's (cos, sin) pairs. float32 only.
//
// Kernel (shaders/rope.wgsl): one invocation per output element; one
// dispatch rotates both q and k.
func init() {
	Register("et_vk.apply_rotary_emb.default", ropeOp)
	Register("et_vk.apply_rotary_emb_hf.default", ropeHFOp)
	Register("et_vk.apply_rotary_emb_interleaved.default", ropeInterleavedOp)
}

// ropeWG is the rope kernel's workgroup size.
const ropeWG = 64

// ropeCall is one validated rope dispatch over x into out, and, when
// pair, over xk into outk as well (same table, k2 elements with rowDiv2
// rows per position).
type ropeCall struct {
	x, cos, sin, out int32
	hf               bool
	numel            int64
	d, rowDiv, seq   int64
	start            int64
	cosT, cosJ, sinO int64
	rd               int64
	pair             bool
	xk, outk         int32
	numel2, rowDiv2  int64
}

func recordRope(b Builder, c ropeCall) error {
	if c.numel+c.numel2 == 0 {
		return nil
	}
	if c.numel+c.numel2 >= 1<<32 {
		return Errorf(-1, "%d + %d elements is too many for one dispatch", c.numel, c.numel2)
	}
	layout := shaders.Layout(3, 1, true)
	ins, outs := []int32{c.x, c.cos, c.sin}, []int32{c.out}
	if c.pair {
		layout = shaders.Layout(4, 2, true)
		ins, outs = []int32{c.x, c.xk, c.cos, c.sin}, []int32{c.out, c.outk}
	}
	k, err := shaders.Render("rope.wgsl", ropeShader{HF: c.hf, Pair: c.pair, WG: ropeWG}, "main", layout, ropeWG)
	if err != nil {
		return err
	}
	groups, err := Grid(uint64(c.numel+c.numel2), ropeWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	var p Params
	p.U32(uint32(c.numel)).U32(uint32(c.d)).U32(uint32(c.rowDiv)).U32(uint32(c.seq))
	p.U32(uint32(c.start)).U32(uint32(c.cosT)).U32(uint32(c.cosJ)).U32(uint32(c.sinO))
	p.U32(uint32(c.rd)).U32(uint32(c.numel2)).U32(uint32(c.rowDiv2))
	if err := b.Dispatch(k, ins, outs, p.Bytes(), groups); err != nil {
		return fmt.Errorf("ops: rope: %w", err)
	}
	return nil
}

// ropeF32 fetches a float32 tensor argument.
func ropeF32(b Builder, id int32, arg int, what string) (Tensor, error) {
	t, err := b.Tensor(id)
	if err != nil {
		return Tensor{}, Errorf(arg, "%s: value %d is %v, want a tensor", what, id, b.Kind(id))
	}
	if t.DType != serialization.Float32 {
		return Tensor{}, Errorf(arg, "%s: unsupported dtype %v (float32 only)", what, t.DType)
	}
	if t.MaxNumel >= 1<<32 {
		return Tensor{}, Errorf(arg, "%s: %d elements is too large", what, t.MaxNumel)
	}
	return t, nil
}

// ropeQK validates the shared [xq, xk, freqs_cos, freqs_sin, …] arguments
// and returns xq, xk, the tables and the two output ids.
func ropeQK(b Builder, args []int32, outArg int) (xq, xk, fc, fs Tensor, outs []int32, err error) {
	if xq, err = ropeF32(b, args[0], 0, "xq"); err != nil {
		return
	}
	if xk, err = ropeF32(b, args[1], 1, "xk"); err != nil {
		return
	}
	if fc, err = ropeF32(b, args[2], 2, "freqs_cos"); err != nil {
		return
	}
	if fs, err = ropeF32(b, args[3], 3, "freqs_sin"); err != nil {
		return
	}
	for i, t := range []Tensor{xq, xk} {
		if len(t.Dims) != 4 {
			err = Errorf(i, "dims %v: want [B, S, heads, head_dim]", t.Dims)
			return
		}
	}
	if xk.Dims[0] != xq.Dims[0] || xk.Dims[1] != xq.Dims[1] || xk.Dims[3] != xq.Dims[3] {
		err = Errorf(1, "xk dims %v do not match xq dims %v", xk.Dims, xq.Dims)
		return
	}
	if len(fc.Dims) != 2 || len(fs.Dims) != 2 || fc.Dims[0] != fs.Dims[0] || fc.Dims[1] != fs.Dims[1] {
		err = Errorf(3, "freqs_cos %v and freqs_sin %v must be equal 2-D shapes", fc.Dims, fs.Dims)
		return
	}
	if outs, err = b.ValueList(args[outArg]); err != nil {
		err = argErr(outArg, err)
		return
	}
	if len(outs) != 2 {
		err = Errorf(outArg, "want 2 outputs [xq_out, xk_out], have %d", len(outs))
		return
	}
	if _, err = Output(b, outArg, outs[0], serialization.Float32, xq.Dims); err != nil {
		return
	}
	_, err = Output(b, outArg, outs[1], serialization.Float32, xk.Dims)
	return
}

func ropeOp(b Builder, args []int32) error {
	c, err := ropeParse(b, args, nil)
	if err != nil {
		return err
	}
	return recordRope(b, c)
}

// ropeParse checks apply_rotary_emb's args into a call; with t set and
// its guard holding (ropeTablesAt) the call reads the whole tables from
// the slices' start row instead of the slices (fuse_rope.go).
func ropeParse(b Builder, args []int32, t *RopeTables) (ropeCall, error) {
	if len(args) != 5 {
		return ropeCall{}, Errorf(-1, "want 5 args [xq, xk, freqs_cos, freqs_sin, ValueList[xq_out, xk_out]], have %d", len(args))
	}
	xq, xk, fc, _, outs, err := ropeQK(b, args, 4)
	if err != nil {
		return ropeCall{}, err
	}
	s, d := xq.Dims[1], xq.Dims[3]
	if d%2 != 0 {
		return ropeCall{}, Errorf(0, "head_dim %d is odd", d)
	}
	if fc.Dims[0] != s || fc.Dims[1]*2 != d {
		return ropeCall{}, Errorf(2, "freqs dims %v, want [%d %d]", fc.Dims, s, d/2)
	}
	c := ropeCall{x: args[0], cos: args[2], sin: args[3], out: outs[0], numel: xq.Numel,
		d: d, rowDiv: xq.Dims[2], seq: s, cosT: d / 2, cosJ: 1,
		pair: true, xk: args[1], outk: outs[1], numel2: xk.Numel, rowDiv2: xk.Dims[2]}
	// The tables read whole, from the slices' start row (the slices,
	// rows [start, start+s) of [T, d/2] tables as checked above,
	// recorded nothing).
	if start, ok := ropeTablesAt(b, t); ok {
		c.cos, c.sin, c.start = t.Cos, t.Sin, start
	}
	return c, nil
}

func ropeHFOp(b Builder, args []int32) error {
	if len(args) != 6 {
		return Errorf(-1, "want 6 args [xq, xk, freqs_cos, freqs_sin, start_pos, ValueList[xq_out, xk_out]], have %d", len(args))
	}
	start, err := b.Int(args[4])
	if err != nil {
		return argErr(4, err)
	}
	xq, xk, fc, _, outs, err := ropeQK(b, args, 5)
	if err != nil {
		return err
	}
	s, d := xq.Dims[1], xq.Dims[3]
	rd := fc.Dims[1]
	if rd%2 != 0 || rd > d {
		return Errorf(2, "rotary dim %d must be even and at most head_dim %d", rd, d)
	}
	if start < 0 || start+s > fc.Dims[0] {
		return Errorf(4, "start_pos %d + seq_len %d outside the %d table rows", start, s, fc.Dims[0])
	}
	return recordRope(b, ropeCall{x: args[0], cos: args[2], sin: args[3], out: outs[0], hf: true, numel: xq.Numel,
		d: d, rowDiv: xq.Dims[2], seq: s, start: start, cosT: rd, rd: rd,
		pair: true, xk: args[1], outk: outs[1], numel2: xk.Numel, rowDiv2: xk.Dims[2]})
}

func ropeInterleavedOp(b Builder, args []int32) error {
	if len(args) != 3 {
		return Errorf(-1, "want 3 args [x, freqs_cis, out], have %d", len(args))
	}
	x, err := ropeF32(b, args[0], 0, "x")
	if err != nil {
		return err
	}
	f, err := ropeF32(b, args[1], 1, "freqs_cis")
	if err != nil {
		return err
	}
	if len(x.Dims) != 3 {
		return Errorf(0, "dims %v: want [B, N, C]", x.Dims)
	}
	n, c := x.Dims[1], x.Dims[2]
	if c%2 != 0 {
		return Errorf(0, "C = %d is odd", c)
	}
	if f.Numel != n*c {
		return Errorf(1, "freqs_cis has %d elements, want N·C = %d", f.Numel, n*c)
	}
	if _, err := Output(b, 2, args[2], serialization.Float32, x.Dims); err != nil {
		return err
	}
	return recordRope(b, ropeCall{x: args[0], cos: args[1], sin: args[1], out: args[2], numel: x.Numel,
		d: c, rowDiv: 1, seq: n, cosT: c, cosJ: 2, sinO: 1})
}
