package llm

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// This file holds what the tiktoken and Hugging Face byte-level BPE
// tokenizers share: the merge loop, the pre-tokenizer regex (with the
// lookahead Go's regexp lacks written out by hand) and the search for
// special tokens in text.

// Caps on what a tokenizer file may declare, checked before anything is
// allocated from them.
const (
	// maxVocab caps the number of tokens (and the largest id + 1).
	maxVocab = 1 << 22
	// maxSpecialTokens caps the special (added) tokens of one file.
	maxSpecialTokens = 1 << 16
)

// mergeRanker gives the rank of merging two adjacent tokens and the id of
// the token they make; ok is false when the pair does not merge. A lower
// rank merges first.
type mergeRanker interface {
	pairRank(left, right int32) (rank, merged int32, ok bool)
}

// bpeSym is one symbol of a word being merged: a token id and its
// neighbours in the doubly linked list of live symbols (-1 at the ends).
type bpeSym struct {
	id         int32
	prev, next int32
	dead       bool
}

// bpeCand is a merge waiting in the heap: the symbol at pos with the one
// after it, which were left and right when the candidate was pushed.
type bpeCand struct {
	rank, pos, left, right, merged int32
}

// bpeHeap is a binary min-heap of candidates by (rank, pos), typed to
// avoid container/heap's boxing of every push.
type bpeHeap []bpeCand

func (h bpeHeap) less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}

func (h bpeHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *bpeHeap) push(c bpeCand) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *bpeHeap) pop() bpeCand {
	s := *h
	c := s[0]
	n := len(s) - 1
	s[0] = s[n]
	*h = s[:n]
	(*h).down(0)
	return c
}

func (h bpeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// bpeScratch is the working memory of one Encode call, reused across its
// words.
type bpeScratch struct {
	syms []bpeSym
	heap bpeHeap
}

// merge applies r's merges to the symbols ids (a word's initial tokens):
// repeatedly the adjacent pair with the lowest rank, the leftmost of
// equals, is replaced by its merged token, until no pair merges. This is
// the order of tiktoken's byte_pair_merge and of Hugging Face's BPE
// (rank, then position). A heap of candidate pairs keeps it O(n log n) in
// the word's length (a 100 KB word with no spaces included); a candidate
// whose symbols changed since it was pushed is skipped when it comes up.
// It appends the resulting ids to out.
func (s *bpeScratch) merge(r mergeRanker, ids []int32, out []int32) []int32 {
	if len(ids) < 2 {
		return append(out, ids...)
	}
	s.syms = s.syms[:0]
	for i, id := range ids {
		s.syms = append(s.syms, bpeSym{id: id, prev: int32(i - 1), next: int32(i + 1)})
	}
	s.syms[len(s.syms)-1].next = -1
	s.heap = s.heap[:0]
	for i := 0; i+1 < len(ids); i++ {
		if rank, m, ok := r.pairRank(ids[i], ids[i+1]); ok {
			s.heap = append(s.heap, bpeCand{rank, int32(i), ids[i], ids[i+1], m})
		}
	}
	s.heap.init()
	syms := s.syms
	push := func(pos int32) {
		if pos < 0 {
			return
		}
		next := syms[pos].next
		if next < 0 {
			return
		}
		if rank, m, ok := r.pairRank(syms[pos].id, syms[next].id); ok {
			s.heap.push(bpeCand{rank, pos, syms[pos].id, syms[next].id, m})
		}
	}
	for len(s.heap) > 0 {
		c := s.heap.pop()
		// A symbol's span only grows, so the same ids at pos and after it
		// mean the same spans: the candidate still stands.
		a := &syms[c.pos]
		if a.dead || a.id != c.left || a.next < 0 {
			continue
		}
		b := &syms[a.next]
		if b.id != c.right {
			continue
		}
		a.id = c.merged
		b.dead = true
		a.next = b.next
		if b.next >= 0 {
			syms[b.next].prev = c.pos
		}
		push(a.prev)
		push(c.pos)
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, syms[i].id)
	}
	return out
}

