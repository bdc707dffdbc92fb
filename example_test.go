package wgdelegate_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/npy"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// transposeModel writes a small model the way an exporter would: a VH00
// delegate blob (one op, x[2 3] viewed as [3 2], then y = view + w with w a
// named weight) inside a .pte, and the weight in a .ptd. It returns the
// bytes of both.
func transposeModel() (pte, ptd []byte) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, []uint32{2, 3}, -1)
	v := b.Tensor(serialization.Float32, []uint32{3, 2}, 0)
	w, _ := b.NamedConst(serialization.Float32, []uint32{3, 2}, wgdelegate.FromFloat32([]int64{6}, []float32{10, 20, 30, 40, 50, 60}).Data)
	y := b.Tensor(serialization.Float32, []uint32{3, 2}, -1)
	b.Op("aten.view_copy.default", x, b.IntList(3, 2), v) // [self, size, out]
	b.Op("aten.add.Tensor", v, w, b.Double(1), y)         // [self, other, alpha, out]
	b.Inputs(x)
	b.Outputs(y)
	blob, err := b.Blob()
	if err != nil {
		log.Fatal(err)
	}
	f32 := serialization.EValueSpec{ScalarType: serialization.ScalarTypeFloat, Sizes: []int32{2, 3}}
	out := serialization.EValueSpec{ScalarType: serialization.ScalarTypeFloat, Sizes: []int32{3, 2}}
	pte, err = serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{{
		ID: serialization.VulkanBackendID, Blob: blob, Inputs: []serialization.EValueSpec{f32}, Outputs: []serialization.EValueSpec{out}}}})
	if err != nil {
		log.Fatal(err)
	}
	ptd, err = serialization.EncodePTD(b.NamedBlobs())
	if err != nil {
		log.Fatal(err)
	}
	return pte, ptd
}

// ExampleOpen opens a .pte file and its .ptd weights on the default device,
// runs it once and prints the output.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "wgdelegate-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	pte, ptd := transposeModel()
	os.WriteFile(filepath.Join(dir, "model.pte"), pte, 0o644)
	os.WriteFile(filepath.Join(dir, "weights.ptd"), ptd, 0o644)

	ctx := context.Background()
	m, err := wgdelegate.Open(ctx, filepath.Join(dir, "model.pte"),
		wgdelegate.WithDataFiles(filepath.Join(dir, "weights.ptd")))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	outs, err := m.Execute(ctx, wgdelegate.FromFloat32([]int64{2, 3}, []float32{1, 2, 3, 4, 5, 6}))
	if err != nil {
		log.Fatal(err)
	}
	y, err := outs[0].Float32s()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(outs[0], y)
	// Output:
	// float32 [3 2] [11 22 33 44 55 66]
}

