package graph

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// test.packed_convblock [w, t, out]: out = the conv block packing of w
// with t output channels per block.
func init() {
	ops.Register("test.packed_convblock", func(b ops.Builder, args []int32) error {
		w, err := b.Tensor(args[0])
		if err != nil {
			return err
		}
		t, err := b.Int(args[1])
		if err != nil {
			return err
		}
		spec, err := ops.ConvBlockSpec(w, t, b.MaxWorkgroupsPerDim())
		if err != nil {
			return err
		}
		packed, err := b.PackWeight(args[0], spec)
		if err != nil {
			return err
		}
		out, err := ops.Output(b, 2, args[2], packed.DType, packed.Dims)
		if err != nil {
			return err
		}
		return testCopy(b, packed, out.ID)
	})
}

// randWeight returns n random float32s and their little-endian bytes.
func randWeight(n int, seed uint64) ([]float32, []byte) {
	rng := rand.New(rand.NewPCG(seed, 7))
	w := make([]float32, n)
	raw := make([]byte, 4*n)
	for i := range w {
		w[i] = rng.Float32()*2 - 1
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(w[i]))
	}
	return w, raw
}

// loadBuilt loads what b describes, with its named data.
func loadBuilt(t *testing.T, b *serialization.Builder, opt Options) *WebGPUGraph {
	t.Helper()
	var blob []byte
	blob, opt.NamedData = BuiltBlob(t, b)
	g, err := Load(context.Background(), device(t), blob, opt)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestConvBlockSpec: the block packing of a [OC, ICg, KH, KW] weight
// is [OC/t, R, t] with packed[b][r][j] = w[b·t+j][r], for block sizes 4, 8
// and 16 and odd reduction lengths; a channel count that t does not divide
// is rejected.
func TestConvBlockSpec(t *testing.T) {
	for _, tc := range []struct {
		dims []uint32
		t    int64
	}{
		{[]uint32{16, 3, 3, 3}, 16},
		{[]uint32{32, 5, 1, 3}, 16},
		{[]uint32{24, 7, 2, 1}, 8},
		{[]uint32{12, 1, 5, 5}, 4},
		{[]uint32{16, 7, 5}, 4}, // conv1d
	} {
		oc, r := int(tc.dims[0]), 1
		for _, d := range tc.dims[1:] {
			r *= int(d)
		}
		w, raw := randWeight(oc*r, uint64(oc*r))
		b := serialization.NewBuilder()
		f := serialization.Float32
		cst, _ := b.NamedConst(f, tc.dims, raw)
		nb := uint32(oc) / uint32(tc.t)
		out := b.Tensor(f, []uint32{nb, uint32(r), uint32(tc.t)}, -1)
		b.Op("test.packed_convblock", cst, b.Int(tc.t), out)
		b.Outputs(out)
		g := loadBuilt(t, b, Options{})
		res, err := g.Execute(context.Background(), nil)
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := res[0].Float32s()
		tt := int(tc.t)
		for blk := 0; blk < oc/tt; blk++ {
			for k := 0; k < r; k++ {
				for j := 0; j < tt; j++ {
					if g, want := got[(blk*r+k)*tt+j], w[(blk*tt+j)*r+k]; g != want {
						t.Fatalf("%v t=%d: packed[%d][%d][%d] = %v, want %v", tc.dims, tt, blk, k, j, g, want)
					}
				}
			}
		}
	}
	// 12 channels in blocks of 8.
	w := ops.Tensor{DType: serialization.Float32, Dims: []int64{12, 2, 3, 3}, Numel: 12 * 18}
	if _, err := ops.ConvBlockSpec(w, 8, 65535); err == nil {
		t.Error("12 channels packed into blocks of 8")
	}
	w.DType = serialization.Float16
	if _, err := ops.ConvBlockSpec(w, 4, 65535); err == nil {
		t.Error("2-byte weight packed")
	}
}

// convGraph is one 3×3 convolution [1, ic, h, w] → [1, oc, h, w] with a
// named weight and bias; it returns the builder, input and weights.
func convGraph(ic, oc, h, wd uint32, seed uint64) (*serialization.Builder, []float32, []float32, []float32) {
	b := serialization.NewBuilder()
	f := serialization.Float32
	x := b.Tensor(f, []uint32{1, ic, h, wd}, -1)
	b.Inputs(x)
	wv, wraw := randWeight(int(oc*ic*9), seed)
	bv, braw := randWeight(int(oc), seed+1)
	xv, _ := randWeight(int(ic*h*wd), seed+2)
	w, _ := b.NamedConst(f, []uint32{oc, ic, 3, 3}, wraw)
	bias, _ := b.NamedConst(f, []uint32{oc}, braw)
	out := b.Tensor(f, []uint32{1, oc, h, wd}, -1)
	b.Op("aten.convolution.default", x, w, bias, b.IntList(1), b.IntList(1), b.IntList(1), b.Bool(false),
		b.IntList(0), b.Int(1), out)
	b.Outputs(out)
	return b, xv, wv, bv
}

// conv3x3 is the plain-Go reference of convGraph's op (float64 sums).
func conv3x3(x, w, bias []float32, ic, oc, h, wd int) []float32 {
	y := make([]float32, oc*h*wd)
	for o := 0; o < oc; o++ {
		for i := 0; i < h; i++ {
			for j := 0; j < wd; j++ {
				s := float64(bias[o])
				for c := 0; c < ic; c++ {
					for ky := 0; ky < 3; ky++ {
						for kx := 0; kx < 3; kx++ {
							yy, xx := i+ky-1, j+kx-1
							if yy < 0 || yy >= h || xx < 0 || xx >= wd {
								continue
							}
							s += float64(x[(c*h+yy)*wd+xx]) * float64(w[((o*ic+c)*3+ky)*3+kx])
						}
					}
				}
				y[(o*h+i)*wd+j] = float32(s)
			}
		}
	}
	return y
}

// TestConvWeightPackedCache: a convolution's constant weight is packed at
// load (a miss), has no unpacked buffer (deferred), comes from the cache
// file on the next load (a hit, nothing packed) and both loads match the
// reference.
func TestConvWeightPackedCache(t *testing.T) {
	const ic, oc, h, wd = 5, 32, 7, 9
	path := filepath.Join(t.TempDir(), "packed.cache")
	b, x, w, bias := convGraph(ic, oc, h, wd, 3)
	want := conv3x3(x, w, bias, ic, oc, h, wd)
	xb := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(xb[4*i:], math.Float32bits(v))
	}
	wbytes := int64(4 * len(w))
	for i, st := range []PackedCacheStats{{Misses: 1, Bytes: wbytes}, {Hits: 1, Bytes: wbytes}} {
		g := loadBuilt(t, b, Options{PackedCache: path})
		if got := g.PackedCacheStats(); got != st {
			t.Errorf("load %d: %+v, want %+v", i, got, st)
		}
		if s := g.MemoryStats(); s.NumDeferredConstants != 1 || s.DeferredConstantBytes != wbytes {
			t.Errorf("load %d: %d deferred constants (%d bytes), want the weight", i, s.NumDeferredConstants, s.DeferredConstantBytes)
		}
		// The packed weight is device memory the graph holds.
		if s := g.MemoryStats(); s.PackedWeightBytes != wbytes || s.TotalBytes() != s.TensorBufferBytes+s.StagingBufferBytes+s.UniformBufferBytes+wbytes {
			t.Errorf("load %d: %d packed weight bytes (total %d), want %d counted in the total", i, s.PackedWeightBytes, s.TotalBytes(), wbytes)
		}
		res, err := g.Execute(context.Background(), []Tensor{{DType: serialization.Float32, Shape: []int64{1, ic, h, wd}, Data: xb}})
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := res[0].Float32s()
		for k := range want {
			if d := math.Abs(float64(got[k] - want[k])); d > 1e-4+1e-4*math.Abs(float64(want[k])) {
				t.Fatalf("load %d: y[%d] = %v, want %v", i, k, got[k], want[k])
			}
		}
	}
}