// Pre-tokenizer regexes as tiktoken and Hugging Face write them.
const (
	// llama3Pattern is Llama 3's (and cl100k_base's) split regex.
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// gpt2Pattern is GPT-2's, which Hugging Face's ByteLevel
	// pre-tokenizer applies when use_regex is set.
	gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// Unicode White_Space, which \s means in Rust's regex crate (tiktoken) and
// in Oniguruma (Hugging Face); Go's \s is ASCII only. Go's unicode.IsSpace
// is the same set.
const (
	wsClassBody = `\t\n\v\f\r\x{85}\p{Z}`
	wsClass     = `[` + wsClassBody + `]`
	nonWSClass  = `[^` + wsClassBody + `]`
)

// splitRegex is a pre-tokenizer regex translated to Go's RE2 syntax.
// Go's regexp picks the match a backtracking engine would (leftmost,
// then the first alternative that matches), as tiktoken's fancy-regex
// and Hugging Face's Oniguruma do, so one search per piece gives the same
// pieces, except for the lookahead \s+(?!\S), which RE2 cannot express:
// see split.
type splitRegex struct {
	re *regexp.Regexp
	// wsGroup is the capture group of the \s+ alternative that followed
	// \s+(?!\S) (which is left out of re), 0 when the pattern had none.
	wsGroup int
}

// compileSplitRegex translates pattern (Rust regex / Oniguruma syntax, as
// tokenizer files hold it) to Go's: \s, \S, \d and \D become their Unicode
// classes, \uXXXX becomes \x{XXXX}, and a top-level alternative
// \s+(?!\S) followed by the alternative \s+ becomes a capture group around
// that \s+ (split applies the lookahead). Other lookarounds, anchors, word
// boundaries and \w are an *UnsupportedError, as is anything Go's regexp
// does not compile.
func compileSplitRegex(pattern string) (*splitRegex, error) {
	alts, err := topLevelAlternatives(pattern)
	if err != nil {
		return nil, err
	}
	const lookahead, ws = `\s+(?!\S)`, `\s+`
	var out []string
	wsAlt := -1
	for i := 0; i < len(alts); i++ {
		a := alts[i]
		if a == lookahead {
			if wsAlt >= 0 || i+1 >= len(alts) || alts[i+1] != ws {
				return nil, &UnsupportedError{Feature: fmt.Sprintf("regex %q: \\s+(?!\\S) not followed by the alternative \\s+", pattern)}
			}
			wsAlt = len(out)
			t, _ := translateClasses(ws)
			out = append(out, "(?P<"+wsGroupName+">"+t+")")
			i++
			continue
		}
		t, err := translateRegex(a, pattern)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	joined := strings.Join(out, "|")
	re, err := regexp.Compile(joined)
	if err != nil {
		return nil, &UnsupportedError{Feature: fmt.Sprintf("regex %q: %v", pattern, err)}
	}
	s := &splitRegex{re: re}
	if wsAlt >= 0 {
		s.wsGroup = re.SubexpIndex(wsGroupName)
		if s.wsGroup <= 0 {
			return nil, &UnsupportedError{Feature: fmt.Sprintf("regex %q: a group named %s", pattern, wsGroupName)}
		}
	}
	return s, nil
}

// wsGroupName names the capture group of the \s+ alternative.
const wsGroupName = "wgdelegate_ws"

// topLevelAlternatives splits pattern at the | that are outside groups and
// character classes.
func topLevelAlternatives(pattern string) ([]string, error) {
	var alts []string
	depth, class, start := 0, false, 0
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '\\':
			i++
		case class:
			if c == ']' {
				class = false
			}
		case c == '[':
			class = true
			// A ] right after [ or [^ is a literal.
			if i+1 < len(pattern) && pattern[i+1] == '^' {
				i++
			}
			if i+1 < len(pattern) && pattern[i+1] == ']' {
				i++
			}
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return nil, &UnsupportedError{Feature: fmt.Sprintf("regex %q: unbalanced )", pattern)}
			}
		case c == '|' && depth == 0:
			alts = append(alts, pattern[start:i])
			start = i + 1
		}
	}
	if depth != 0 || class {
		return nil, &UnsupportedError{Feature: fmt.Sprintf("regex %q: unbalanced ( or [", pattern)}
	}
	return append(alts, pattern[start:]), nil
}

