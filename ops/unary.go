package ops

import (
	"slices"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.relu.default args:    [self, out]
// aten.sigmoid.default args: [self, out]
//
// relu takes float32 or int32, sigmoid float32; out has self's dtype and
// dims. relu keeps NaN; sigmoid is evaluated in a form that does not
// overflow for large |x| (no NaN at x = -1000).
func init() {
	Register("aten.relu.default", func(b Builder, args []int32) error { return unaryOp(b, "relu", args) })
	Register("aten.sigmoid.default", func(b Builder, args []int32) error { return unaryOp(b, "sigmoid", args) })
}

const unaryWG = 256

// unaryVariant is the template data of shaders/unary.wgsl.
type unaryVariant struct {
	Op string // relu, sigmoid
	V  string // array element type: f32, i32, vec4<f32>, vec4<i32>
	WG int
}

// unaryParams is the Go twin of unary.wgsl's Params (16 bytes).
type unaryParams struct {
	N uint32 // invocations with work: elements / W
	_ [3]uint32
}

func (p *unaryParams) bytes() []byte {
	var q Params
	q.U32(p.N)
	return q.Bytes()
}

func unaryOp(b Builder, op string, args []int32) error {
	if len(args) != 2 {
		return Errorf(-1, "want 2 args [self, out], have %d", len(args))
	}
	in, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	out, err := b.Tensor(args[1])
	if err != nil {
		return argErr(1, err)
	}
	s, ok := wgslElem(in.DType)
	if !ok || (op == "sigmoid" && in.DType != serialization.Float32) {
		want := "float32 or int32"
		if op == "sigmoid" {
			want = "float32"
		}
		return Errorf(0, "unsupported dtype %v (want %s)", in.DType, want)
	}
	if out.DType != in.DType {
		return Errorf(1, "out is %v, self %v", out.DType, in.DType)
	}
	if !slices.Equal(in.Dims, out.Dims) {
		return Errorf(1, "out dims %v differ from self's %v", out.Dims, in.Dims)
	}
	if out.Numel >= 1<<32 {
		return Errorf(1, "%d elements exceed the kernel's 32-bit indexing", out.Numel)
	}
	if out.Numel == 0 {
		return nil
	}
	w := 1
	if out.Numel%4 == 0 {
		w = 4
	}
	k, err := shaders.Render("unary.wgsl", unaryVariant{Op: op, V: vecType(s, w), WG: unaryWG}, "main", shaders.Layout(1, 1, true), unaryWG)
	if err != nil {
		return err
	}
	p := unaryParams{N: uint32(out.Numel) / uint32(w)}
	grid, err := Grid(uint64(p.N), unaryWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	return b.Dispatch(k, []int32{args[0]}, []int32{args[1]}, p.bytes(), grid)
}
