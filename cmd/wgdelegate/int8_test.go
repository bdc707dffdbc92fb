package main

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// int8Graph is a program that takes and returns int8, as one whose boundary
// quantize/dequantize were removed (quantize_io_pass) does: q8ta_relu of an
// int8 input, and its dequantized floats as a second output.
func int8Graph(t *testing.T) []byte {
	t.Helper()
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Int8, []uint32{2, 5}, -1)
	y := b.Tensor(serialization.Int8, []uint32{2, 5}, -1)
	b.Op("et_vk.q8ta_relu.default", x, b.Double(0.5), b.Int(-3), b.Double(0.25), b.Int(-128), y)
	z := b.Tensor(serialization.Float32, []uint32{2, 5}, -1)
	b.Op("quantized_decomposed.dequantize_per_tensor.default", y, b.Double(0.25), b.Int(-128), b.Int(-128), b.Int(127), b.Null(), b.Null(), z)
	b.Inputs(x)
	b.Outputs(y, z)
	return mustBlob(t, b)
}

// TestRunInt8 feeds an int8 .npy and reads int8 and float32 .npy outputs.
func TestRunInt8(t *testing.T) {
	dir := t.TempDir()
	model := write(t, dir, "int8.bin", int8Graph(t))
	codes := []int8{-128, -4, -3, -2, 0, 1, 20, 60, 100, 127}
	in := writeNPY(t, dir, "q.npy", wgdelegate.FromInt8([]int64{2, 5}, codes))
	out := filepath.Join(dir, "out")
	mustRun(t, "run", "--input", in, "--output-dir", out, model)
	got, err := readNPY(t, filepath.Join(out, "output_0.npy")).Int8s()
	if err != nil {
		t.Fatal(err)
	}
	// relu((q + 3)·0.5) / 0.25 − 128, clamped: (q + 3)·2 − 128 for q > −3.
	want := make([]int8, len(codes))
	for i, q := range codes {
		v := max(float64(int(q)+3)*0.5, 0)
		want[i] = int8(max(-128, min(127, math.RoundToEven(v/0.25)-128)))
	}
	if !slices.Equal(got, want) {
		t.Errorf("int8 output %v, want %v", got, want)
	}
	f := float32s(t, readNPY(t, filepath.Join(out, "output_1.npy")))
	for i, q := range want {
		if w := float32(int(q)+128) * 0.25; f[i] != w {
			t.Errorf("dequantized %d = %v, want %v", i, f[i], w)
		}
	}
	u8 := writeNPY(t, dir, "u8.npy", wgdelegate.FromUint8([]int64{2, 5}, make([]uint8, 10)))
	mustFail(t, []string{"dtype uint8", "int8"}, "run", "--input", u8, "--output-dir", out, model)
}