// TestPrepackedConvWeightNotCopied: a convolution weight behind
// et_vk.prepack (as the exporter writes it) is packed from the constant:
// neither the constant nor the prepack output gets a buffer, only the
// packed weight does, and the result matches the reference.
func TestPrepackedConvWeightNotCopied(t *testing.T) {
	const ic, oc, h, wd = 3, 16, 6, 5
	b := serialization.NewBuilder()
	f := serialization.Float32
	x := b.Tensor(f, []uint32{1, ic, h, wd}, -1)
	b.Inputs(x)
	wv, wraw := randWeight(oc*ic*9, 11)
	bv, braw := randWeight(oc, 12)
	xv, xraw := randWeight(ic*h*wd, 13)
	w, _ := b.NamedConst(f, []uint32{oc, ic, 3, 3}, wraw)
	pw := b.Tensor(f, []uint32{oc, ic, 3, 3}, -1)
	b.Op("et_vk.prepack.default", w, pw)
	bias, _ := b.NamedConst(f, []uint32{oc}, braw)
	out := b.Tensor(f, []uint32{1, oc, h, wd}, -1)
	b.Op("aten.convolution.default", x, pw, bias, b.IntList(1), b.IntList(1), b.IntList(1), b.Bool(false),
		b.IntList(0), b.Int(1), out)
	b.Outputs(out)
	g := loadBuilt(t, b, Options{})
	defer g.Close()
	wbytes := int64(4 * len(wv))
	s := g.MemoryStats()
	if s.NumDeferredConstants != 2 || s.DeferredConstantBytes != 2*wbytes {
		t.Errorf("%d deferred (%d bytes), want the constant and its prepack output (%d bytes)",
			s.NumDeferredConstants, s.DeferredConstantBytes, 2*wbytes)
	}
	if s.PackedWeightBytes != wbytes {
		t.Errorf("%d packed weight bytes, want %d", s.PackedWeightBytes, wbytes)
	}
	if want := int64(4 * (ic*h*wd + oc*h*wd + oc)); s.TensorBufferBytes != want {
		t.Errorf("tensor buffers hold %d bytes, want %d (input, output, bias: no weight copy)", s.TensorBufferBytes, want)
	}
	res, err := g.Execute(context.Background(), []Tensor{{DType: f, Shape: []int64{1, ic, h, wd}, Data: xraw}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := res[0].Float32s()
	want := conv3x3(xv, wv, bv, ic, oc, h, wd)
	for k := range want {
		if d := math.Abs(float64(got[k] - want[k])); d > 1e-4+1e-4*math.Abs(float64(want[k])) {
			t.Fatalf("y[%d] = %v, want %v", k, got[k], want[k])
		}
	}
}