// translateRegex rejects what RE2 would read differently and translates
// the classes of one alternative.
func translateRegex(alt, pattern string) (string, error) {
	for _, bad := range []string{`(?=`, `(?!`, `(?<=`, `(?<!`, `(?>`, `\b`, `\B`, `\w`, `\W`, `\A`, `\z`, `\Z`, `\G`, `\h`, `\R`, `\X`, `\K`} {
		if containsEscaped(alt, bad) {
			return "", &UnsupportedError{Feature: fmt.Sprintf("regex %q: %s", pattern, bad)}
		}
	}
	if containsUnescaped(alt, '^') || containsUnescaped(alt, '$') {
		return "", &UnsupportedError{Feature: fmt.Sprintf("regex %q: anchors", pattern)}
	}
	if hasPossessive(alt) {
		return "", &UnsupportedError{Feature: fmt.Sprintf("regex %q: possessive quantifier", pattern)}
	}
	t, ok := translateClasses(alt)
	if !ok {
		return "", &UnsupportedError{Feature: fmt.Sprintf("regex %q: \\S or \\D in a character class", pattern)}
	}
	return t, nil
}

// hasPossessive reports whether s has a possessive quantifier (+, *, ?
// or {n,m} followed by +), which RE2 would read as two quantifiers.
func hasPossessive(s string) bool {
	quant, class := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case class && c == '\\':
			i++
		case class:
			class = c != ']'
		case c == '[':
			class, quant = true, false
			if i+1 < len(s) && s[i+1] == '^' {
				i++
			}
			if i+1 < len(s) && s[i+1] == ']' {
				i++
			}
		case c == '\\':
			// An escape, with its {...} argument (\p{L}, \x{41}).
			i++
			if i+1 < len(s) && s[i+1] == '{' {
				if j := strings.IndexByte(s[i:], '}'); j >= 0 {
					i += j
				}
			}
			quant = false
		case c == '+' && quant:
			return true
		case c == '+' || c == '*' || c == '?':
			// A lazy ? after a quantifier ends it.
			quant = !(c == '?' && quant)
		case c == '{':
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				quant = false
				continue
			}
			i += j
			quant = true
		default:
			quant = false
		}
	}
	return false
}

// containsEscaped reports whether s has tok where it is not itself
// escaped (tok starting with \ must start at an unescaped backslash).
func containsEscaped(s, tok string) bool {
	for i := 0; i < len(s); i++ {
		if strings.HasPrefix(s[i:], tok) {
			return true
		}
		if s[i] == '\\' {
			i++
		}
	}
	return false
}

// containsUnescaped reports whether s has c outside escapes and, for ^,
// not as the negation at the start of a character class.
func containsUnescaped(s string, c byte) bool {
	class := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case s[i] == '[' && !class:
			class = true
			if i+1 < len(s) && s[i+1] == '^' {
				i++
			}
		case s[i] == ']' && class:
			class = false
		case s[i] == c && !class:
			return true
		}
	}
	return false
}

