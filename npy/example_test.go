package npy_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"math"

	"github.com/wgdelegate/wgdelegate/npy"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Example writes a float32 array the way np.save does, reads it back, and
// shows the typed error a big-endian file gets.
func Example() {
	// np.arange(6, dtype='<f4').reshape(2, 3): the element bytes are
	// little-endian, in C order.
	var data []byte
	for i := range 6 {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(i)))
	}
	b, err := npy.Encode(npy.Tensor{DType: serialization.Float32, Shape: []int64{2, 3}, Data: data})
	if err != nil {
		log.Fatal(err)
	}
	h, err := npy.ReadHeader(bytes.NewReader(b))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes: version %d.%d, descr %s, shape %v, data at %d\n", len(b), h.Major, h.Minor, h.Descr, h.Shape, h.DataOffset)

	t, err := npy.Decode(b)
	if err != nil {
		log.Fatal(err)
	}
	v, err := t.Float32s()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.DType, t.Shape, v)

	// The same file saved big-endian ('>f4') is refused, not converted.
	_, err = npy.Decode(bytes.Replace(b, []byte("'<f4'"), []byte("'>f4'"), 1))
	var fe *npy.FormatError
	fmt.Println(errors.Is(err, npy.ErrBigEndian), errors.As(err, &fe) && fe.Off > 0)
	// Output:
	// 152 bytes: version 1.0, descr <f4, shape [2 3], data at 128
	// float32 [2 3] [0 1 2 3 4 5]
	// true true
}
