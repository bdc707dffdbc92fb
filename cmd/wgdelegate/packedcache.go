package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wgdelegate/wgdelegate"
)

// The packed-weight cache flag, shared by the commands that take it
// (today bench): packedCacheFlag parses it, and after the load
// warnPackedCache tells the user, in one line per problem and without
// --verbose, what went wrong with the cache and what was done instead.
// None of it fails the command: the run itself is right.

// packedCacheFlag is --packed-cache DIR.
func packedCacheFlag(dir *string) flagSpec {
	return flagSpec{names: []string{"packed-cache"}, value: true, set: func(v string) error { *dir = v; return nil }}
}

// warnPackedCache writes packedCacheWarnings for m's load to stderr.
func warnPackedCache(stderr io.Writer, m *wgdelegate.Model) {
	if m.PackedCache() == "" {
		return
	}
	for _, line := range packedCacheWarnings(m.PackedCache(), m.PackedCacheErrors(), m.PackedCacheStats()) {
		fmt.Fprintf(stderr, "wgdelegate: warning: %s\n", line)
	}
}

// packedCacheWarnings turns the cache's problems during a load into lines,
// one per kind of problem (a file that can be neither read nor written is
// one problem; so are any number of corrupt entries), each saying what
// happened instead. st says whether weights were packed at the load.
func packedCacheWarnings(dir string, errs []*wgdelegate.PackedCacheError, st wgdelegate.PackedCacheStats) []string {
	var open, save, put, read *wgdelegate.PackedCacheError
	corrupt := 0
	for _, e := range errs {
		switch e.Op {
		case wgdelegate.PackedCacheOpen:
			open = first(open, e)
		case wgdelegate.PackedCacheSave:
			save = first(save, e)
		case wgdelegate.PackedCachePut:
			put = first(put, e)
		case wgdelegate.PackedCacheRead:
			read = first(read, e)
		case wgdelegate.PackedCacheVerify:
			corrupt++
		}
	}
	prefix := "packed cache " + dir + ": "
	// kept: the weights packed at this load were saved.
	kept := st.Misses > 0 && save == nil && put == nil
	var lines []string
	switch {
	case open != nil && errors.Is(open, wgdelegate.ErrPackedCacheCorrupt):
		what := "ignored it"
		switch {
		case kept:
			what = "ignored it, packed the weights again and rewrote the file"
		case st.Misses > 0:
			what = "ignored it and packed the weights again"
		}
		lines = append(lines, fmt.Sprintf("%s%s is corrupt (%s); %s", prefix, filepath.Base(open.Path), cause(open), what))
	case open != nil && save != nil:
		why := cause(open)
		if w := cause(save); w != why {
			why += "; " + w
		}
		lines = append(lines, fmt.Sprintf("%scannot read or write (%s); the weights were packed in memory and not kept", prefix, why))
		save = nil
	case open != nil:
		what := "the weights were packed in memory"
		if kept {
			what = "the weights were packed again and the file rewritten"
		}
		lines = append(lines, fmt.Sprintf("%scannot read (%s); %s", prefix, cause(open), what))
	}
	if corrupt > 0 {
		noun, them := "weights", "them"
		if corrupt == 1 {
			noun, them = "weight", "it"
		}
		what := "packed " + them + " again"
		if kept {
			what += " and rewrote " + them
		}
		lines = append(lines, fmt.Sprintf("%s%d packed %s failed the checksum; %s", prefix, corrupt, noun, what))
	}
	if read != nil {
		lines = append(lines, fmt.Sprintf("%scannot read an entry (%s); packed it again", prefix, cause(read)))
	}
	if save != nil {
		lines = append(lines, fmt.Sprintf("%scannot write (%s); the weights were packed in memory and not kept", prefix, cause(save)))
	}
	if put != nil {
		lines = append(lines, fmt.Sprintf("%s%s; some packed weights were not kept", prefix, cause(put)))
	}
	return lines
}

func first(have, e *wgdelegate.PackedCacheError) *wgdelegate.PackedCacheError {
	if have != nil {
		return have
	}
	return e
}

// cause is the reason in a cache error, without the paths the line
// already names: "permission denied", "not a directory", or the cache's
// own words.
func cause(e *wgdelegate.PackedCacheError) string {
	var pe *fs.PathError
	if errors.As(e.Err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(e.Err, &le) {
		return le.Err.Error()
	}
	return e.Err.Error()
}
