package llm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
)

// testPieces is a tiny Llama-2-shaped vocabulary: <unk>, BOS, EOS, the 256
// byte pieces, then merges with their scores (a higher score merges
// first). sp spells the space as SentencePiece does (▁).
func testPieces(sp bool) (pieces []string, scores []float32) {
	pieces = []string{"<unk>", "<s>", "</s>"}
	scores = []float32{0, 0, 0}
	for b := range 256 {
		pieces = append(pieces, fmt.Sprintf("<0x%02X>", b))
		scores = append(scores, 0)
	}
	merges := []struct {
		p string
		s float32
	}{{" ", 0}, {"a", 0}, {"b", 0}, {" a", -1}, {"ab", -2}, {" ab", -3}, {"c", 0}, {"bc", -0.5}, {"    ", -10}}
	for _, m := range merges {
		p := m.p
		if sp {
			p = strings.ReplaceAll(p, " ", "▁")
		}
		pieces = append(pieces, p)
		scores = append(scores, m.s)
	}
	return pieces, scores
}

// pieceID returns the id of piece p in testPieces.
func pieceID(t *testing.T, p string, sp bool) int32 {
	t.Helper()
	pieces, _ := testPieces(sp)
	i := slices.Index(pieces, p)
	if i < 0 {
		t.Fatalf("no piece %q", p)
	}
	return int32(i)
}

func writeLlama2CTokenizer(pieces []string, scores []float32) []byte {
	maxLen := 0
	for _, p := range pieces {
		maxLen = max(maxLen, len(p))
	}
	b := binary.LittleEndian.AppendUint32(nil, uint32(maxLen))
	for i, p := range pieces {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(scores[i]))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// TestLlama2CTokenizer encodes with run.c's rules (dummy prefix, UTF-8
// characters or byte fallback, best-score merges first) and decodes back.
func TestLlama2CTokenizer(t *testing.T) {
	tk, err := llm.ParseLlama2CTokenizer(writeLlama2CTokenizer(testPieces(false)))
	if err != nil {
		t.Fatal(err)
	}
	id := func(p string) int32 { return pieceID(t, p, false) }
	for _, tc := range []struct {
		text string
		bos  bool
		want []int32
	}{
		{"", true, []int32{1}},
		{"", false, nil},
		// " ab": " a" (-1) merges before "ab" (-2), then " ab".
		{"ab", true, []int32{1, id(" ab")}},
		// " abc": " a" first, then "bc" (-0.5) beats " ab" (-3).
		{"abc", false, []int32{id(" a"), id("bc")}},
		{"b a", false, []int32{id(" "), id("b"), id(" a")}},
		// é has no piece: its two UTF-8 bytes fall back to <0xC3> <0xA9>.
		{"é", false, []int32{id(" "), 0xC3 + 3, 0xA9 + 3}},
	} {
		got, err := tk.Encode(tc.text, tc.bos)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q, %v) = %v, want %v", tc.text, tc.bos, got, tc.want)
		}
		var sb strings.Builder
		prev := int32(-1)
		for _, tok := range got {
			sb.WriteString(tk.Decode(prev, tok))
			prev = tok
		}
		// BOS decodes to its piece; the text after it loses the dummy
		// prefix's space.
		want := tc.text
		if tc.bos {
			want = "<s>" + tc.text
		} else if tc.text != "" {
			want = " " + tc.text
		}
		if sb.String() != want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", tc.text, sb.String(), want)
		}
	}
	if tk.VocabSize() != 259+9 || tk.BOS() != 1 || tk.EOS() != 2 {
		t.Fatalf("VocabSize %d BOS %d EOS %d", tk.VocabSize(), tk.BOS(), tk.EOS())
	}
	if got := tk.Decode(1, 9999); got != "" {
		t.Fatalf("an id outside the vocabulary decodes to %q", got)
	}

	// The tokenizer run.c takes for the models here ("<i>" pieces).
	var buf bytes.Buffer
	if err := models.WriteLlama2CTokenizer(&buf, 512); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.bin")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err = llm.LoadLlama2CTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	if tk.VocabSize() != 512 || tk.Decode(1, 300) != "<300>" {
		t.Fatalf("VocabSize %d, piece 300 %q", tk.VocabSize(), tk.Decode(1, 300))
	}
	if got, err := tk.Encode("\xff", false); err != nil || !slices.Equal(got, []int32{0xff + 3}) {
		t.Fatalf("byte 0xff with 512 <i> pieces: %v, %v; want its byte-fallback id as run.c", got, err)
	}
	// 40 pieces have no byte-fallback id for 0xff.
	buf.Reset()
	if err := models.WriteLlama2CTokenizer(&buf, 40); err != nil {
		t.Fatal(err)
	}
	if tk, err = llm.ParseLlama2CTokenizer(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Encode("\xff", false); !errors.Is(err, llm.ErrTokenizer) {
		t.Fatalf("byte 0xff with 40 pieces: %v", err)
	}
}

