package ops

import (
	"math"
	"slices"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// Epilogue fusion. Package lower's linear_epilogue pass groups a
// linear-family op (TakesEpilogue) with what follows its output as its sole
// reader: an aten.relu, relu6, clamp, hardtanh, sigmoid or gelu, or SiLU
// as exported (sigmoid(x) and x·sigmoid(x)); then an aten.add.Tensor
// (alpha 1) or aten.mul.Tensor with another tensor of the output's shape
// computed before the linear: a transformer block's residual add,
// SwiGLU's gate·up product. The kernel applies them on its last K chunk
// and writes the last op's output (matmulEpilogue). The guard, at the
// live shapes: the activation's arguments as the kernel takes them (a
// gelu's approximate, clamp's bounds), the residual's other operand of
// exactly the output's shape, a kernel that applies epilogues (not the
// chunked path); otherwise the group records as the later passes make it.
// Addition and multiplication of two floats commute exactly, so either
// operand order gives the unfused result.

// matmulEpilogue is what a linear-family kernel applies to its result
// before writing it: the fused ops after the linear.
type matmulEpilogue struct {
	act    string  // relu, clamp (also hardtanh, relu6), sigmoid, gelu or gelu_tanh
	lo, hi float32 // clamp bounds
	out    int32   // the last fused op's output, written instead of the linear's
	// res is "add" or "mul" when an elementwise add (alpha 1) or mul with
	// another tensor of the output's shape follows (after act): a
	// residual connection, or SwiGLU's gate times up; other is that
	// tensor.
	res   string
	other int32
	// gate multiplies the activation's result by its input (SiLU:
	// x·sigmoid(x), as the exporter writes it).
	gate bool
}

// linearParse checks a linear-family op's arguments into its call and
// sets its output's shape; a nil call records nothing (an empty batch).
type linearParse func(b Builder, args []int32) (*linearCall, error)

// linearParsers are the linear-family ops whose kernels apply an
// epilogue, by name.
var linearParsers = map[string]linearParse{}

// registerLinear registers op, a linear-family op whose arguments parse
// reads, recording its call alone; its epilogue group records it with
// fusedLinearEpilogue.
func registerLinear(op Op, parse linearParse) {
	op.Run = func(b Builder, args []int32) error {
		c, err := parse(b, args)
		if err != nil || c == nil {
			return err
		}
		return runLinear(b, c)
	}
	RegisterOp(op)
	linearParsers[op.Name] = parse
}

// TakesEpilogue reports whether op name is a linear-family op whose
// kernels apply an epilogue (FusedLinearEpilogue's first op).
func TakesEpilogue(name string) bool {
	_, ok := linearParsers[name]
	return ok
}

// EpilogueActivations maps the activations a linear-family kernel
// applies to their argument counts (the output last).
var EpilogueActivations = map[string]int{
	"aten.relu.default": 2, "aten.relu6.default": 2, "aten.sigmoid.default": 2,
	"aten.clamp.default": 4, "aten.hardtanh.default": 4, "aten.gelu.default": 3,
}

func init() { RegisterFused(FusedLinearEpilogue, fusedLinearEpilogue) }

// fusedLinearEpilogue is FusedLinearEpilogue's kernel: g.Calls[0] the
// linear, g.Act, g.Gate and g.Res its epilogue's ops.
func fusedLinearEpilogue(b Builder, g *Group) (int, error) {
	parse, ok := linearParsers[g.Calls[0].Name]
	if !ok {
		return 0, nil
	}
	c, err := parse(b, g.Calls[0].Args)
	if err != nil || c == nil {
		return 0, err
	}
	_, _, _, out := c.shape()
	outT, err := b.Tensor(out)
	if err != nil {
		return 0, err
	}
	dims := outT.Dims
	var e matmulEpilogue
	call := func(i int) (Call, bool) {
		return g.Calls[i], i > 0 && i < len(g.Calls) && len(g.Calls[i].Args) > 0
	}
	cur := outT.ID
	if g.Gate > 0 {
		s, ok1 := call(g.Act)
		m, ok2 := call(g.Gate)
		if !ok1 || !ok2 || !epilogueOutput(b, s, dims) || !epilogueOutput(b, m, dims) {
			return 0, nil
		}
		e = matmulEpilogue{act: "sigmoid", gate: true}
		cur = m.Args[len(m.Args)-1]
	} else if g.Act > 0 {
		a, ok := call(g.Act)
		if !ok || !epilogueActivation(b, a, &e) || !epilogueOutput(b, a, dims) {
			return 0, nil
		}
		cur = a.Args[len(a.Args)-1]
	}
	if g.Res > 0 {
		r, ok := call(g.Res)
		if !ok || !epilogueResidual(b, r, cur, dims, &e) || !epilogueOutput(b, r, dims) {
			return 0, nil
		}
		cur = r.Args[len(r.Args)-1]
	}
	e.out = cur
	done, err := recordLinear(b, c, &e)
	if err != nil || !done {
		return 0, err
	}
	return len(g.Calls), nil
}

// epilogueOutput checks that op c's output is a float32 tensor that can
// take the linear's output shape dims, and sets it.
func epilogueOutput(b Builder, c Call, dims []int64) bool {
	out := c.Args[len(c.Args)-1]
	t, err := b.Tensor(out)
	return err == nil && t.DType == serialization.Float32 && t.MaxNumel >= NumelOf(dims) && b.SetDims(out, dims) == nil
}

// epilogueActivation reads activation op c into e (act, clamp bounds);
// false when the kernel does not apply it so.
func epilogueActivation(b Builder, c Call, e *matmulEpilogue) bool {
	args := c.Args
	if want, known := EpilogueActivations[c.Name]; !known || len(args) != want {
		return false
	}
	bound := func(id int32, null float64) (float32, bool) {
		if b.IsNull(id) {
			return float32(null), true
		}
		f, err := b.Float(id)
		return float32(f), err == nil
	}
	switch c.Name {
	case "aten.relu.default":
		e.act = "relu"
	case "aten.relu6.default":
		e.act, e.lo, e.hi = "clamp", 0, 6
	case "aten.sigmoid.default":
		e.act = "sigmoid"
	case "aten.clamp.default", "aten.hardtanh.default":
		var okLo, okHi bool
		e.act = "clamp"
		e.lo, okLo = bound(args[1], math.Inf(-1))
		e.hi, okHi = bound(args[2], math.Inf(1))
		if !okLo || !okHi || (c.Name == "aten.hardtanh.default" && (b.IsNull(args[1]) || b.IsNull(args[2]))) {
			return false
		}
	case "aten.gelu.default":
		switch approx, err := b.String(args[1]); {
		case err != nil:
			return false
		case approx == "none":
			e.act = "gelu"
		case approx == "tanh":
			e.act = "gelu_tanh"
		default:
			return false
		}
	}
	return true
}

// epilogueResidual reads residual op c (an add with alpha 1, or a mul, of
// cur and another float32 tensor of exactly dims) into e.
func epilogueResidual(b Builder, c Call, cur int32, dims []int64, e *matmulEpilogue) bool {
	args := c.Args
	switch {
	case c.Name == "aten.add.Tensor" && len(args) == 4:
		if alpha, err := b.Float(args[2]); err != nil || alpha != 1 {
			return false
		}
		e.res = "add"
	case c.Name == "aten.mul.Tensor" && len(args) == 3:
		e.res = "mul"
	default:
		return false
	}
	switch {
	case args[0] == cur && args[1] != cur:
		e.other = args[1]
	case args[1] == cur && args[0] != cur:
		e.other = args[0]
	default:
		return false
	}
	ot, err := b.Tensor(e.other)
	return err == nil && ot.DType == serialization.Float32 && slices.Equal(ot.Dims, dims)
}
