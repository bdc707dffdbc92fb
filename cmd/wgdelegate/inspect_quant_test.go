package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// quantGraph is x [2, 64] through et_vk.linear_q4gsw (N 12, group 32) and
// et_vk.linear_dq8ca_q4gsw (N 8, group 16) fed by
// torchao.choose_qparams_affine: inspect needs no GPU, so the bytes are
// zeros of the right sizes.
func quantGraph() *serialization.Builder {
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{2, 64}, -1)
	b.Inputs(x)
	w := b.InlineConst(serialization.Uint8, []uint32{12, 32}, make([]byte, 12*32))
	s := b.InlineConst(f, []uint32{2, 12}, make([]byte, 4*2*12))
	y := b.Tensor(f, []uint32{2, 12}, -1)
	b.Op("et_vk.linear_q4gsw.default", x, w, s, b.Int(32), b.Null(), y)
	xs, xz := b.Tensor(f, []uint32{2}, -1), b.Tensor(serialization.Int8, []uint32{2}, -1)
	b.Op("torchao.choose_qparams_affine.default", x, b.String("ASYMMETRIC"), b.IntList(1, 64), b.Null(),
		b.Int(-128), b.Int(127), b.Null(), b.Null(), b.Null(), b.Bool(false), b.ValueList(xs, xz))
	w2 := b.InlineConst(serialization.Uint8, []uint32{8, 32}, make([]byte, 8*32))
	sums := b.InlineConst(serialization.Int32, []uint32{4, 8}, make([]byte, 4*4*8))
	s2 := b.InlineConst(f, []uint32{4, 8}, make([]byte, 4*4*8))
	z := b.Tensor(f, []uint32{2, 8}, -1)
	b.Op("et_vk.linear_dq8ca_q4gsw.default", x, xs, xz, w2, sums, s2, b.Int(16), b.Null(), z)
	b.Outputs(y, z)
	return b
}

// TestInspectQuantized: inspect lists each quantized weight's format,
// group size, bytes and bytes per weight, as text and as JSON; a graph
// without quantized ops prints no such section.
func TestInspectQuantized(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "q.bin", mustBlob(t, quantGraph()))
	s := mustRun(t, "inspect", path)
	for _, want := range []string{
		"\nquantized weights\n", "FORMAT", "BYTES/WEIGHT",
		"0 et_vk.linear_q4gsw.default", "q4gsw   32     [12 32]  384     96      0     0.625",
		"2 et_vk.linear_dq8ca_q4gsw.default", "8da4w   16     [8 32]   256     128     128   1.000",
		"2 weights, 1280 parameters, 992 bytes: 0.775 bytes per weight",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("inspect lacks %q:\n%s", want, s)
		}
	}
	var doc inspectDoc
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", path)), &doc); err != nil {
		t.Fatal(err)
	}
	q := doc.Graphs[0].Quantized
	if len(q) != 2 || q[0].Format != "q4gsw" || q[0].Group != 32 || q[0].Params != 768 || q[0].WeightBytes != 384 || q[0].ScaleBytes != 96 ||
		q[1].Format != "8da4w" || q[1].Bits != 4 || q[1].Group != 16 || q[1].SumBytes != 128 || q[1].OpIndex != 2 {
		t.Errorf("quantized_weights %+v", q)
	}
	f := newFixture(t)
	if s := mustRun(t, "inspect", f.blob); strings.Contains(s, "quantized weights") {
		t.Errorf("a float graph printed a quantized weights section:\n%s", s)
	}
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", f.blob)), &doc); err != nil || doc.Graphs[0].Quantized == nil || len(doc.Graphs[0].Quantized) != 0 {
		t.Errorf("float graph quantized_weights %v (err %v), want []", doc.Graphs[0].Quantized, err)
	}
}
