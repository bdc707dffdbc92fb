package models

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// checkpoint writes cfg's random weights as a llama2.c checkpoint, with
// the classifier shared with the embedding when shared is set.
func checkpoint(t testing.TB, cfg LlamaConfig, shared bool) ([]byte, *LlamaWeights) {
	t.Helper()
	w := RandomLlamaWeights(cfg)
	if shared {
		w.Output = w.Embedding
	}
	var buf bytes.Buffer
	if err := WriteLlama2C(&buf, cfg, w); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w
}

// TestImportLlama2C: the program ImportLlama2C writes has export_llama's
// delegate call (int64 tokens [1, MaxTokens] and input_pos [1], float32
// logits), NewLlama's ops, no two equal scalars, every weight in the .ptd
// under the SHA-256 of its bytes, and computes on the reference
// interpreter exactly what NewLlama's graph computes for the same
// weights; float32 and 4-bit, shared and separate classifiers.
func TestImportLlama2C(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		shared bool
		q4     int64
	}{{false, 0}, {true, 0}, {false, 8}, {true, 16}} {
		t.Run(fmt.Sprintf("shared=%v,q4=%d", tc.shared, tc.q4), func(t *testing.T) {
			cfg := testLlama
			cfg.MaxTokens = 1
			ckpt, w := checkpoint(t, cfg, tc.shared)
			imp, err := ImportLlama2C(ctx, ckpt, ImportOptions{Q4Group: tc.q4, MaxTokens: 4})
			if err != nil {
				t.Fatal(err)
			}
			want := cfg
			want.MaxTokens, want.Q4Group, want.Seed = 4, tc.q4, 0
			if imp.Cfg != want || imp.SeqLen != cfg.MaxSeq || imp.SharedClassifier != tc.shared {
				t.Fatalf("imported %+v (seq_len %d, shared %v), want %+v", imp.Cfg, imp.SeqLen, imp.SharedClassifier, want)
			}
			if params := cfg.Params() - map[bool]int64{true: cfg.Vocab * cfg.Dim}[tc.shared]; imp.Params != params {
				t.Errorf("%d params, want %d", imp.Params, params)
			}

			prog, err := serialization.ParseProgram(imp.PTE)
			if err != nil {
				t.Fatal(err)
			}
			if prog.NamedData.Len() != 0 {
				t.Errorf("the .pte holds %d named tensors; every weight belongs in the .ptd", prog.NamedData.Len())
			}
			io, err := prog.DelegateIO(serialization.VulkanBackendID)
			if err != nil {
				t.Fatal(err)
			}
			type arg struct {
				st    int8
				sizes string
			}
			var got []arg
			for _, a := range io {
				got = append(got, arg{a.ScalarType, fmt.Sprint(a.Sizes)})
			}
			wantIO := []arg{{serialization.ScalarTypeLong, "[1 4]"}, {serialization.ScalarTypeLong, "[1]"},
				{serialization.ScalarTypeFloat, fmt.Sprintf("[1 %d]", cfg.Vocab)}}
			if !slices.Equal(got, wantIO) {
				t.Errorf("delegate call %v, want %v", got, wantIO)
			}
			raw, err := prog.DelegateBlob(serialization.VulkanBackendID)
			if err != nil {
				t.Fatal(err)
			}
			blob, err := serialization.DecodeBlob(raw)
			if err != nil {
				t.Fatal(err)
			}
			named, err := serialization.ParseFlatTensor(imp.PTD)
			if err != nil {
				t.Fatal(err)
			}

			l, err := NewLlama(want, w)
			if err != nil {
				t.Fatal(err)
			}
			var ops []string
			for _, op := range blob.Graph.Chain {
				ops = append(ops, op.Name)
			}
			var wantOps []string
			for _, op := range l.B.Graph().Chain {
				wantOps = append(wantOps, op.Name)
			}
			if !slices.Equal(ops, wantOps) {
				t.Errorf("ops %v, want NewLlama's %v", ops, wantOps)
			}
			if n := strings.Count(strings.Join(ops, " "), "linear_q4gsw"); tc.q4 > 0 && n != 7*int(cfg.Layers)+1 {
				t.Errorf("%d linear_q4gsw ops, want every linear's %d", n, 7*cfg.Layers+1)
			}
			if dup := duplicateScalars(blob.Graph.Values); dup != "" {
				t.Errorf("scalars not deduplicated: %s", dup)
			}
			for _, c := range blob.Graph.Constants {
				data, ok := named.Get(c.NamedKey)
				if !c.IsNamed() || !ok {
					t.Fatalf("constant %+v is not named data of the .ptd", c)
				}
				if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != c.NamedKey || uint64(len(data)) != c.Length {
					t.Fatalf("key %s holds %d bytes whose SHA-256 is %x", c.NamedKey, len(data), sum)
				}
			}

			// A 3-token prompt on the reference interpreter, the caches
			// starting from the .ptd's zeros.
			tok := reference.New(serialization.Int32, []int64{1, 3})
			copy(tok.V, []float64{1, 7, 30})
			pos := reference.New(serialization.Int64, []int64{1})
			outs, err := reference.Run(blob, named, []*reference.Tensor{tok, pos})
			if err != nil {
				t.Fatal(err)
			}
			ref := l.NewReference()
			wantLogits, err := ref.Step([]int32{1, 7, 30}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 1 || !slices.Equal(outs[0].V, wantLogits.V) || !slices.Equal(outs[0].Shape, wantLogits.Shape) {
				t.Fatalf("the imported graph's logits differ from NewLlama's")
			}
		})
	}
}

