package ops

import (
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// Elementwise fusion. A float32 unary op (relu, sigmoid, tanh, gelu,
// clamp...) or a float32 binary op (add, sub, rsub, mul, div, minimum,
// maximum, with a tensor or a Scalar other) absorbs the ops that follow it
// in the chain while they form a fusable chain, and records one kernel
// (shaders/fused.wgsl) that computes them all per element:
//
//	t1 = add(x, bias); t2 = relu(t1); t3 = mul(t2, 0.5)  ->  one dispatch
//
// Op j joins the chain when it is the next op of the chain (nothing runs
// in between), its input is the previous step's output, that output has
// exactly one consumer and is not a graph output (ops.SoleConsumer), every
// dtype is float32, and, for a binary step, the other operand broadcasts to
// the chain's shape without growing it. The chain stops before a step whose
// output has a fixed buffer (a dedicated or prepacked tensor) that a tensor
// the kernel reads also has; tensors the exporter placed in shared objects
// never stop it, since the graph binds them after recording from the
// lifetimes the fused kernels give them (package memplan). Fusion is
// decided while recording, so a re-recording for new input shapes decides
// again.
//
// The fused kernel evaluates the same float32 formulas in the same order as
// unary.wgsl and binary.wgsl, so fused and unfused results agree to
// rounding.

// Fusion is on unless the load's Config says NoElementwiseFusion
// (benchmarks and tests of the unfused chain).

const (
	// fuseMaxSteps bounds a fused kernel's length (LLVM compile time grows
	// with it; past a few dozen steps the dispatch saved is noise).
	fuseMaxSteps = 64
	// fuseMaxOperands keeps inputs + the output within the default limit of
	// 8 storage buffers per shader stage.
	fuseMaxOperands = 7
	fusedWG         = 256
)

// bufferSharer is implemented by builders that can tell whether two
// tensors share a buffer (the GPU graph). Without it nothing is fused.
type bufferSharer interface {
	SameBuffer(x, y int32) bool
}

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

// fuseBinaryName is the fusable op name of binary op and layout, or "".
func fuseBinaryName(op string, layout binaryLayout) string {
	for name, fb := range fuseBinary {
		if fb.op == op && fb.layout == layout {
			return name
		}
	}
	return ""
}

type fuseBin struct {
	op     string
	layout binaryLayout
}

func init() {
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

// fuseUnaryHead starts a chain at unary op name (short name op, already
// checked by unaryTypes into v and p) and fuses what follows. done reports
// that the chain was recorded; otherwise the caller records its op alone.
func fuseUnaryHead(b Builder, name string, args []int32, v unaryVariant, p unaryParams, in Tensor) (done bool, err error) {
	if v.X != "f32" || v.Y != "f32" || v.S != "f32" {
		return false, nil
	}
	if _, ok := fuseUnary[name]; !ok {
		return false, nil
	}
	c := &fuseChain{dims: in.Dims, numel: in.Numel}
	c.operand(args[0], in.Dims)
	c.steps = append(c.steps, fuseStep{unary: true, op: v.Op, a: p.AF, b: p.BF})
	return fuseFrom(b, name, args, c)
}

// fuseBinaryHead starts a chain at a float32 binary op; self and other
// (nil for a Scalar op) are its operands, out its output with the live
// broadcast shape set.
func fuseBinaryHead(b Builder, name string, args []int32, op string, self Tensor, other *Tensor, out Tensor, p ewParams) (done bool, err error) {
	if _, ok := fuseBinary[name]; !ok {
		return false, nil
	}
	c := &fuseChain{dims: out.Dims, numel: out.Numel}
	if _, ok := c.operand(args[0], self.Dims); !ok {
		return false, nil
	}
	st := fuseStep{op: op, alpha: p.AlphaF, sc: p.SF, opd: -1}
	if other != nil {
		k, ok := c.operand(args[1], other.Dims)
		if !ok {
			return false, nil
		}
		st.opd = k
	}
	c.steps = append(c.steps, st)
	return fuseFrom(b, name, args, c)
}

// fuseFrom extends chain c, whose first op is name(args), with the ops
// that follow, and records it when at least one op joined.
func fuseFrom(b Builder, name string, args []int32, c *fuseChain) (bool, error) {
	if configOf(b).NoElementwiseFusion || c.numel == 0 || c.numel >= 1<<32-4 {
		return false, nil
	}
	f, ok := b.(Fuser)
	sh, ok2 := b.(bufferSharer)
	if !ok || !ok2 {
		return false, nil
	}
	type joined struct {
		index    int
		out      int32
		outArg   int
		operands int // len(c.operands) with this step
	}
	var js []joined
	cur := args[len(args)-1]
	prev := -1
	for len(c.steps) < fuseMaxSteps {
		j, nm, a, ok := SoleConsumer(b, cur)
		if !ok {
			break
		}
		if prev < 0 {
			// The consumer must directly follow the first op: only then
			// does the fused kernel run where every step would have.
			pn, pa := f.OpAt(j - 1)
			if pn != name || !slices.Equal(pa, args) {
				break
			}
		} else if j != prev+1 {
			break
		}
		n := len(c.operands)
		st, ok := fuseParse(b, c, nm, a, cur)
		if !ok || len(c.operands) > fuseMaxOperands {
			c.operands = c.operands[:n]
			break
		}
		c.steps = append(c.steps, st)
		js = append(js, joined{index: j, out: a[len(a)-1], outArg: len(a) - 1, operands: len(c.operands)})
		prev, cur = j, a[len(a)-1]
	}
	// Keep the longest prefix whose output shares no buffer with a tensor
	// the kernel reads.
	for len(js) > 0 {
		last := js[len(js)-1]
		clash := false
		for _, o := range c.operands[:last.operands] {
			if sh.SameBuffer(o.id, last.out) {
				clash = true
			}
		}
		if !clash {
			break
		}
		js = js[:len(js)-1]
	}
	if len(js) == 0 {
		return false, nil
	}
	last := js[len(js)-1]
	c.steps = c.steps[:1+len(js)] // the first op, then the joined ones
	c.operands = c.operands[:last.operands]
	for _, x := range js {
		if _, err := Output(b, x.outArg, x.out, serialization.Float32, c.dims); err != nil {
			return false, err
		}
		if err := f.Absorb(x.index); err != nil {
			return false, err
		}
	}
	return true, fuseDispatch(b, c, last.out)
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
