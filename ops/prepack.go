package ops

import "slices"

// et_vk.prepack.default args: [constant, out]
//
// Prepack copies a constant into its consumer's dedicated tensor once, at
// load. There is no kernel: the bytes are written straight from the file
// into out's buffer.
func init() { Register("et_vk.prepack.default", prepack) }

func prepack(b Builder, args []int32) error {
	if len(args) != 2 {
		return Errorf(-1, "want 2 args [constant, out], have %d", len(args))
	}
	src, err := b.Tensor(args[0])
	if err != nil {
		return err
	}
	out, err := b.Tensor(args[1])
	if err != nil {
		return err
	}
	if !src.Constant {
		return Errorf(0, "value %d is not a constant", src.ID)
	}
	if !slices.Equal(src.Dims, out.Dims) {
		return Errorf(1, "dims %v differ from the constant's %v", out.Dims, src.Dims)
	}
	if src.DType.Size() != out.DType.Size() || src.NBytes != out.NBytes {
		return Errorf(1, "%v (%d bytes) differs from the constant's %v (%d bytes)", out.DType, out.NBytes, src.DType, src.NBytes)
	}
	return b.MaterializeConstant(src.ID, out.ID)
}