// duplicateScalars describes the first Int, Double or Bool value equal to
// an earlier one (1 and 1.0 count as equal, true and 1 do not), "" when
// there is none.
func duplicateScalars(values []serialization.Value) string {
	seen := map[string]int{}
	for i, v := range values {
		var k string
		switch v.Kind {
		case serialization.KindInt:
			k = fmt.Sprint(float64(v.Int))
		case serialization.KindDouble:
			k = fmt.Sprint(v.Double)
		case serialization.KindBool:
			k = fmt.Sprint(v.Bool)
		default:
			continue
		}
		if j, ok := seen[k]; ok {
			return fmt.Sprintf("values %d and %d are both %s", j, i, k)
		}
		seen[k] = i
	}
	return ""
}

// TestDedupScalars: equal numbers become the first of them (Int 1 and
// Double 1.0 are one; true stays apart from 1; -0.0 is 0), references in
// op arguments, ValueLists, inputs and outputs follow, and Nulls, strings,
// lists, SymInts and NaNs are left alone.
func TestDedupScalars(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(2), -1)         // 0
	one := b.Int(1)                                           // 1
	oneF := b.Double(1)                                       // 2: -> 1
	yes := b.Bool(true)                                       // 3
	null1, null2 := b.Null(), b.Null()                        // 4, 5
	half := b.Double(0.5)                                     // 6
	yes2 := b.Bool(true)                                      // 7: -> 3
	s := b.String("none")                                     // 8
	nan1, nan2 := b.Double(math.NaN()), b.Double(math.NaN())  // 9, 10
	zero, negZero := b.Int(0), b.Double(math.Copysign(0, -1)) // 11, 12: -> 11
	list := b.ValueList(x, oneF, half)                        // 13
	il := b.IntList(1, 1)                                     // 14
	sym := b.SymInt(1)                                        // 15
	big1, big2 := b.Int(1<<60+1), b.Int(1<<60+1)              // 16, 17: -> 16
	y := b.Tensor(serialization.Float32, dims(2), -1)         // 18
	b.Op("op.a", x, one, oneF, yes, null1, null2, half, yes2, s, nan1, nan2, y)
	b.Op("op.b", list, il, sym, zero, negZero, big1, big2, y)
	b.Inputs(x, oneF)
	b.Outputs(y)
	g := b.Graph()
	if n := DedupScalars(g); n != 4 {
		t.Errorf("removed %d values, want 4", n)
	}
	// The kept values in order, renumbered.
	kinds := []serialization.ValueKind{serialization.KindTensor, serialization.KindInt, serialization.KindBool,
		serialization.KindNull, serialization.KindNull, serialization.KindDouble, serialization.KindString,
		serialization.KindDouble, serialization.KindDouble, serialization.KindInt, serialization.KindValueList,
		serialization.KindIntList, serialization.KindSymInt, serialization.KindInt, serialization.KindTensor}
	var got []serialization.ValueKind
	for _, v := range g.Values {
		got = append(got, v.Kind)
	}
	if !slices.Equal(got, kinds) {
		t.Fatalf("kinds %v, want %v", got, kinds)
	}
	if a := g.Chain[0].Args; !slices.Equal(a, []int32{0, 1, 1, 2, 3, 4, 5, 2, 6, 7, 8, 14}) {
		t.Errorf("op.a args %v", a)
	}
	if a := g.Chain[1].Args; !slices.Equal(a, []int32{10, 11, 12, 9, 9, 13, 13, 14}) {
		t.Errorf("op.b args %v", a)
	}
	if ids := g.Values[10].IDs; !slices.Equal(ids, []int32{0, 1, 5}) {
		t.Errorf("value list %v", ids)
	}
	if !slices.Equal(g.InputIDs, []uint32{0, 1}) || !slices.Equal(g.OutputIDs, []uint32{14}) {
		t.Errorf("inputs %v, outputs %v", g.InputIDs, g.OutputIDs)
	}
	if _, err := b.Blob(); err != nil {
		t.Errorf("the deduplicated graph does not encode: %v", err)
	}
	if n := DedupScalars(g); n != 0 {
		t.Errorf("a second pass removed %d values", n)
	}
}

