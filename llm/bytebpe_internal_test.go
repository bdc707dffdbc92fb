package llm

import (
	"slices"
	"testing"
)

// tableRanker merges the pairs of a table: ids 0..3 are symbols, and
// each merge (a, b) makes id 4 + its index, with rank = its position in
// ranks.
type tableRanker struct {
	pairs [][2]int32
	ranks []int32
}

func (r tableRanker) pairRank(left, right int32) (rank, merged int32, ok bool) {
	for i, p := range r.pairs {
		if p == [2]int32{left, right} {
			return r.ranks[i], int32(4 + i), true
		}
	}
	return 0, 0, false
}

// naiveMerge is the textbook loop: find the lowest-ranked adjacent pair
// (the leftmost of equals), merge it, start over.
func naiveMerge(r mergeRanker, ids []int32) []int32 {
	ids = slices.Clone(ids)
	for {
		best, bestRank, bestID := -1, int32(0), int32(0)
		for i := 0; i+1 < len(ids); i++ {
			if rank, m, ok := r.pairRank(ids[i], ids[i+1]); ok && (best < 0 || rank < bestRank) {
				best, bestRank, bestID = i, rank, m
			}
		}
		if best < 0 {
			return ids
		}
		ids[best] = bestID
		ids = slices.Delete(ids, best+1, best+2)
	}
}

// FuzzBPEMerge checks the heap-ordered merge against naiveMerge on words
// of four symbols and merge tables drawn from the fuzzer's bytes (equal
// ranks included, to exercise the leftmost-first tie break).
func FuzzBPEMerge(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 1, 1, 4, 4, 2}, []byte{0, 0, 0, 0, 1, 0, 1, 2, 3})
	f.Add([]byte{0, 1, 0, 4, 1, 5, 2}, []byte{1, 0, 1, 0, 1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, table, word []byte) {
		var r tableRanker
		for i := 0; i+2 < len(table) && len(r.pairs) < 16; i += 3 {
			// Pairs may name the symbols and any merge made so far.
			n := byte(4 + len(r.pairs))
			r.pairs = append(r.pairs, [2]int32{int32(table[i] % n), int32(table[i+1] % n)})
			r.ranks = append(r.ranks, int32(table[i+2]%8))
		}
		if len(word) > 64 {
			word = word[:64]
		}
		ids := make([]int32, len(word))
		for i, b := range word {
			ids[i] = int32(b % 4)
		}
		var sc bpeScratch
		got := sc.merge(r, ids, nil)
		if want := naiveMerge(r, ids); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("merge(%v) with %v ranks %v = %v, the naive loop gives %v", ids, r.pairs, r.ranks, got, want)
		}
	})
}

// TestSplitLookahead checks the hand-written \s+(?!\S) against the
// backtracking it stands for, on runs of whitespace before a letter, a
// newline and the end: the lookahead alternative gives all but the last
// whitespace character back when the run is followed by a non-space and
// longer than one character.
func TestSplitLookahead(t *testing.T) {
	re, err := compileSplitRegex(llama3Pattern)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"a  b", []string{"a", " ", " b"}},
		{"a b", []string{"a", " b"}},
		{"a \u3000b", []string{"a", " ", "\u3000b"}},
		{"a   ", []string{"a", "   "}},
		{"a  1", []string{"a", " ", " ", "1"}},
		{"  \n x", []string{"  \n", " x"}},
		{"x\t\t!", []string{"x", "\t", "\t", "!"}}, // only a space may lead punctuation
		{"\u00a0\u00a0x", []string{"\u00a0", "\u00a0x"}},
		{"1234567", []string{"123", "456", "7"}},
		{"I'M you'RE it'ſ", []string{"I", "'M", " you", "'RE", " it", "'ſ"}},
	} {
		var got []string
		re.split(tc.text, false, func(p string) { got = append(got, p) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("split(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}
