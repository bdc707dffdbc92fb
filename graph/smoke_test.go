package graph

import (
	"context"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

func TestViewCopySmoke(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, []uint32{2, 3}, -1)
	size := b.IntList(3, 2)
	y := b.Tensor(serialization.Float32, []uint32{3, 2}, -1)
	b.Op("aten.view_copy.default", x, size, y)
	b.Inputs(x)
	b.Outputs(y)
	g := loadBuilt(t, b, Options{})
	defer g.Close()
	in := []float32{1, 2, 3, 4, 5, 6}
	outs, err := g.Execute(context.Background(), []Tensor{Float32Tensor([]int64{2, 3}, in)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := outs[0].Float32s()
	if !slices.Equal(got, in) || !slices.Equal(outs[0].Shape, []int64{3, 2}) {
		t.Fatalf("got %v %v", got, outs[0].Shape)
	}
}