// TestImportLlama2CRejects: options the checkpoint cannot take, a
// malformed checkpoint and a cancelled context, each a typed error.
func TestImportLlama2CRejects(t *testing.T) {
	cfg := testLlama // dim 32, hidden 48, seq_len 16
	ckpt, _ := checkpoint(t, cfg, false)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		data []byte
		opts ImportOptions
		want error
		msg  string
	}{
		{"q4 not dividing dim", nil, ckpt, ImportOptions{Q4Group: 24}, ErrImportOptions, "group sizes that do: 8, 16"},
		{"q4 not a multiple of 8", nil, ckpt, ImportOptions{Q4Group: 4}, ErrImportOptions, "4-bit group size 4"},
		{"negative q4", nil, ckpt, ImportOptions{Q4Group: -8}, ErrImportOptions, "4-bit group size -8"},
		{"cache past seq_len", nil, ckpt, ImportOptions{MaxSeq: 17}, ErrImportOptions, "seq_len is 16"},
		{"negative cache", nil, ckpt, ImportOptions{MaxSeq: -1}, ErrImportOptions, "-1 positions"},
		{"tokens past the cache", nil, ckpt, ImportOptions{MaxSeq: 8, MaxTokens: 9}, ErrImportOptions, "holds 8 positions"},
		{"negative tokens", nil, ckpt, ImportOptions{MaxTokens: -2}, ErrImportOptions, "-2 tokens"},
		{"truncated checkpoint", nil, ckpt[:len(ckpt)-1], ImportOptions{}, ErrLlama2C, "the header calls for"},
		{"cancelled", cancelled, ckpt, ImportOptions{}, context.Canceled, "import"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			_, err := ImportLlama2C(ctx, tc.data, tc.opts)
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.msg) {
				t.Fatalf("error %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
		})
	}
	// The defaults: the checkpoint's seq_len, and 32 tokens per Execute
	// unless the cache is shorter.
	imp, err := ImportLlama2C(context.Background(), ckpt, ImportOptions{MaxSeq: 12})
	if err != nil || imp.Cfg.MaxSeq != 12 || imp.Cfg.MaxTokens != 12 {
		t.Fatalf("MaxSeq 12: %+v, %v", imp, err)
	}
}

// TestReadLlama2CVersion: llama2.c's version-1 and -2 exports (magic
// "ak42", then the version) are refused as such.
func TestReadLlama2CVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"version 1", versioned(1, 256), "version 1"},
		{"version 2", versioned(2, 256), "version 2"},
		{"magic alone", versioned(0, 0)[:4], "unknown version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadLlama2C(tc.data)
			if !errors.Is(err, ErrLlama2C) || !errors.Is(err, ErrLlama2CVersion) || !strings.Contains(fmt.Sprint(err), tc.msg) {
				t.Fatalf("error %v, want ErrLlama2CVersion naming %q", err, tc.msg)
			}
		})
	}
}

// versioned returns the start of a llama2.c export of the given version:
// the magic, the version and the stories15M header, padded to size.
func versioned(version int32, size int) []byte {
	b := binary.LittleEndian.AppendUint32(nil, llama2cMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(version))
	for _, v := range []int32{288, 768, 6, 6, 6, 32000, 256} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return append(b, make([]byte, max(0, size-len(b)))...)
}

// FuzzReadLlama2C: any bytes give an error wrapping ErrLlama2C or weights
// of exactly the sizes the returned config calls for, never a panic.
func FuzzReadLlama2C(f *testing.F) {
	cfg := LlamaConfig{Dim: 8, Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Vocab: 6, MaxSeq: 4, MaxTokens: 1, Eps: 1e-5, RopeTheta: 10000, Seed: 1}
	sep, _ := checkpoint(f, cfg, false)
	shared, _ := checkpoint(f, cfg, true)
	f.Add(sep)
	f.Add(shared)
	f.Add(sep[:llama2cHeader])
	f.Add(versioned(1, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, w, err := ReadLlama2C(data)
		if err != nil {
			if !errors.Is(err, ErrLlama2C) {
				t.Fatalf("error %v does not wrap ErrLlama2C", err)
			}
			return
		}
		if err := w.check(cfg); err != nil {
			t.Fatalf("read weights that do not fit the config: %v", err)
		}
	})
}
