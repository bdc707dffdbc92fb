package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// table writes aligned columns: each row's cells are separated by at least
// two spaces. Rows are buffered until flush.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

func (t *table) row(cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = fmt.Sprint(c)
	}
	// tabwriter aligns cells terminated by a tab; the last cell of a row is
	// not, so trailing spaces never appear.
	fmt.Fprintln(t.tw, strings.Join(s, "\t"))
}

func (t *table) flush() { t.tw.Flush() }

// maxListItems caps how many items of a list value inspect prints.
const maxListItems = 16

// list formats items as "[a b c]", eliding the middle of long lists.
func list[T any](items []T) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, it := range items {
		if len(items) > maxListItems && i == maxListItems-2 {
			fmt.Fprintf(&b, " ... (%d items) ...", len(items))
			// Skip to the last item.
			fmt.Fprintf(&b, " %v", items[len(items)-1])
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, it)
	}
	b.WriteByte(']')
	return b.String()
}