// ExampleLoad loads a model from bytes in memory, with its .ptd bytes, and
// reports the load's progress.
func ExampleLoad() {
	pte, ptd := transposeModel()
	ctx := context.Background()
	m, err := wgdelegate.Load(ctx, pte,
		wgdelegate.WithData(ptd),
		wgdelegate.WithProgress(func(p wgdelegate.Progress) {
			fmt.Printf("%v: %d/%d constant bytes\n", p.Phase, p.BytesDone, p.BytesTotal)
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	for i := 0; i < m.NumInputs(); i++ {
		dt, shape, _ := m.InputInfo(i) // no error: i < NumInputs()
		fmt.Println("input", i, dt, shape)
	}
	for i := 0; i < m.NumOutputs(); i++ {
		dt, shape, _ := m.OutputInfo(i)
		fmt.Println("output", i, dt, shape)
	}
	// Output:
	// parse: 0/24 constant bytes
	// build: 0/24 constant bytes
	// done: 24/24 constant bytes
	// input 0 float32 [2 3]
	// output 0 float32 [3 2]
}

// ExampleModel_InputInfo lists a model's inputs and outputs; an index it
// does not have is an *IndexError.
func ExampleModel_InputInfo() {
	pte, ptd := transposeModel()
	ctx := context.Background()
	m, err := wgdelegate.Load(ctx, pte, wgdelegate.WithData(ptd))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	for i := range m.NumInputs() {
		dt, shape, err := m.InputInfo(i)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("input", i, dt, shape)
	}
	_, _, err = m.InputInfo(5)
	fmt.Println(errors.Is(err, wgdelegate.ErrIndex), err)
	// Output:
	// input 0 float32 [2 3]
	// true wgdelegate: input 5 out of range: the model has 1 input(s)
}

// Example_npy feeds a model from a .npy file and writes its output as one,
// with the npy package: its Tensor is wgdelegate.Tensor, so nothing is
// converted on the way.
func Example_npy() {
	dir, err := os.MkdirTemp("", "wgdelegate-npy")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// What np.save("x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
	// writes.
	xPath := filepath.Join(dir, "x.npy")
	if err := npy.WriteFile(xPath, wgdelegate.FromFloat32([]int64{2, 3}, []float32{0, 1, 2, 3, 4, 5})); err != nil {
		log.Fatal(err)
	}

	pte, ptd := transposeModel()
	ctx := context.Background()
	m, err := wgdelegate.Load(ctx, pte, wgdelegate.WithData(ptd))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	x, err := npy.ReadFile(xPath)
	if err != nil {
		log.Fatal(err) // a *npy.FormatError for a malformed or unsupported file
	}
	outs, err := m.Execute(ctx, x)
	if err != nil {
		log.Fatal(err)
	}
	yPath := filepath.Join(dir, "y.npy")
	if err := npy.WriteFile(yPath, outs[0]); err != nil {
		log.Fatal(err)
	}

	y, err := npy.ReadFile(yPath) // np.load(yPath) reads the same
	if err != nil {
		log.Fatal(err)
	}
	v, _ := y.Float32s()
	fmt.Println(y.DType, y.Shape, v)
	// Output:
	// float32 [3 2] [10 21 32 43 54 65]
}

// ExampleModel_Execute runs one model several times on one device opened by
// the program; models loaded on it share its compiled pipelines.
func ExampleModel_Execute() {
	ctx := context.Background()
	dev, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	pte, ptd := transposeModel()
	m, err := wgdelegate.Load(ctx, pte, wgdelegate.WithDevice(dev), wgdelegate.WithData(ptd))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	x := make([]float32, 6)
	in := wgdelegate.FromFloat32([]int64{2, 3}, x) // shares x's memory
	for step := 0; step < 3; step++ {
		for i := range x {
			x[i] = float32(step)
		}
		outs, err := m.Execute(ctx, in)
		if err != nil {
			log.Fatal(err)
		}
		y, _ := outs[0].Float32s()
		fmt.Println(step, y)
	}
	// Output:
	// 0 [10 20 30 40 50 60]
	// 1 [11 21 31 41 51 61]
	// 2 [12 22 32 42 52 62]
}

// ExampleDevice_Load builds a one-op graph, a view_copy from [2 3] to [3 2],
// and loads the raw delegate blob with the Device's own Load.
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

	outs, err := m.Execute(ctx, wgdelegate.FromFloat32([]int64{2, 3}, []float32{1, 2, 3, 4, 5, 6}))
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

// ExampleFromFloat32 builds a tensor over a Go slice without copying it.
func ExampleFromFloat32() {
	data := []float32{1, 2, 3, 4, 5, 6}
	t := wgdelegate.FromFloat32([]int64{2, 3}, data)
	fmt.Println(t, t.Numel(), len(t.Data))
	// Output:
	// float32 [2 3] 6 24
}

// ExampleFromInt64 shows 64-bit integer inputs: the device computes in
// int32, so Execute narrows them (an element that does not fit is an
// error), and outputs the program declares int64 come back as int64.
func ExampleFromInt64() {
	t := wgdelegate.FromInt64([]int64{3}, []int64{-1, 0, 1<<31 - 1})
	v, err := t.Int64s()
	fmt.Println(t, v, err)
	// Output:
	// int64 [3] [-1 0 2147483647] <nil>
}

// ExampleFromInt32 builds an int32 tensor and reads it back.
func ExampleFromInt32() {
	t := wgdelegate.FromInt32([]int64{2, 2}, []int32{1, -2, 3, -4})
	v, _ := t.Int32s()
	_, err := t.Float32s()
	fmt.Println(t, v)
	fmt.Println(err)
	// Output:
	// int32 [2 2] [1 -2 3 -4]
	// wgdelegate: tensor is int32, not float32
}

// ExampleFromBool builds a bool mask: one byte per element.
func ExampleFromBool() {
	t := wgdelegate.FromBool([]int64{4}, []bool{true, false, false, true})
	v, _ := t.Bools()
	fmt.Println(t, t.Data, v)
	// Output:
	// bool [4] [1 0 0 1] [true false false true]
}

// ExampleFromFloat64 builds a float64 tensor; Execute narrows it to the
// model's float32 input.
func ExampleFromFloat64() {
	t := wgdelegate.FromFloat64([]int64{}, []float64{0.25})
	v, _ := t.Float64s()
	fmt.Println(t, t.Numel(), v)
	// Output:
	// float64 [] 1 [0.25]
}
