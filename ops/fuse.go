package ops

import (
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// Elementwise fusion. A chain of float32 unary ops (relu, sigmoid, tanh,
// gelu, clamp...) and binary ops (add, sub, rsub, mul, div, minimum,
// maximum, with a tensor or a Scalar other), each reading the previous
// one's output as its sole reader, is one kernel (shaders/fused.wgsl)
// that computes them all per element:
//
//	t1 = add(x, bias); t2 = relu(t1); t3 = mul(t2, 0.5)  ->  one dispatch
//
// Package lower's elementwise pass finds the chains (FusableElementwise
// says which ops and arguments the kernel reads); fusedElementwise records
// one at the live shapes: every dtype float32, and each binary step's
// other operand broadcasting to the chain's shape without growing it. A
// step that does not fit ends the fused prefix there, and the graph
// records the rest as a chain again (so `relu(x) * z + 1` is relu alone,
// then one kernel, while z is larger than x).
//
// The fused kernel evaluates the same float32 formulas in the same order as
// unary.wgsl and binary.wgsl, so fused and unfused results agree to
// rounding.

const (
	// fuseMaxSteps bounds a fused kernel's length (LLVM compile time grows
	// with it; past a few dozen steps the dispatch saved is noise).
	fuseMaxSteps = 64
	// fuseMaxOperands keeps inputs + the output within the default limit of
	// 8 storage buffers per shader stage.
	fuseMaxOperands = 7
	fusedWG         = 256
)

// fuseUnary maps the op names a chain may absorb as unary steps to
// unaryOp's short names. Each float32 formula (after unaryTypes renamed
// gelu to gelu_tanh where asked) is the one of shaders/unary_formulas.tmpl
// that the unfused unary kernel also renders, so a fused step computes the
// same float32 operations in the same order as the op alone.
var fuseUnary = map[string]string{}

// fuseBinary maps the binary op names a chain may absorb.
var fuseBinary = map[string]fuseBin{
	"aten.add.Tensor":      {"add", layoutAlpha},
	"aten.sub.Tensor":      {"sub", layoutAlpha},
	"aten.mul.Tensor":      {"mul", layoutPlain},
	"aten.div.Tensor":      {"div", layoutPlain},
	"aten.minimum.default": {"minimum", layoutPlain},
	"aten.maximum.default": {"maximum", layoutPlain},
	"aten.add.Scalar":      {"add", layoutAlpha | layoutScalar},
	"aten.sub.Scalar":      {"sub", layoutAlpha | layoutScalar},
	"aten.rsub.Scalar":     {"rsub", layoutAlpha | layoutScalar},
	"aten.mul.Scalar":      {"mul", layoutScalar},
	"aten.div.Scalar":      {"div", layoutScalar},
}

type fuseBin struct {
	op     string
	layout binaryLayout
}

func init() {
	RegisterFused(FusedElementwise, fusedElementwise)
	for _, op := range []string{"abs", "neg", "exp", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "relu6",
		"round", "log10", "hardswish", "hardsigmoid", "gelu", "hardtanh", "hardshrink", "leaky_relu", "clamp"} {
		fuseUnary["aten."+op+".default"] = op
	}
}

// fuseOperand is a tensor the fused kernel reads, broadcast to the chain's
// shape.
type fuseOperand struct {
	id   int32
	dims []int64
}

// fuseStep is one op of a chain.
type fuseStep struct {
	unary bool
	op    string  // unary formula name, or binary op
	a, b  float32 // unary scalars
	alpha float32 // binary alpha (1 when absent)
	sc    float32 // a binary Scalar other
	opd   int     // operand index of a binary tensor other, -1 for a Scalar
	swap  bool    // the chain value is the binary op's other, not its self
}

// fuseChain is a chain being built from its first op.
type fuseChain struct {
	dims     []int64 // live shape of every step's output
	numel    int64
	operands []fuseOperand
	steps    []fuseStep
}

// operand returns the index of tensor id among the chain's operands,
// adding it. It fails when the operand cannot be read by the kernel.
func (c *fuseChain) operand(id int32, dims []int64) (int, bool) {
	for k, o := range c.operands {
		if o.id == id {
			return k, true
		}
	}
	if d, _ := coalesce(c.dims, dims); len(d) > ewMaxRank {
		return 0, false
	}
	c.operands = append(c.operands, fuseOperand{id: id, dims: append([]int64(nil), dims...)})
	return len(c.operands) - 1, true
}

// ElementwiseOp is how the fused elementwise kernel reads an op it can
// compute: its argument count (the output last) and which arguments are
// tensors (the chain value, or an operand); the others are scalars.
type ElementwiseOp struct {
	Args    int
	Tensors []int
}

// FusableElementwise reports whether fused.wgsl computes op name as a step
// of a chain, and how it reads the op's arguments.
func FusableElementwise(name string) (ElementwiseOp, bool) {
	if op, ok := fuseUnary[name]; ok {
		return ElementwiseOp{Args: unaryScalars[op] + 2, Tensors: []int{0}}, true
	}
	if bin, ok := fuseBinary[name]; ok {
		if bin.layout&layoutScalar != 0 {
			return ElementwiseOp{Args: bin.layout.nargs(), Tensors: []int{0}}, true
		}
		return ElementwiseOp{Args: bin.layout.nargs(), Tensors: []int{0, 1}}, true
	}
	return ElementwiseOp{}, false
}

// fusedElementwise is FusedElementwise's kernel: it records the longest
// prefix of g's chain, two ops at least, whose steps fit the chain's live
// shape (fuseHead, fuseParse), as one dispatch of fused.wgsl.
func fusedElementwise(b Builder, g *Group) (int, error) {
	if len(g.Calls) < 2 {
		return 0, nil
	}
	c, ok := fuseHead(b, g.Calls[0])
	if !ok || c.numel == 0 || c.numel >= 1<<32-4 {
		return 0, nil
	}
	type joined struct {
		out      int32
		outArg   int
		operands int // len(c.operands) with this step
	}
	var js []joined
	cur := g.Calls[0].Args[len(g.Calls[0].Args)-1]
	for _, call := range g.Calls[1:] {
		if len(c.steps) >= fuseMaxSteps {
			break
		}
		n := len(c.operands)
		st, ok := fuseParse(b, c, call.Name, call.Args, cur)
		if !ok || len(c.operands) > fuseMaxOperands {
			c.operands = c.operands[:n]
			break
		}
		c.steps = append(c.steps, st)
		out := call.Args[len(call.Args)-1]
		js = append(js, joined{out: out, outArg: len(call.Args) - 1, operands: len(c.operands)})
		cur = out
	}
	if len(js) == 0 {
		return 0, nil
	}
	last := js[len(js)-1]
	c.operands = c.operands[:last.operands]
	for _, x := range js {
		if _, err := Output(b, x.outArg, x.out, serialization.Float32, c.dims); err != nil {
			return 0, err
		}
	}
	return 1 + len(js), fuseDispatch(b, c, last.out)
}

// fuseHead starts a chain at call, the chain's first op, with its output's
// live shape set; ok is false when the op cannot head a chain at the live
// shapes (the graph then records it alone, which also reports any error
// in its arguments).
func fuseHead(b Builder, call Call) (*fuseChain, bool) {
	f32 := serialization.Float32
	name, args := call.Name, call.Args
	if len(args) < 2 {
		return nil, false
	}
	in, err := b.Tensor(args[0])
	if err != nil || in.DType != f32 {
		return nil, false
	}
	if _, isUnary := fuseUnary[name]; isUnary {
		c := &fuseChain{dims: in.Dims, numel: in.Numel}
		c.operand(args[0], in.Dims)
		st, ok := fuseParse(b, c, name, args, args[0])
		if !ok {
			return nil, false
		}
		if _, err := Output(b, len(args)-1, args[len(args)-1], f32, in.Dims); err != nil {
			return nil, false
		}
		c.steps = append(c.steps, st)
		return c, true
	}
	bin, ok := fuseBinary[name]
	if !ok || len(args) != bin.layout.nargs() {
		return nil, false
	}
	dims := in.Dims
	var other Tensor
	if bin.layout&layoutScalar == 0 {
		if other, err = b.Tensor(args[1]); err != nil || other.DType != f32 {
			return nil, false
		}
		if dims, ok = BroadcastShape(in.Dims, other.Dims); !ok {
			return nil, false
		}
	}
	out, err := b.Tensor(args[len(args)-1])
	if err != nil || out.DType != f32 || out.Constant || out.MaxNumel < NumelOf(dims) {
		return nil, false
	}
	c := &fuseChain{dims: dims, numel: NumelOf(dims)}
	if _, ok := c.operand(args[0], in.Dims); !ok {
		return nil, false
	}
	st := fuseStep{op: bin.op, alpha: 1, opd: -1}
	if bin.layout&layoutAlpha != 0 && !b.IsNull(args[2]) {
		a, err := b.Float(args[2])
		if err != nil {
			return nil, false
		}
		st.alpha = float32(a)
	}
	if bin.layout&layoutScalar != 0 {
		sc, err := scalarArg(b, 1, args[1])
		if err != nil {
			return nil, false
		}
		st.sc = float32(sc.F)
	} else {
		k, ok := c.operand(args[1], other.Dims)
		if !ok {
			return nil, false
		}
		st.opd = k
	}
	if _, err := Output(b, len(args)-1, args[len(args)-1], f32, dims); err != nil {
		return nil, false
	}
	c.steps = append(c.steps, st)
	return c, true
}

// fuseParse reads op name(args) as a step consuming the chain value cur.
// ok is false when it cannot join (the op then runs alone and checks its
// own arguments).
func fuseParse(b Builder, c *fuseChain, name string, args []int32, cur int32) (fuseStep, bool) {
	f32 := serialization.Float32
	if len(args) == 0 {
		return fuseStep{}, false
	}
	out, err := b.Tensor(args[len(args)-1])
	if err != nil || out.DType != f32 || out.Constant || out.MaxNumel < c.numel {
		return fuseStep{}, false
	}
	if op, ok := fuseUnary[name]; ok {
		if len(args) != unaryScalars[op]+2 || args[0] != cur {
			return fuseStep{}, false
		}
		v := unaryVariant{Op: op, X: "f32", Y: "f32"}
		var p unaryParams
		if unaryTypes(b, &v, &p, args, f32, f32) != nil || v.S != "f32" {
			return fuseStep{}, false
		}
		return fuseStep{unary: true, op: v.Op, a: p.AF, b: p.BF}, true
	}
	bin, ok := fuseBinary[name]
	if !ok || len(args) != bin.layout.nargs() {
		return fuseStep{}, false
	}
	st := fuseStep{op: bin.op, alpha: 1, opd: -1}
	if bin.layout&layoutAlpha != 0 && !b.IsNull(args[2]) {
		a, err := b.Float(args[2])
		if err != nil {
			return fuseStep{}, false
		}
		st.alpha = float32(a)
	}
	if bin.layout&layoutScalar != 0 {
		if args[0] != cur {
			return fuseStep{}, false
		}
		sc, err := scalarArg(b, 1, args[1])
		if err != nil {
			return fuseStep{}, false
		}
		st.sc = float32(sc.F)
		return st, true
	}
	var oid int32
	switch {
	case args[0] == cur && args[1] != cur:
		oid = args[1]
	case args[1] == cur && args[0] != cur:
		oid, st.swap = args[0], true
	default:
		return fuseStep{}, false
	}
	ot, err := b.Tensor(oid)
	if err != nil || ot.DType != f32 {
		return fuseStep{}, false
	}
	if bc, ok := BroadcastShape(c.dims, ot.Dims); !ok || !slices.Equal(bc, c.dims) {
		return fuseStep{}, false
	}
	k, ok := c.operand(oid, ot.Dims)
	if !ok {
		return fuseStep{}, false
	}
	st.opd = k
	return st, true
}

// fusedOperand is the template data of one input of shaders/fused.wgsl.
type fusedOperand struct {
	Buf  string // array element type: f32 or vec4<f32>
	Kind string // full (the whole chain shape), one (a single element), walk
	Vec  bool   // a walk read as vec4 (innermost stride 1)
	Rank int    // walk: merged dims
	Base int    // walk: index of its dims in params.shp (strides at Base+2)
}

// fusedStep is the template data of one step of shaders/fused.wgsl.
type fusedStep struct {
	Op    string // unary formula name (unary_formulas.tmpl), or binary op
	Unary bool
	Expr  string // a binary step's WGSL expression (fuseBinaryExpr)
}

// fusedVariant is the template data of shaders/fused.wgsl.
type fusedVariant struct {
	Operands     []fusedOperand
	Steps        []fusedStep // one assignment to v per step
	T            string      // f32 or vec4<f32>
	W            int
	NS, NShp     int // lengths of params.sc and params.shp
	OBind, PBind int
	WG           int
	Div          bool // a div step: the kernel renders div_rn (common.tmpl "num_div")
}

// fuseDispatch renders and records chain c writing tensor out.
func fuseDispatch(b Builder, c *fuseChain, out int32) error {
	v := fusedVariant{W: 1, WG: fusedWG, OBind: len(c.operands), PBind: len(c.operands) + 1}
	var p Params
	shapes := make([][2][]int64, len(c.operands))
	vec := c.numel%4 == 0
	for k, o := range c.operands {
		d, s := coalesce(c.dims, o.dims)
		shapes[k] = [2][]int64{d, s[0]}
		if slices.Max(s[0]) != 0 && d[0]%4 != 0 {
			vec = false
		}
	}
	if vec {
		v.W = 4
	}
	v.T = vecType("f32", v.W)
	var shp []uint32
	for k := range c.operands {
		d, s := shapes[k][0], shapes[k][1]
		o := fusedOperand{Buf: "f32", Rank: len(d)}
		switch {
		case slices.Max(s) == 0:
			o.Kind = "one"
		case len(d) == 1 && s[0] == 1:
			o.Kind = "full"
			o.Buf = v.T
		default:
			o.Kind, o.Base = "walk", len(shp)/4
			o.Vec = v.W == 4 && s[0] == 1
			if o.Vec {
				o.Buf = v.T
			}
			var dd, ss [ewMaxRank]uint32
			for i := range d {
				dd[i], ss[i] = uint32(d[i]), uint32(s[i])
			}
			shp = append(append(shp, dd[:]...), ss[:]...)
		}
		v.Operands = append(v.Operands, o)
	}
	for i, st := range c.steps {
		fs := fusedStep{Op: st.op, Unary: st.unary}
		if !st.unary {
			fs.Expr = fuseBinaryExpr(i, st, v.T)
			v.Div = v.Div || st.op == "div"
		}
		v.Steps = append(v.Steps, fs)
	}
	v.NS, v.NShp = len(c.steps), max(len(shp)/4, 1)
	n := uint32((c.numel + int64(v.W) - 1) / int64(v.W))
	p.U32(n).U32(uint32(c.numel)).U32(0).U32(0)
	for _, st := range c.steps {
		p.F32(st.a).F32(st.b).F32(st.alpha).F32(st.sc)
	}
	p.U32s(shp, v.NShp*4)
	k, err := shaders.Render("fused.wgsl", v, "main", shaders.Layout(len(c.operands), 1, true), fusedWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(n), fusedWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	ins := make([]int32, len(c.operands))
	for i, o := range c.operands {
		ins[i] = o.id
	}
	return b.Dispatch(k, ins, []int32{out}, p.Bytes(), grid)
}

// fuseBinaryExpr is binary step i's WGSL expression of the chain value v
// of type t. (A unary step is rendered by fused.wgsl from
// unary_formulas.tmpl.)
func fuseBinaryExpr(i int, st fuseStep, t string) string {
	P := fmt.Sprintf("params.sc[%d]", i)
	other := fmt.Sprintf("%s(%s.w)", t, P)
	if st.opd >= 0 {
		other = fmt.Sprintf("load%d(i)", st.opd)
	}
	x, y := "v", other
	if st.swap {
		x, y = y, x
	}
	alpha := P + ".z"
	// The common.tmpl helpers binary.wgsl calls too: names end in 4 for
	// vec4s.
	sfx := ""
	if t != "f32" {
		sfx = "4"
	}
	switch st.op {
	case "add":
		return fmt.Sprintf("%s + %s * %s", x, alpha, y)
	case "sub":
		return fmt.Sprintf("%s - %s * %s", x, alpha, y)
	case "rsub":
		return fmt.Sprintf("%s - %s * %s", y, alpha, x)
	case "mul":
		return fmt.Sprintf("%s * %s", x, y)
	case "div":
		return fmt.Sprintf("div_rn%s(%s, %s)", sfx, x, y)
	case "minimum":
		return fmt.Sprintf("fmin%s(%s, %s)", sfx, x, y)
	case "maximum":
		return fmt.Sprintf("fmax%s(%s, %s)", sfx, x, y)
	}
	panic("ops: fuse: no expression for binary op " + st.op)
}
