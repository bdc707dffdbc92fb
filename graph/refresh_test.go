package graph

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// refreshGraph builds out = -table[p : p+2] (a slice with SymInt bounds,
// then a dispatch reading it) and, with structural, head = table[0 : p]
// too, whose shape follows p. p is a SymInt input or, with tensorPos, the
// element of an int32 [1] input that et_vk.select_as_symint reads on the
// host. table is [8, 4], element (r, c) = 10r + c.
func refreshGraph(tensorPos, structural bool, plan string) *serialization.Builder {
	f := serialization.Float32
	b := serialization.NewBuilder()
	data := make([]byte, 0, 8*4*4)
	for r := range 8 {
		for c := range 4 {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(10*r+c)))
		}
	}
	table := b.InlineConst(f, []uint32{8, 4}, data)
	p := b.SymInt(0)
	if tensorPos {
		x := b.Tensor(serialization.Int32, []uint32{1}, -1)
		b.Inputs(x)
		b.Op("et_vk.select_as_symint.default", x, b.Int(0), b.Int(0), p)
	} else {
		b.Inputs(p)
	}
	end := b.SymInt(0)
	b.Op("add", p, b.Int(2), end)
	rows, out := b.Tensor(f, []uint32{2, 4}, -1), b.Tensor(f, []uint32{2, 4}, -1)
	b.Op("aten.slice_copy.Tensor", table, b.Int(0), p, end, b.Int(1), rows)
	b.Op("aten.neg.default", rows, out)
	b.Outputs(out)
	if structural {
		head := b.Tensor(f, []uint32{8, 4}, -1)
		b.Op("aten.slice_copy.Tensor", table, b.Int(0), b.Int(0), p, b.Int(1), head)
		b.Outputs(head)
	}
	if plan == "exporter" {
		memplan.PlanLikeExporter(b.Graph())
	} else {
		memplan.PlanDedicated(b.Graph())
	}
	return b
}

// TestRefreshSymIntValues: a SymInt that only moves a slice's start (a
// uniform param) is followed without re-recording, whether it is a SymInt
// input or read from an input tensor by select_as_symint; one that also
// sizes a tensor re-records at every change. Unchanged values do neither.
// Every result is checked.
func TestRefreshSymIntValues(t *testing.T) {
	positions := []int64{0, 3, 5, 1, 6, 6, 2, 0}
	for _, tensorPos := range []bool{false, true} {
		for _, structural := range []bool{false, true} {
			for _, plan := range []string{"dedicated", "exporter"} {
				t.Run(fmt.Sprintf("tensor_pos=%v/structural=%v/plan=%s", tensorPos, structural, plan), func(t *testing.T) {
					blob, err := refreshGraph(tensorPos, structural, plan).Blob()
					if err != nil {
						t.Fatal(err)
					}
					g, err := Load(context.Background(), device(t), blob, Options{})
					if err != nil {
						t.Fatal(err)
					}
					defer g.Close()
					for i, pos := range positions {
						in := Int64Tensor([]int64{}, []int64{pos})
						if tensorPos {
							in = Int64Tensor([]int64{1}, []int64{pos})
						}
						before := g.RecordStats()
						outs, err := g.Execute(context.Background(), []Tensor{in})
						if err != nil {
							t.Fatalf("input_pos %d: %v", pos, err)
						}
						after := g.RecordStats()
						rr, rf := after.Rerecords-before.Rerecords, after.Refreshes-before.Refreshes
						switch {
						case i == 0:
						case pos == positions[i-1]:
							if rr != 0 || rf != 0 {
								t.Errorf("step %d: input_pos unchanged at %d: %d re-records, %d refreshes, want none", i, pos, rr, rf)
							}
						case structural:
							if rr != 1 {
								t.Errorf("step %d: input_pos %d sizes a tensor: %d re-records, want 1", i, pos, rr)
							}
						default:
							if rr != 0 || rf != 1 {
								t.Errorf("step %d: input_pos %d: %d re-records and %d refreshes, want 0 and 1", i, pos, rr, rf)
							}
						}
						got, err := outs[0].Float32s()
						if err != nil {
							t.Fatal(err)
						}
						for k, v := range got {
							if want := -float32(10*(pos+int64(k/4)) + int64(k%4)); v != want {
								t.Fatalf("step %d: input_pos %d: out[%d] = %v, want %v", i, pos, k, v, want)
							}
						}
						if structural {
							if want := fmt.Sprint([]int64{pos, 4}); fmt.Sprint(outs[1].Shape) != want {
								t.Fatalf("step %d: head shape %v, want %v", i, outs[1].Shape, want)
							}
							head, err := outs[1].Float32s()
							if err != nil {
								t.Fatal(err)
							}
							for k, v := range head {
								if want := float32(10*(k/4) + k%4); v != want {
									t.Fatalf("step %d: head[%d] = %v, want %v", i, k, v, want)
								}
							}
						}
					}
				})
			}
		}
	}
}