// translateClasses rewrites \s, \S, \d, \D and \uXXXX, inside and outside
// character classes; ok is false for \S or \D inside a class, which have
// no spelling as part of an RE2 class body.
func translateClasses(s string) (_ string, ok bool) {
	var b strings.Builder
	class := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			switch {
			case c == '[' && !class:
				class = true
			case c == ']' && class:
				class = false
			}
			b.WriteByte(c)
			continue
		}
		e := s[i+1]
		i++
		switch {
		case e == 's' && class:
			b.WriteString(wsClassBody)
		case e == 's':
			b.WriteString(wsClass)
		case e == 'S' && !class:
			b.WriteString(nonWSClass)
		case e == 'd':
			b.WriteString(`\p{Nd}`)
		case e == 'D' && !class:
			b.WriteString(`\P{Nd}`)
		case e == 'u' && i+4 < len(s) && isHex4(s[i+1:i+5]):
			b.WriteString(`\x{` + s[i+1:i+5] + `}`)
			i += 4
		case (e == 'S' || e == 'D') && class:
			return "", false
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), true
}

func isHex4(s string) bool {
	for i := 0; i < 4; i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// split calls piece for each piece of text in order: the regex's matches
// and, when gaps is set, the text between them (Hugging Face's Isolated
// split keeps it; tiktoken drops it). It searches from the end of the
// last match each time, so a pattern that needs context before a match
// (anchors, lookbehind) is rejected by compileSplitRegex.
//
// The lookahead alternative \s+(?!\S), left out of the compiled regex,
// would have matched at the same position as the \s+ alternative after
// it, and the same run of whitespace, except that when the run is
// followed by a non-space it gives the last whitespace character back
// (so that " word" keeps its space); when that leaves nothing (a run of
// one), it fails and \s+ takes the run. A match of the \s+ group is
// shortened accordingly.
func (s *splitRegex) split(text string, gaps bool, piece func(string)) {
	pos, gap := 0, 0
	for pos < len(text) {
		loc := s.re.FindStringSubmatchIndex(text[pos:])
		if loc == nil {
			break
		}
		start, end := pos+loc[0], pos+loc[1]
		if end == start {
			// An empty match: the character there stays in the gap.
			if start >= len(text) {
				break
			}
			_, n := utf8.DecodeRuneInString(text[start:])
			pos = start + n
			continue
		}
		if g := s.wsGroup; g > 0 && loc[2*g] >= 0 && end < len(text) {
			_, n := utf8.DecodeLastRuneInString(text[start:end])
			if end-n > start {
				end -= n
			}
		}
		if start > gap && gaps {
			piece(text[gap:start])
		}
		piece(text[start:end])
		pos, gap = end, end
	}
	if gap < len(text) && gaps {
		piece(text[gap:])
	}
}

// specialMatcher finds special tokens in text: the leftmost occurrence,
// the longest of those starting there (Hugging Face's added-token
// matching; tiktoken's alternation of the special tokens picks the same
// for token sets where none is a prefix of another at the same position,
// as in every vocabulary read here).
type specialMatcher struct {
	ids     map[string]int32
	lengths []int // distinct lengths, longest first
	first   [256]bool
}

func newSpecialMatcher(ids map[string]int32) *specialMatcher {
	m := &specialMatcher{ids: ids}
	seen := map[int]bool{}
	for s := range ids {
		if s == "" {
			continue
		}
		m.first[s[0]] = true
		if !seen[len(s)] {
			seen[len(s)] = true
			m.lengths = append(m.lengths, len(s))
		}
	}
	slices.Sort(m.lengths)
	slices.Reverse(m.lengths)
	return m
}

// find returns the position, length and id of the first special token in
// text, or start -1.
func (m *specialMatcher) find(text string) (start, n int, id int32) {
	if m == nil || len(m.lengths) == 0 {
		return -1, 0, 0
	}
	for i := 0; i < len(text); i++ {
		if !m.first[text[i]] {
			continue
		}
		for _, l := range m.lengths {
			if i+l <= len(text) {
				if id, ok := m.ids[text[i:i+l]]; ok {
					return i, l, id
				}
			}
		}
	}
	return -1, 0, 0
}