func TestLlama2CTokenizerErrors(t *testing.T) {
	good := writeLlama2CTokenizer(testPieces(false))
	bad := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"zero-max-len", bad(func(b []byte) []byte { binary.LittleEndian.PutUint32(b, 0); return b })},
		{"truncated-entry", good[:len(good)-1]},
		{"truncated-header", good[:len(good)-len("bc")-6]},
		{"long-piece", bad(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 1000); return b })},
		{"two-pieces", writeLlama2CTokenizer([]string{"<unk>", "<s>"}, []float32{0, 0})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := llm.ParseLlama2CTokenizer(tc.data); !errors.Is(err, llm.ErrTokenizer) {
				t.Fatalf("got %v, want ErrTokenizer", err)
			}
		})
	}
	if _, err := llm.LoadLlama2CTokenizer(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// spModel writes a SentencePiece ModelProto: BPE with byte fallback, the
// test pieces, and a normalizer spec with the given options (none at all
// when norm is false).
func spModel(norm, dummyPrefix, trim bool) []byte {
	pieces, scores := testPieces(true)
	return spModelOf(pieces, scores, norm, dummyPrefix, trim)
}

func spModelOf(pieces []string, scores []float32, norm, dummyPrefix, trim bool) []byte {
	var b []byte
	for i, p := range pieces {
		typ := uint64(1) // NORMAL
		switch {
		case i == 0:
			typ = 2 // UNKNOWN
		case i < 3:
			typ = 3 // CONTROL
		case i < 259:
			typ = 6 // BYTE
		}
		var m []byte
		m = protowire.AppendTag(m, 1, protowire.BytesType)
		m = protowire.AppendString(m, p)
		m = protowire.AppendTag(m, 2, protowire.Fixed32Type)
		m = protowire.AppendFixed32(m, math.Float32bits(scores[i]))
		m = protowire.AppendTag(m, 3, protowire.VarintType)
		m = protowire.AppendVarint(m, typ)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	var ts []byte
	ts = protowire.AppendTag(ts, 3, protowire.VarintType)
	ts = protowire.AppendVarint(ts, 2) // BPE
	ts = protowire.AppendTag(ts, 35, protowire.VarintType)
	ts = protowire.AppendVarint(ts, 1) // byte_fallback
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, ts)
	if norm {
		var ns []byte
		ns = protowire.AppendTag(ns, 1, protowire.BytesType)
		ns = protowire.AppendString(ns, "identity")
		ns = protowire.AppendTag(ns, 3, protowire.VarintType)
		ns = protowire.AppendVarint(ns, protowire.EncodeBool(dummyPrefix))
		ns = protowire.AppendTag(ns, 4, protowire.VarintType)
		ns = protowire.AppendVarint(ns, protowire.EncodeBool(trim))
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, ns)
	}
	return b
}

// TestSentencePiece encodes and decodes through go-sentencepiece with a
// Llama-2-style model (dummy prefix, no whitespace trimming) built here,
// and with the normalizer defaults (prefix and trimming).
func TestSentencePiece(t *testing.T) {
	tk, err := llm.ParseSentencePiece(spModel(true, true, false))
	if err != nil {
		t.Fatal(err)
	}
	id := func(p string) int32 { return pieceID(t, p, true) }
	if tk.BOS() != 1 || tk.EOS() != 2 || tk.VocabSize() != 259+9 {
		t.Fatalf("BOS %d EOS %d VocabSize %d", tk.BOS(), tk.EOS(), tk.VocabSize())
	}
	for _, tc := range []struct {
		text string
		want []int32
	}{
		{"ab", []int32{1, id("▁ab")}},
		{"abc", []int32{1, id("▁a"), id("bc")}},
		{"b  a", []int32{1, id("▁"), id("b"), id("▁"), id("▁a")}},
		{"é", []int32{1, id("▁"), 0xC3 + 3, 0xA9 + 3}},
	} {
		got, err := tk.Encode(tc.text, true)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
		var sb strings.Builder
		prev := int32(-1)
		for _, tok := range got {
			sb.WriteString(tk.Decode(prev, tok))
			prev = tok
		}
		if sb.String() != tc.text {
			t.Errorf("Decode(Encode(%q)) = %q", tc.text, sb.String())
		}
	}
	// Defaults: no normalizer spec means add_dummy_prefix and
	// remove_extra_whitespaces, both applied before the library encodes.
	for _, data := range [][]byte{spModel(false, false, false), spModel(true, true, true)} {
		tk, err := llm.ParseSentencePiece(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tk.Encode("  b   a ", false)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int32{id("▁"), id("b"), id("▁a")}; !slices.Equal(got, want) {
			t.Errorf("trimmed: %v, want %v", got, want)
		}
	}
	// Without the 12-byte "▁▁▁▁" piece the library overruns a buffer on
	// "▁" + "▁": an error, not a panic.
	pieces, scores := testPieces(true)
	short, err := llm.ParseSentencePiece(spModelOf(pieces[:len(pieces)-1], scores[:len(pieces)-1], true, true, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := short.Encode("b  a", false); !errors.Is(err, llm.ErrTokenizer) {
		t.Errorf("a text go-sentencepiece panics on: %v", err)
	}
	for _, data := range [][]byte{nil, {0xff, 0xff}, spModel(true, true, false)[:100]} {
		if _, err := llm.ParseSentencePiece(data); !errors.Is(err, llm.ErrTokenizer) {
			t.Errorf("bad model of %d bytes: %v, want ErrTokenizer", len(data), err)
		}
	}
}
