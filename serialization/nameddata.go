package serialization

import (
	"bytes"
	"fmt"
	"slices"
)

// NamedDataMap maps named-data keys to their bytes, merging what a .pte's
// Program.named_data and any .ptd files provide, as the runtime's
// NamedDataMap does. Values are sub-slices of the parsed files, never copies,
// so they stay valid only as long as those bytes (for a MappedFile, until
// Close). The zero value is an empty map ready to use; a nil *NamedDataMap
// reads as empty.
type NamedDataMap struct {
	m map[string][]byte
}

// NewNamedDataMap returns an empty map.
func NewNamedDataMap() *NamedDataMap { return &NamedDataMap{m: map[string][]byte{}} }

// Add stores b under key. Adding a key again is fine when the bytes are
// identical (the exporter keys constants by SHA-256, so shards may repeat
// one); different bytes under one key are an error wrapping ErrDuplicateKey.
func (m *NamedDataMap) Add(key string, b []byte) error {
	if m.m == nil {
		m.m = map[string][]byte{}
	}
	if old, ok := m.m[key]; ok {
		if !bytes.Equal(old, b) {
			return fmt.Errorf("serialization: named data key %q added twice with different bytes (%d and %d bytes): %w", key, len(old), len(b), ErrDuplicateKey)
		}
		return nil
	}
	m.m[key] = b
	return nil
}

// Merge adds every entry of other to m. It checks all keys first, so on
// error m is unchanged.
func (m *NamedDataMap) Merge(other *NamedDataMap) error {
	if other == nil {
		return nil
	}
	for _, k := range other.Keys() {
		if old, ok := m.m[k]; ok && !bytes.Equal(old, other.m[k]) {
			return fmt.Errorf("serialization: merging named data: key %q has different bytes (%d and %d bytes): %w", k, len(old), len(other.m[k]), ErrDuplicateKey)
		}
	}
	if m.m == nil {
		m.m = map[string][]byte{}
	}
	for k, b := range other.m {
		if _, ok := m.m[k]; !ok {
			m.m[k] = b
		}
	}
	return nil
}

// Get returns the bytes stored under key.
func (m *NamedDataMap) Get(key string) ([]byte, bool) {
	if m == nil {
		return nil, false
	}
	b, ok := m.m[key]
	return b, ok
}

// Keys returns all keys, sorted.
func (m *NamedDataMap) Keys() []string {
	if m == nil {
		return nil
	}
	keys := make([]string, 0, len(m.m))
	for k := range m.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Len returns the number of keys.
func (m *NamedDataMap) Len() int {
	if m == nil {
		return 0
	}
	return len(m.m)
}
