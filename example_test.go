package wgdelegate_test

import (
	"context"
	"fmt"
	"log"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// ExampleDevice_Load builds a one-op graph, a view_copy from [2 3] to [3 2],
// loads the delegate blob on the default adapter and runs it.
func ExampleDevice_Load() {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, []uint32{2, 3}, -1)
	y := b.Tensor(serialization.Float32, []uint32{3, 2}, -1)
	b.Op("aten.view_copy.default", x, b.IntList(3, 2), y) // [self, size, out]
	b.Inputs(x)
	b.Outputs(y)
	blob, err := b.Blob()
	if err != nil {
		log.Fatal(err)
	}

	// A program opens one Device and loads every model on it; pipelines
	// compiled for one model are reused by the next.
	ctx := context.Background()
	dev, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	m, err := dev.Load(ctx, blob)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	in := wgdelegate.Float32Tensor([]int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	outs, err := m.Execute(ctx, in)
	if err != nil {
		log.Fatal(err)
	}
	values, err := outs[0].Float32s()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(outs[0].DType, outs[0].Shape, values)
	// Output:
	// float32 [3 2] [1 2 3 4 5 6]
}
