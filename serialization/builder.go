package serialization

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// Builder assembles a Graph value by value, the way the upstream
// VkGraphBuilder does, for tests and examples. Every method that adds a value
// returns its value id (its index in Graph.Values). The builder does not
// validate what it is given (ids, data lengths), so it can also produce the
// broken graphs that rejection tests need.
type Builder struct {
	g      Graph
	inline []byte
	named  map[string][]byte
}

// NamedBlob is one named-data entry: the key a VkBytes.named_key refers to
// and the bytes stored under it.
type NamedBlob struct {
	Key  string
	Data []byte
}

// NewBuilder returns a Builder for an empty graph with version "0" and
// default storage and layout overrides, as the exporter writes.
func NewBuilder() *Builder {
	return &Builder{
		g: Graph{
			Version:              "0",
			StorageTypeOverride:  DefaultStorage,
			MemoryLayoutOverride: DefaultLayout,
		},
		named: map[string][]byte{},
	}
}

// AddValue appends v and returns its id.
func (b *Builder) AddValue(v Value) int32 {
	b.g.Values = append(b.g.Values, v)
	return int32(len(b.g.Values) - 1)
}

func newTensor(dt DataType, dims []uint32, constantID, memObjID int32) *Tensor {
	return &Tensor{
		DataType:   dt,
		Dims:       slices.Clone(dims),
		ConstantID: constantID,
		MemObjID:   memObjID,
		// The exporter always records where the tensor is staged; for
		// everything but force_fp16 that is the tensor's own dtype.
		StorageType:     DefaultStorage,
		MemoryLayout:    DefaultLayout,
		StagingDataType: dt,
	}
}

// Tensor adds a non-constant tensor (constant_id -1). memObjID >= 0 shares
// an allocation with other tensors of the same id; -1 is dedicated.
func (b *Builder) Tensor(dt DataType, dims []uint32, memObjID int32) int32 {
	return b.AddValue(Value{Kind: KindTensor, Tensor: newTensor(dt, dims, -1, memObjID)})
}

// SetStaging sets tensor id's staging_datatype, the dtype the host feeds
// or receives for a graph input or output: a force_fp16 export writes
// FLOAT16 tensors staged as FLOAT32 (Tensor and the constant methods stage
// a tensor as its own dtype). It does nothing when id is not a tensor.
func (b *Builder) SetStaging(id int32, dt DataType) {
	if id >= 0 && int(id) < len(b.g.Values) && b.g.Values[id].Tensor != nil {
		b.g.Values[id].Tensor.StagingDataType = dt
	}
}

// addConstant appends a VkBytes entry and returns its constant id.
func (b *Builder) addConstant(c Bytes) int32 {
	b.g.Constants = append(b.g.Constants, c)
	return int32(len(b.g.Constants) - 1)
}

// InlineConst adds a constant tensor whose bytes go in the blob's inline
// constant region, appended and zero-padded to 16 bytes as the pre-2025
// exporter did. The entry carries an empty but present named_key, as flatc
// writes the Python default "".
func (b *Builder) InlineConst(dt DataType, dims []uint32, data []byte) int32 {
	off := uint64(len(b.inline))
	b.inline = append(b.inline, data...)
	b.inline = append(b.inline, make([]byte, roundUp(uint64(len(b.inline)), 16)-uint64(len(b.inline)))...)
	id := b.addConstant(Bytes{Offset: off, Length: uint64(len(data)), HasKey: true})
	return b.AddValue(Value{Kind: KindTensor, Tensor: newTensor(dt, dims, id, -1)})
}

// NamedConst adds a constant tensor stored as named data under the
// lowercase hex SHA-256 of data, as the exporter does since 2025-08-18.
// Identical data gets the same key and is stored once; each call still adds
// its own VkBytes entry, so several constants may share a key.
func (b *Builder) NamedConst(dt DataType, dims []uint32, data []byte) (id int32, key string) {
	sum := sha256.Sum256(data)
	key = hex.EncodeToString(sum[:])
	if _, ok := b.named[key]; !ok {
		b.named[key] = slices.Clone(data)
	}
	return b.NamedConstKey(dt, dims, key, uint64(len(data))), key
}

// NamedConstKey adds a constant tensor that refers to named data by key
// without supplying the data (it is expected from a .pte or .ptd).
func (b *Builder) NamedConstKey(dt DataType, dims []uint32, key string, length uint64) int32 {
	cid := b.addConstant(Bytes{Offset: NamedOffset, Length: length, NamedKey: key, HasKey: true})
	return b.AddValue(Value{Kind: KindTensor, Tensor: newTensor(dt, dims, cid, -1)})
}

