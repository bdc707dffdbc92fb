package graph

import (
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// QuantizedWeight is one weight of a weight-quantized op (see
// ops.QuantWeightOf): the op, the value ids of its packed weight, scales
// and sums (-1 when absent), the group size (0: per channel), and the
// bytes each takes on the device (float16 scales are widened to float32).
// Params is the number of weights the packed bytes hold (two per byte for
// 4-bit formats).
type QuantizedWeight struct {
	Op                                        string
	OpIndex                                   int
	Format                                    string
	Bits                                      int
	Layout                                    string
	Weight, Scales, Sums                      int32
	Group                                     int64
	WeightBytes, ScaleBytes, SumBytes, Params int64
}

// Bytes is the device bytes the weight costs: packed weight, scales and
// sums.
func (q QuantizedWeight) Bytes() int64 { return q.WeightBytes + q.ScaleBytes + q.SumBytes }

// QuantizedWeights lists the quantized weights of g's ops in chain order,
// each weight once (a weight shared by two ops, such as a tied embedding
// and output head, is listed at its first use). It reads only the graph,
// so it works on graphs with unsupported ops too.
func QuantizedWeights(g *serialization.Graph) []QuantizedWeight {
	var out []QuantizedWeight
	seen := map[int32]bool{}
	tensorBytes := func(id int32) int64 {
		if id < 0 || int(id) >= len(g.Values) || g.Values[id].Kind != serialization.KindTensor || g.Values[id].Tensor == nil {
			return 0
		}
		t := g.Values[id].Tensor
		n := int64(DeviceDType(t.DataType).Size()) // fp16 scales are float32 on the device
		for _, d := range t.Dims {
			n *= int64(d)
		}
		return n
	}
	arg := func(op serialization.OpCall, i int) int32 {
		if i < 0 || i >= len(op.Args) {
			return -1
		}
		return op.Args[i]
	}
	for i, op := range g.Chain {
		info, ok := ops.QuantWeightOf(op.Name)
		if !ok {
			continue
		}
		w := arg(op, info.Weight)
		if w < 0 || seen[w] {
			continue
		}
		seen[w] = true
		q := QuantizedWeight{Op: op.Name, OpIndex: i, Format: info.Format, Bits: info.Bits, Layout: info.Layout,
			Weight: w, Scales: arg(op, info.Scales), Sums: arg(op, info.Sums)}
		if gi := arg(op, info.Group); gi >= 0 && int(gi) < len(g.Values) && g.Values[gi].Kind == serialization.KindInt {
			q.Group = g.Values[gi].Int
		}
		q.WeightBytes, q.ScaleBytes, q.SumBytes = tensorBytes(q.Weight), tensorBytes(q.Scales), tensorBytes(q.Sums)
		q.Params = q.WeightBytes * 8 / int64(info.Bits)
		out = append(out, q)
	}
	return out
}
