package serialization

import (
	"fmt"
	"math"
)

// DataType is the VkGraph VkDataType enum (an int8 in the schema).
type DataType int8

// VkDataType values, numbered as in the schema.
const (
	Bool    DataType = 0
	Uint8   DataType = 1
	Int8    DataType = 2
	Int32   DataType = 3
	Float16 DataType = 4
	Float32 DataType = 5
	Float64 DataType = 6
	Int64   DataType = 7
	Unset   DataType = 127
)

// Size returns the element size in bytes, or 0 for an unknown data type.
func (d DataType) Size() int {
	switch d {
	case Bool, Uint8, Int8:
		return 1
	case Float16:
		return 2
	case Int32, Float32:
		return 4
	case Int64, Float64:
		return 8
	}
	return 0
}

// Valid reports whether d names a concrete element type (not UNSET, not unknown).
func (d DataType) Valid() bool { return d.Size() != 0 }

func (d DataType) String() string {
	switch d {
	case Bool:
		return "bool"
	case Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Int32:
		return "int32"
	case Float16:
		return "float16"
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Int64:
		return "int64"
	case Unset:
		return "unset"
	}
	return fmt.Sprintf("DataType(%d)", int8(d))
}

// ValueKind is the GraphTypes union tag stored in VkValue.value_type.
type ValueKind uint8

// GraphTypes union tags, numbered as in the schema.
const (
	KindNone       ValueKind = 0
	KindNull       ValueKind = 1
	KindInt        ValueKind = 2
	KindDouble     ValueKind = 3
	KindBool       ValueKind = 4
	KindTensor     ValueKind = 5
	KindIntList    ValueKind = 6
	KindDoubleList ValueKind = 7
	KindBoolList   ValueKind = 8
	KindValueList  ValueKind = 9
	KindString     ValueKind = 10
	KindSymInt     ValueKind = 11
)

var kindNames = [...]string{"None", "Null", "Int", "Double", "Bool", "VkTensor", "IntList", "DoubleList", "BoolList", "ValueList", "String", "SymInt"}

func (k ValueKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("ValueKind(%d)", uint8(k))
}

// Storage type and memory layout defaults (the schema's "absent" values).
const (
	DefaultStorage uint8 = 255
	DefaultLayout  uint8 = 255
)

// Tensor is a decoded VkTensor. Absent fields hold the schema defaults:
// DataType 0 (BOOL), ConstantID 0, MemObjID 0, StorageType/MemoryLayout 255,
// StagingDataType 127 (UNSET).
type Tensor struct {
	DataType        DataType
	Dims            []uint32
	ConstantID      int32 // >= 0: index into Graph.Constants
	MemObjID        int32 // >= 0: shared allocation id; < 0: dedicated
	StorageType     uint8
	MemoryLayout    uint8
	StagingDataType DataType
}

// IsConstant reports whether the tensor's bytes come from Graph.Constants.
func (t *Tensor) IsConstant() bool { return t.ConstantID >= 0 }

// Value is one decoded VkValue. Kind selects which field is meaningful.
type Value struct {
	Kind    ValueKind
	Tensor  *Tensor   // KindTensor
	Int     int64     // KindInt
	Double  float64   // KindDouble
	Bool    bool      // KindBool
	Ints    []int64   // KindIntList
	Doubles []float64 // KindDoubleList
	Bools   []bool    // KindBoolList
	IDs     []int32   // KindValueList: value ids
	String  string    // KindString
	SymInt  int32     // KindSymInt: initial value
}

// OpCall is a decoded OperatorCall.
type OpCall struct {
	NodeID uint32
	Name   string
	Args   []int32 // value ids; the last one is the output (or a ValueList of outputs)
}

// NamedOffset is the VkBytes.offset sentinel that marks named (NamedDataMap) data.
const NamedOffset = math.MaxUint64

// Bytes is a decoded VkBytes entry.
type Bytes struct {
	Offset   uint64
	Length   uint64
	NamedKey string
	HasKey   bool // named_key field present (may be present and empty)
}

// IsNamed reports whether the bytes live in named data rather than inline.
func (b Bytes) IsNamed() bool { return b.Offset == NamedOffset }

// Graph is a decoded VkGraph ("VK00").
type Graph struct {
	Version              string
	Chain                []OpCall
	Values               []Value
	InputIDs             []uint32
	OutputIDs            []uint32
	Constants            []Bytes
	Shaders              []Bytes
	StorageTypeOverride  uint8
	MemoryLayoutOverride uint8
}

// Header is the decoded 30-byte VH00 delegate header.
type Header struct {
	HeaderSize       uint16
	FlatbufferOffset uint32
	FlatbufferSize   uint32
	BytesOffset      uint32
	BytesSize        uint64
}

// HeaderLen is the VH00 header length in bytes; PaddedHeaderLen is what the writer pads it to.
const (
	HeaderLen       = 30
	PaddedHeaderLen = 32
)

// Blob is a decoded delegate blob: header, graph, and the constant-bytes region
// (a sub-slice of the input, never a copy).
type Blob struct {
	Header    Header
	Graph     *Graph
	Constants []byte
}
