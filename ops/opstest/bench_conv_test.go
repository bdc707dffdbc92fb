package opstest

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// BenchmarkConv runs typical CNN convolutions (weight and bias as named
// constants). One Execute uploads the input, runs the dispatches and reads
// the output back; GFLOP/s counts 2·MACs per Execute. Each shape runs
// with packed weights (the default; ops.Config.NoConvPacking) and unpacked, side
// by side; transposed and depthwise convolutions do not pack, so their two
// runs measure the same kernel.
//
//	go test -run '^$' -bench Conv ./ops/opstest
func BenchmarkConv(b *testing.B) {
	dev := openBenchDevice(b)
	for _, c := range []struct {
		name       string
		in, w      []int64
		stride     int64
		pad        int64
		groups     int64
		transposed bool
	}{
		{"3x3_64to64_56", []int64{1, 64, 56, 56}, []int64{64, 64, 3, 3}, 1, 1, 1, false},
		{"1x1_64to128_56", []int64{1, 64, 56, 56}, []int64{128, 64, 1, 1}, 1, 0, 1, false},
		{"3x3_256to256_14", []int64{1, 256, 14, 14}, []int64{256, 256, 3, 3}, 1, 1, 1, false},
		{"1x1_512to512_7", []int64{1, 512, 7, 7}, []int64{512, 512, 1, 1}, 1, 0, 1, false},
		{"dw3x3_128_56", []int64{1, 128, 56, 56}, []int64{128, 1, 3, 3}, 1, 1, 128, false},
		{"7x7s2_3to64_224", []int64{1, 3, 224, 224}, []int64{64, 3, 7, 7}, 2, 3, 1, false},
		{"transposed4x4s2_64to32_28", []int64{1, 64, 28, 28}, []int64{64, 32, 4, 4}, 2, 1, 1, true},
	} {
		for _, packed := range []bool{true, false} {
			name := c.name + "/packed"
			if !packed {
				name = c.name + "/unpacked"
			}
			b.Run(name, func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				f := serialization.Float32
				cc := convCase{in: c.in, w: c.w, stride: []int64{c.stride}, pad: []int64{c.pad}, dil: []int64{1}, opd: []int64{0},
					groups: c.groups, transposed: c.transposed}
				outShape := cc.outShape()
				sb := serialization.NewBuilder()
				x := sb.Tensor(f, Dims(c.in), -1)
				w, _ := sb.NamedConst(f, Dims(c.w), RandTensor(r, f, c.w, -1, 1).Encode())
				bias, _ := sb.NamedConst(f, Dims(outShape[1:2]), RandTensor(r, f, outShape[1:2], -1, 1).Encode())
				out := sb.Tensor(f, Dims(outShape), -1)
				sb.Op("aten.convolution.default", x, w, bias, sb.IntList(c.stride), sb.IntList(c.pad), sb.IntList(1),
					sb.Bool(c.transposed), sb.IntList(0), sb.Int(c.groups), out)
				sb.Inputs(x)
				sb.Outputs(out)
				g := buildBenchGraph(b, dev, sb, ops.Config{NoConvPacking: !packed})
				defer g.Close()
				in := []graph.Tensor{{DType: f, Shape: c.in, Data: RandTensor(r, f, c.in, -1, 1).Encode()}}
				ctx := context.Background()
				if _, err := g.Execute(ctx, in); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := g.Execute(ctx, in); err != nil {
						b.Fatal(err)
					}
				}
				// Every weight meets every output (forward) or input (transposed) pixel.
				macs := float64(outShape[0] * outShape[1] * outShape[2] * outShape[3] * c.w[1] * c.w[2] * c.w[3])
				if c.transposed {
					macs = float64(c.in[0] * c.in[1] * c.in[2] * c.in[3] * c.w[1] * c.w[2] * c.w[3])
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(2*macs/sec/1e9, "GFLOP/s")
				b.ReportMetric(sec*1e3, "ms/exec")
			})
		}
	}
}
