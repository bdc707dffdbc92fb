package serialization

import "fmt"

// NamedData looks up constant bytes by key. *NamedDataMap implements it; a
// runtime may supply its own (for example one that loads .ptd shards lazily).
type NamedData interface {
	Get(key string) ([]byte, bool)
}

// TensorNumel returns the number of elements of a tensor with the given
// dims (1 for a scalar with no dims). Dims come from an untrusted file, so
// the product is overflow-checked and capped at MaxTensorBytes elements.
func TensorNumel(dims []uint32) (int64, error) {
	if len(dims) > MaxTensorDims {
		return 0, formatErr(-1, ErrLimit, len(dims), "tensor has %d dims, limit %d", len(dims), MaxTensorDims)
	}
	n := int64(1)
	for _, d := range dims {
		if d == 0 {
			return 0, nil
		}
		// n <= MaxTensorBytes < 2^41 and d < 2^32, so compare by division
		// rather than multiplying first.
		if int64(d) > MaxTensorBytes/n {
			return 0, formatErr(-1, ErrLimit, dims, "tensor element count exceeds %d", int64(MaxTensorBytes))
		}
		n *= int64(d)
	}
	return n, nil
}

// TensorNBytes returns numel × element size for t, overflow-checked and
// capped at MaxTensorBytes. The data type must be concrete (not UNSET).
func TensorNBytes(t *Tensor) (int64, error) {
	if t == nil {
		return 0, fmt.Errorf("serialization: TensorNBytes of nil tensor")
	}
	es := int64(t.DataType.Size())
	if es == 0 {
		return 0, formatErr(-1, ErrBadDataType, t.DataType, "tensor has no element size")
	}
	n, err := TensorNumel(t.Dims)
	if err != nil {
		return 0, err
	}
	if n > MaxTensorBytes/es {
		return 0, formatErr(-1, ErrLimit, t.Dims, "tensor byte size exceeds %d", int64(MaxTensorBytes))
	}
	return n * es, nil
}

// constant returns the VkBytes entry for t, which must be a constant.
func (b *Blob) constant(t *Tensor) (Bytes, error) {
	if t == nil || !t.IsConstant() {
		return Bytes{}, fmt.Errorf("serialization: tensor is not a constant")
	}
	if b.Graph == nil || int(t.ConstantID) >= len(b.Graph.Constants) {
		n := 0
		if b.Graph != nil {
			n = len(b.Graph.Constants)
		}
		return Bytes{}, formatErr(-1, ErrBadIndex, t.ConstantID, "constant_id out of range [0,%d)", n)
	}
	return b.Graph.Constants[t.ConstantID], nil
}

// ConstantBytes returns the inline bytes of constant tensor t: exactly
// TensorNBytes(t) bytes at the entry's offset in the constant region, as a
// sub-slice of Blob.Constants. Like the upstream runtimes it sizes the data
// from dims and element size (VkBytes.length is not trusted) and checks that
// the offset is inside the region and the bytes fit. A named constant yields
// an error wrapping ErrNamedConstant; use ResolveConstant for those.
func (b *Blob) ConstantBytes(t *Tensor) ([]byte, error) {
	c, err := b.constant(t)
	if err != nil {
		return nil, err
	}
	if c.IsNamed() {
		return nil, fmt.Errorf("serialization: constant %d is named data %q: %w", t.ConstantID, c.NamedKey, ErrNamedConstant)
	}
	nb, err := TensorNBytes(t)
	if err != nil {
		return nil, err
	}
	region := uint64(len(b.Constants))
	if nb == 0 {
		// A zero-element tensor needs no bytes; the exporter gives it an
		// inline entry of length 0 whose offset may equal the region end.
		return b.Constants[:0:0], nil
	}
	if c.Offset >= region {
		return nil, formatErr(-1, ErrBadConstant, c.Offset, "constant %d: offset outside the %d-byte constant region", t.ConstantID, region)
	}
	if uint64(nb) > region-c.Offset {
		return nil, formatErr(-1, ErrBadConstant, nb, "constant %d: %d bytes at offset %d overrun the %d-byte constant region", t.ConstantID, nb, c.Offset, region)
	}
	end := c.Offset + uint64(nb)
	return b.Constants[c.Offset:end:end], nil
}

// ResolveConstant returns the bytes of constant tensor t from wherever they
// live: the blob's constant region (see ConstantBytes) or, for a named
// constant, named (which may be nil when the program has none). Named data
// must hold at least TensorNBytes(t) bytes; the result is trimmed to that.
// A key that named lacks yields an error wrapping ErrMissingKey.
func (b *Blob) ResolveConstant(t *Tensor, named NamedData) ([]byte, error) {
	c, err := b.constant(t)
	if err != nil {
		return nil, err
	}
	if !c.IsNamed() {
		return b.ConstantBytes(t)
	}
	nb, err := TensorNBytes(t)
	if err != nil {
		return nil, err
	}
	var data []byte
	ok := false
	if named != nil {
		data, ok = named.Get(c.NamedKey)
	}
	if !ok {
		return nil, formatErr(-1, ErrMissingKey, c.NamedKey, "constant %d: named data key not found", t.ConstantID)
	}
	if int64(len(data)) < nb {
		return nil, formatErr(-1, ErrBadConstant, len(data), "constant %d: named data %q holds %d bytes, tensor needs %d", t.ConstantID, c.NamedKey, len(data), nb)
	}
	return data[:nb:nb], nil
}
