package graph

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// seedGraphs returns small valid blobs covering every registered op family.
func seedGraphs(t testing.TB) [][]byte {
	f := serialization.Float32
	var out [][]byte
	add := func(build func(b *serialization.Builder)) {
		b := serialization.NewBuilder()
		build(b)
		blob, err := b.Blob()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, blob)
	}
	add(func(b *serialization.Builder) {
		x := b.Tensor(f, []uint32{2, 3}, -1)
		w := b.InlineConst(f, []uint32{4, 3}, make([]byte, 48))
		p := b.Tensor(f, []uint32{4, 3}, -1)
		b.Op("et_vk.prepack.default", w, p)
		y := b.Tensor(f, []uint32{2, 4}, 0)
		b.Op("aten.linear.default", x, p, b.Null(), y)
		z := b.Tensor(f, []uint32{2, 4}, 1)
		b.Op("aten.relu.default", y, z)
		s := b.Tensor(f, []uint32{2, 4}, 0)
		b.Op("aten.sigmoid.default", z, s)
		b.Inputs(x)
		b.Outputs(s)
	})
	add(func(b *serialization.Builder) {
		x := b.Tensor(f, []uint32{2, 3}, -1)
		o := b.Tensor(f, []uint32{1, 3}, -1)
		y := b.Tensor(f, []uint32{2, 3}, 0)
		b.Op("aten.add.Tensor", x, o, b.Double(0.5), y)
		z := b.Tensor(f, []uint32{2, 3}, 1)
		b.Op("aten.div.Tensor", y, x, z)
		v := b.Tensor(f, []uint32{3, 2}, 0)
		b.Op("aten.permute_copy.default", z, b.IntList(1, 0), v)
		m := b.Tensor(f, []uint32{3, 3}, 1)
		b.Op("aten.mm.default", v, x, m)
		r := b.Tensor(f, []uint32{9}, -1)
		b.Op("aten.view_copy.default", m, b.IntList(9), r)
		b.Inputs(x, o)
		b.Outputs(r)
	})
	return out
}

// loadFuzzed loads blob (under a 64 MiB memory limit) for a fuzz target:
// an error is fine, and gives nil, unless it reports a panic (an op's or
// the build's), which fails t.
// The graph is closed when t ends.
func loadFuzzed(t *testing.T, dev *gpu.Device, blob []byte) *WebGPUGraph {
	t.Helper()
	g, err := Load(context.Background(), dev, blob, Options{MemoryLimit: 64 << 20})
	if err != nil {
		if strings.Contains(err.Error(), "panicked") {
			t.Fatalf("a panic instead of an error: %v", err)
		}
		return nil
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// zeroInputs returns zero-filled inputs of g's declared types and shapes.
func zeroInputs(g *WebGPUGraph) []Tensor {
	in := make([]Tensor, g.NumInputs())
	for i := range in {
		dt, shape := g.InputInfo(i)
		in[i] = Tensor{DType: dt, Shape: shape, Data: make([]byte, Numel(shape)*int64(dt.Size()))}
	}
	return in
}

// FuzzLoad feeds mutated blobs through the whole build (every op's argument
// checks included) and, when a graph builds and is small, through Execute.
// Nothing may panic; every failure must be a returned error.
func FuzzLoad(f *testing.F) {
	for _, s := range seedGraphs(f) {
		f.Add(s)
	}
	dev := device(f)
	f.Fuzz(func(t *testing.T, blob []byte) {
		g := loadFuzzed(t, dev, blob)
		if g == nil {
			return
		}
		if _, err := g.Execute(context.Background(), zeroInputs(g)); err != nil {
			t.Logf("execute: %v", err)
		}
	})
}

func TestSeedGraphsRun(t *testing.T) {
	for i, s := range seedGraphs(t) {
		g, err := Load(context.Background(), device(t), s, Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		g.Close()
	}
}

func TestMemoryLimit(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, []uint32{1024, 1024}, -1)
	y := b.Tensor(serialization.Float32, []uint32{1024, 1024}, -1)
	b.Op("aten.clone.default", x, b.Null(), y)
	b.Inputs(x)
	b.Outputs(y)
	blob, _ := b.Blob()
	_, err := Load(context.Background(), device(t), blob, Options{MemoryLimit: 1 << 20})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("got %v, want ErrUnsupported for a graph over the memory limit", err)
	}
}

// FuzzOpArgs mutates decoded seed graphs structurally (an op argument
// pointing at another value, a tensor's dims or dtype, a mem_obj_id) so the
// mutations reach the ops' argument checks instead of dying in the decoder.
func FuzzOpArgs(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), int16(1), uint8(0), uint8(0), uint16(3), int8(5), int8(-1))
	f.Add(uint8(1), uint8(3), uint8(1), int16(4), uint8(2), uint8(1), uint16(1), int8(3), int8(0))
	f.Add(uint8(1), uint8(2), uint8(2), int16(0), uint8(5), uint8(0), uint16(0), int8(0), int8(1))
	seeds := seedGraphs(f)
	dev := device(f)
	f.Fuzz(func(t *testing.T, seed, op, arg uint8, newID int16, val, dim uint8, dimVal uint16, dtype, memObj int8) {
		mutated := mutateBlob(t, seeds[int(seed)%len(seeds)], op, arg, newID, val, dim, dimVal, dtype, memObj)
		if mutated == nil {
			return
		}
		gr := loadFuzzed(t, dev, mutated)
		if gr == nil {
			return
		}
		if _, err := gr.Execute(context.Background(), zeroInputs(gr)); err != nil {
			t.Fatalf("built graph failed to execute: %v", err)
		}
	})
}

// mutateBlob is the fuzz targets' structural mutation of the blob raw:
// op op's argument arg points at value newID (modulo the values), and
// value val, when a tensor, gets dim dim set to dimVal mod 9, dtype dtype
// (when a valid one) and mem_obj_id memObj mod 3. It returns the mutated
// blob, or nil when it does not encode.
func mutateBlob(t *testing.T, raw []byte, op, arg uint8, newID int16, val, dim uint8, dimVal uint16, dtype, memObj int8) []byte {
	blob, err := serialization.DecodeBlob(raw)
	if err != nil {
		t.Fatal(err)
	}
	g := blob.Graph
	if c := g.Chain; len(c) > 0 {
		o := &c[int(op)%len(c)]
		if len(o.Args) > 0 {
			id := int32(newID) % int32(len(g.Values))
			if id < 0 {
				id += int32(len(g.Values))
			}
			o.Args[int(arg)%len(o.Args)] = id
		}
	}
	v := &g.Values[int(val)%len(g.Values)]
	if v.Kind == serialization.KindTensor {
		if len(v.Tensor.Dims) > 0 {
			v.Tensor.Dims[int(dim)%len(v.Tensor.Dims)] = uint32(dimVal % 9)
		}
		if dtype >= 0 && dtype <= 7 {
			v.Tensor.DataType = serialization.DataType(dtype)
		}
		v.Tensor.MemObjID = int32(memObj % 3)
	}
	mutated, err := serialization.EncodeBlob(g, blob.Constants)
	if err != nil {
		return nil
	}
	return mutated
}
