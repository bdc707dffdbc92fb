package serialization

import (
	"fmt"
	"math"
	"os"
)

// MappedFile is a read-only view of a whole file, memory-mapped where the
// platform supports it so that multi-gigabyte .pte/.ptd files cost no copy
// and segments can be handed out as sub-slices. Everything parsed from
// Bytes (a Program, a NamedDataMap, a Blob) points into the mapping and
// must not be used after Close: the memory is unmapped and any access
// faults. Modifying or truncating the file while it is mapped is likewise
// unsafe (SIGBUS on unix).
type MappedFile struct {
	data   []byte
	mapped bool // data came from mmap and must be unmapped
}

// MapFile maps the file at path read-only. An empty file yields empty Bytes
// without calling mmap (which rejects zero lengths).
func MapFile(path string) (*MappedFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("serialization: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("serialization: %w", err)
	}
	size := fi.Size()
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("serialization: %s is not a regular file", path)
	case size == 0:
		return &MappedFile{data: []byte{}}, nil
	case size < 0 || uint64(size) > math.MaxInt:
		return nil, fmt.Errorf("serialization: %s: size %d too large to map", path, size)
	}
	data, mapped, err := mapFile(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("serialization: mapping %s: %w", path, err)
	}
	return &MappedFile{data: data, mapped: mapped}, nil
}

// Bytes returns the file's contents; nil after Close.
func (m *MappedFile) Bytes() []byte { return m.data }

// Close unmaps the file. Calling it again is a no-op.
func (m *MappedFile) Close() error {
	data, mapped := m.data, m.mapped
	m.data, m.mapped = nil, false
	if !mapped {
		return nil
	}
	if err := unmapFile(data); err != nil {
		return fmt.Errorf("serialization: unmapping: %w", err)
	}
	return nil
}