// Null adds a Null value (None, dtype, device, layout and memory-format
// arguments all serialize as Null).
func (b *Builder) Null() int32 { return b.AddValue(Value{Kind: KindNull}) }

// Int adds an Int value.
func (b *Builder) Int(v int64) int32 { return b.AddValue(Value{Kind: KindInt, Int: v}) }

// Double adds a Double value.
func (b *Builder) Double(v float64) int32 { return b.AddValue(Value{Kind: KindDouble, Double: v}) }

// Bool adds a Bool value.
func (b *Builder) Bool(v bool) int32 { return b.AddValue(Value{Kind: KindBool, Bool: v}) }

// IntList adds an IntList value.
func (b *Builder) IntList(v ...int64) int32 {
	return b.AddValue(Value{Kind: KindIntList, Ints: slices.Clone(v)})
}

// DoubleList adds a DoubleList value.
func (b *Builder) DoubleList(v ...float64) int32 {
	return b.AddValue(Value{Kind: KindDoubleList, Doubles: slices.Clone(v)})
}

// BoolList adds a BoolList value.
func (b *Builder) BoolList(v ...bool) int32 {
	return b.AddValue(Value{Kind: KindBoolList, Bools: slices.Clone(v)})
}

// ValueList adds a ValueList of value ids (multi-output ops and tensor-list
// arguments use one).
func (b *Builder) ValueList(ids ...int32) int32 {
	return b.AddValue(Value{Kind: KindValueList, IDs: slices.Clone(ids)})
}

// String adds a String value.
func (b *Builder) String(s string) int32 { return b.AddValue(Value{Kind: KindString, String: s}) }

// SymInt adds a SymInt value with initial value v.
func (b *Builder) SymInt(v int32) int32 { return b.AddValue(Value{Kind: KindSymInt, SymInt: v}) }

// Op appends an OperatorCall; args are value ids, the output last. Node ids
// count up from 0 in chain order.
func (b *Builder) Op(name string, args ...int32) {
	b.g.Chain = append(b.g.Chain, OpCall{NodeID: uint32(len(b.g.Chain)), Name: name, Args: slices.Clone(args)})
}

// Inputs appends graph input value ids.
func (b *Builder) Inputs(ids ...int32) {
	for _, id := range ids {
		b.g.InputIDs = append(b.g.InputIDs, uint32(id))
	}
}

// Outputs appends graph output value ids.
func (b *Builder) Outputs(ids ...int32) {
	for _, id := range ids {
		b.g.OutputIDs = append(b.g.OutputIDs, uint32(id))
	}
}

// Graph returns the graph built so far. It is the builder's own graph, not
// a copy: later builder calls change it, and changes to it (to break it on
// purpose in a test, say) are encoded by Blob.
func (b *Builder) Graph() *Graph { return &b.g }

// InlineData returns the inline constant region built so far.
func (b *Builder) InlineData() []byte { return b.inline }

// NamedBlobs returns the named data added with NamedConst, sorted by key so
// the order (and any file written from it) is deterministic.
func (b *Builder) NamedBlobs() []NamedBlob {
	out := make([]NamedBlob, 0, len(b.named))
	for k, d := range b.named {
		out = append(out, NamedBlob{Key: k, Data: d})
	}
	slices.SortFunc(out, func(x, y NamedBlob) int { return strings.Compare(x.Key, y.Key) })
	return out
}

// Blob encodes the graph and inline constants as a delegate blob
// (EncodeBlob).
func (b *Builder) Blob() ([]byte, error) { return EncodeBlob(&b.g, b.inline) }

// Decode encodes the graph (Blob) and decodes it as a loader reads a
// delegate blob, with its named data gathered into a NamedDataMap: what a
// test loads from a builder.
func (b *Builder) Decode() (*Blob, *NamedDataMap, error) {
	raw, err := b.Blob()
	if err != nil {
		return nil, nil, err
	}
	blob, err := DecodeBlob(raw)
	if err != nil {
		return nil, nil, err
	}
	named := NewNamedDataMap()
	for _, nb := range b.NamedBlobs() {
		if err := named.Add(nb.Key, nb.Data); err != nil {
			return nil, nil, err
		}
	}
	return blob, named, nil
}
