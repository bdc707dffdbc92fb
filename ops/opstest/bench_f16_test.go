package opstest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/fp16"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// BenchmarkGEMVHalf runs a one-row aten.linear [1, K]·[K, K]ᵀ three ways in
// every iteration, kernel times as in BenchmarkMatmul: the force_fp16
// graph with its FLOAT16 weight read as packed halves (half, the default),
// the same graph with Config.NoHalfWeights (f32: the float32 GEMV on the
// widened weight), and the float32 graph of the same (half-rounded)
// weights (fp32graph, the plain GEMV). The unit is 10^9 weights a second;
// GB/s of weight bytes is that ×2 for half and ×4 for the others, and
// half/f32 is the ratio of the first two.
//
//	go test -run '^$' -bench GEMVHalf -count 5 ./ops/opstest
func BenchmarkGEMVHalf(b *testing.B) {
	dev := openBenchDevice(b)
	for _, k := range []int64{1024, 2048} {
		b.Run(fmt.Sprint(k), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			f := serialization.Float32
			wt := RandTensor(r, f, []int64{k, k}, -1, 1)
			for i, v := range wt.V {
				wt.V[i] = reference.Round(serialization.Float16, v)
			}
			xt := RandTensor(r, f, []int64{1, k}, -1, 1)
			sb := linearBenchGraph(wt, 1, k, k)
			h := serialization.NewBuilder()
			if err := fp16.Rewrite(h, sb, f); err != nil {
				b.Fatal(err)
			}
			in := []graph.Tensor{{DType: f, Shape: []int64{1, k}, Data: xt.Encode()}}
			vs := []benchVariant{
				{name: "half", sb: h, in: in},
				{name: "f32", sb: h, cfg: ops.Config{NoHalfWeights: true}, in: in},
				{name: "fp32graph", sb: sb, in: in},
			}
			ts, _ := timeVariants(b, dev, vs, nil)
			work := float64(k*k) / 1e9
			reportVariants(b, vs, ts, []float64{work, work, work}, "Gweight/s", 0)
		})
	}
}