// TestRefreshRopeHF: apply_rotary_emb_hf with a SymInt start_pos (a
// uniform param of its kernel). A moving start_pos refreshes; each result
// is bit-identical to a graph that re-records at every Execute and within
// 1e-5 of the reference interpreter. A start_pos past the tables is an
// error, as when re-recording, and the next good one works.
func TestRefreshRopeHF(t *testing.T) {
	f := serialization.Float32
	const rows, d = 16, 8
	b := serialization.NewBuilder()
	xq, xk := b.Tensor(f, []uint32{1, 2, 2, d}, -1), b.Tensor(f, []uint32{1, 2, 1, d}, -1)
	pos := b.SymInt(0)
	b.Inputs(xq, xk, pos)
	table := func(fn func(float64) float64) int32 {
		var data []byte
		for r := range rows {
			for j := range d {
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(fn(float64(r)*math.Pow(100, -float64(j%(d/2))/float64(d/2))))))
			}
		}
		return b.InlineConst(f, []uint32{rows, d}, data)
	}
	cos, sin := table(math.Cos), table(math.Sin)
	qo, ko := b.Tensor(f, []uint32{1, 2, 2, d}, -1), b.Tensor(f, []uint32{1, 2, 1, d}, -1)
	b.Op("et_vk.apply_rotary_emb_hf.default", xq, xk, cos, sin, pos, b.ValueList(qo, ko))
	b.Outputs(qo, ko)
	blobBytes, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := serialization.DecodeBlob(blobBytes)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := Load(ctx, device(t), blobBytes, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	full, err := Load(ctx, device(t), blobBytes, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	q, k := make([]float32, 2*2*d), make([]float32, 2*d)
	for i := range q {
		q[i] = float32(i%7) - 2.5
	}
	for i := range k {
		k[i] = 1.5 - float32(i%5)
	}
	for i, p := range []int64{0, 5, 9, 14, 15, 3, 3} {
		in := []Tensor{Float32Tensor([]int64{1, 2, 2, d}, q), Float32Tensor([]int64{1, 2, 1, d}, k), Int64Tensor([]int64{}, []int64{p})}
		before := g.RecordStats()
		got, err := g.Execute(ctx, in)
		full.mu.Lock()
		full.stale = true
		full.mu.Unlock()
		want, ferr := full.Execute(ctx, in)
		if p+2 > rows {
			if err == nil || ferr == nil {
				t.Fatalf("start_pos %d past the %d table rows: errors %v and %v, want both to fail", p, rows, err, ferr)
			}
			continue
		}
		if err != nil || ferr != nil {
			t.Fatalf("start_pos %d: %v / re-recorded: %v", p, err, ferr)
		}
		st := g.RecordStats()
		if i > 0 && p != 3 && (st.Rerecords != before.Rerecords || st.Refreshes != before.Refreshes+1) {
			t.Errorf("start_pos %d: record stats %+v after %+v, want one refresh more", p, st, before)
		}
		var refIn []*reference.Tensor
		for _, x := range in {
			rt, err := reference.Decode(x.DType, x.Shape, x.Data)
			if err != nil {
				t.Fatal(err)
			}
			refIn = append(refIn, rt)
		}
		ref, err := reference.Run(blob, nil, refIn)
		if err != nil {
			t.Fatal(err)
		}
		for j := range got {
			if !bytes.Equal(got[j].Data, want[j].Data) {
				t.Errorf("start_pos %d: output %d differs from the re-recorded graph's", p, j)
			}
			vs, err := got[j].Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for e, v := range vs {
				if math.Abs(float64(v)-ref[j].V[e]) > 1e-5 {
					t.Fatalf("start_pos %d: output %d element %d = %v, reference %v", p, j, e, v, ref[j].V[e])
				}
			}
		}
	}
}

// TestPrepackAfterHostRead: an et_vk.prepack that comes after the
// select_as_symint reading an input still runs at load (the read gets a
// placeholder there), so the first Execute finds its output written.
func TestPrepackAfterHostRead(t *testing.T) {
	f := serialization.Float32
	for _, plan := range []string{"dedicated", "exporter"} {
		b := serialization.NewBuilder()
		pos := b.Tensor(serialization.Int32, []uint32{1}, -1)
		p := b.SymInt(0)
		b.Op("et_vk.select_as_symint.default", pos, b.Int(0), b.Int(0), p)
		data := make([]byte, 0, 8*4)
		for r := range 8 {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(r)))
		}
		c := b.InlineConst(f, []uint32{8}, data)
		table := b.Tensor(f, []uint32{8}, -1)
		b.Op("et_vk.prepack.default", c, table)
		end := b.SymInt(0)
		b.Op("add", p, b.Int(2), end)
		rows := b.Tensor(f, []uint32{2}, -1)
		b.Op("aten.slice_copy.Tensor", table, b.Int(0), p, end, b.Int(1), rows)
		out := b.Tensor(f, []uint32{2}, -1)
		b.Op("aten.neg.default", rows, out)
		b.Inputs(pos)
		b.Outputs(out)
		if plan == "exporter" {
			memplan.PlanLikeExporter(b.Graph())
		} else {
			memplan.PlanDedicated(b.Graph())
		}
		blob, err := b.Blob()
		if err != nil {
			t.Fatal(err)
		}
		g, err := Load(context.Background(), device(t), blob, Options{})
		if err != nil {
			t.Fatalf("%s: %v", plan, err)
		}
		for _, at := range []int32{3, 5, 0} {
			res, err := g.Execute(context.Background(), []Tensor{Int32Tensor([]int64{1}, []int32{at})})
			if err != nil {
				t.Fatalf("%s: input_pos %d: %v", plan, at, err)
			}
			got, _ := res[0].Float32s()
			if want := []float32{-float32(at), -float32(at + 1)}; !slices.Equal(got, want) {
				t.Errorf("%s: input_pos %d: got %v, want %v", plan, at, got, want)
			}
		}
		g.Close()
	}
}
