package tensor

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// Element decodes the element of dtype dt at the start of b as a float64,
// which holds every int32, bool and float32 exactly (an int64 beyond 2^53
// rounds). ok is false for a dtype it does not decode and when b is
// shorter than one element. A float16 element is its exact value.
func Element(dt DataType, b []byte) (v float64, ok bool) {
	if es := dt.Size(); es == 0 || len(b) < es {
		return 0, false
	}
	switch dt {
	case serialization.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), true
	case serialization.Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), true
	case serialization.Float16:
		return float64(HalfToFloat32(binary.LittleEndian.Uint16(b))), true
	case serialization.Int32:
		return float64(int32(binary.LittleEndian.Uint32(b))), true
	case serialization.Int64:
		return float64(int64(binary.LittleEndian.Uint64(b))), true
	case serialization.Int8:
		return float64(int8(b[0])), true
	case serialization.Uint8, serialization.Bool:
		return float64(b[0]), true
	}
	return 0, false
}

// PutElement encodes v as one element of dtype dt at the start of b:
// float32 rounds, float16 rounds (through float32) to nearest even,
// integers truncate toward zero and keep their low bits, bool is v != 0.
// It writes nothing for a dtype it does not encode. b must hold one
// element.
func PutElement(dt DataType, b []byte, v float64) {
	switch dt {
	case serialization.Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case serialization.Float16:
		binary.LittleEndian.PutUint16(b, Float32ToHalf(float32(v)))
	case serialization.Float64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	case serialization.Int32:
		binary.LittleEndian.PutUint32(b, uint32(int32(v)))
	case serialization.Int64:
		binary.LittleEndian.PutUint64(b, uint64(int64(v)))
	case serialization.Int8, serialization.Uint8:
		b[0] = byte(int64(v))
	case serialization.Bool:
		b[0] = 0
		if v != 0 {
			b[0] = 1
		}
	}
}

// Widens reports whether a device tensor of dtype dev is read back as host
// dtype host: int32 as int64 and float32 as float64, the 64-bit dtypes the
// exporter narrows inside the graph.
func Widens(dev, host DataType) bool {
	return (dev == serialization.Int32 && host == serialization.Int64) ||
		(dev == serialization.Float32 && host == serialization.Float64)
}

// Widen returns src's 32-bit elements of dtype dev (int32 or float32)
// converted to their 64-bit host dtype (int64 or float64), in new memory.
func Widen(src []byte, dev DataType) []byte {
	out := make([]byte, 2*len(src))
	for k := 0; k+4 <= len(src); k += 4 {
		w := binary.LittleEndian.Uint32(src[k:])
		var v uint64
		if dev == serialization.Int32 {
			v = uint64(int64(int32(w)))
		} else {
			v = math.Float64bits(float64(math.Float32frombits(w)))
		}
		binary.LittleEndian.PutUint64(out[2*k:], v)
	}
	return out
}

// Narrows reports whether host dtype host is narrowed to device dtype dev
// on upload: int64 to int32 and float64 to float32.
func Narrows(host, dev DataType) bool { return Widens(dev, host) }

// OverflowError reports an int64 element that does not fit in int32.
type OverflowError struct {
	Index int   // element index
	Value int64 // its value
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("wgdelegate: element %d = %d overflows int32", e.Index, e.Value)
}

// Narrow appends src's 64-bit elements of dtype from (int64 or float64),
// converted to 32 bits (int32 or float32), to dst and returns the extended
// slice. float64 rounds to the nearest float32; an int64 outside the int32
// range is an *OverflowError naming the first such element. Passing a
// reused dst[:0] makes steady-state narrowing allocation-free.
func Narrow(dst, src []byte, from DataType) ([]byte, error) {
	switch from {
	case serialization.Int64:
		for k := 0; k+8 <= len(src); k += 8 {
			v := int64(binary.LittleEndian.Uint64(src[k:]))
			if v < math.MinInt32 || v > math.MaxInt32 {
				return dst, &OverflowError{Index: k / 8, Value: v}
			}
			dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
		}
	case serialization.Float64:
		for k := 0; k+8 <= len(src); k += 8 {
			f := float32(math.Float64frombits(binary.LittleEndian.Uint64(src[k:])))
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
		}
	default:
		return dst, fmt.Errorf("wgdelegate: cannot narrow %v to 32 bits", from)
	}
	return dst, nil
}
