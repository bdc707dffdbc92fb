// Package fp16 rewrites a float32 VkGraph the way the ExecuTorch Vulkan
// exporter's force_fp16 option writes it (quantized-format.md §6.1), for
// the tests and model writers that need fp16 graphs: every FLOAT32 tensor
// becomes FLOAT16; a constant's bytes are converted to halves (clamped to
// ±65504 first, as the exporter does since 2026-03, so a -1e5 mask becomes
// -65504 rather than -Inf; rounded to nearest even); a non-constant tensor
// gets the chosen staging_datatype (FLOAT32 for a force_fp16 export, whose
// host keeps feeding and receiving float32; FLOAT16 for a graph exported
// in half). Every other value, the chain and the I/O ids are kept, so value
// ids do not move.
package fp16

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// MaxHalf is the largest finite half, the exporter's clamp.
const MaxHalf = 65504

// Rewrite writes src's graph into dst, which must be empty, with every
// FLOAT32 tensor made FLOAT16 as described in the package documentation;
// staging must be FLOAT32 or FLOAT16. src is not changed. Inline
// constants stay inline and named ones named (under the SHA-256 of their
// new bytes).
func Rewrite(dst, src *serialization.Builder, staging serialization.DataType) error {
	if g := dst.Graph(); len(g.Values) != 0 || len(g.Chain) != 0 {
		return fmt.Errorf("fp16: the destination builder is not empty")
	}
	if staging != serialization.Float32 && staging != serialization.Float16 {
		return fmt.Errorf("fp16: staging dtype %v (want float32 or float16)", staging)
	}
	raw, err := src.Blob()
	if err != nil {
		return err
	}
	blob, err := serialization.DecodeBlob(raw)
	if err != nil {
		return err
	}
	named := serialization.NewNamedDataMap()
	for _, nb := range src.NamedBlobs() {
		if err := named.Add(nb.Key, nb.Data); err != nil {
			return err
		}
	}
	g := blob.Graph
	for i, v := range g.Values {
		t := v.Tensor
		if v.Kind != serialization.KindTensor || t == nil || (t.DataType != serialization.Float32 && !t.IsConstant()) {
			dst.AddValue(v)
			continue
		}
		if !t.IsConstant() {
			h := *t
			h.DataType, h.StagingDataType = serialization.Float16, staging
			dst.AddValue(serialization.Value{Kind: serialization.KindTensor, Tensor: &h})
			continue
		}
		data, err := blob.ResolveConstant(t, named)
		if err != nil {
			return fmt.Errorf("fp16: value %d: %w", i, err)
		}
		dt := t.DataType
		if dt == serialization.Float32 {
			dt, data = serialization.Float16, Halves(data)
		}
		var id int32
		if g.Constants[t.ConstantID].IsNamed() {
			id, _ = dst.NamedConst(dt, t.Dims, data)
		} else {
			id = dst.InlineConst(dt, t.Dims, data)
		}
		if id != int32(i) {
			return fmt.Errorf("fp16: value %d rewritten as %d", i, id)
		}
	}
	for _, op := range g.Chain {
		dst.Op(op.Name, op.Args...)
	}
	ids := func(u []uint32) []int32 {
		out := make([]int32, len(u))
		for k, x := range u {
			out[k] = int32(x)
		}
		return out
	}
	dst.Inputs(ids(g.InputIDs)...)
	dst.Outputs(ids(g.OutputIDs)...)
	return nil
}

// Halves converts little-endian float32 bytes to float16 bytes, clamping
// finite and infinite values to ±MaxHalf first (NaN stays NaN) and
// rounding to nearest even: the exporter's conversion of a force_fp16
// constant.
func Halves(f32 []byte) []byte {
	out := make([]byte, 0, len(f32)/2)
	for k := 0; k+4 <= len(f32); k += 4 {
		f := math.Float32frombits(binary.LittleEndian.Uint32(f32[k:]))
		if f > MaxHalf {
			f = MaxHalf
		} else if f < -MaxHalf {
			f = -MaxHalf
		}
		out = binary.LittleEndian.AppendUint16(out, tensor.Float32ToHalf(f))
	}
	return out
}
