package numguard

import (
	"fmt"
	"sort"
	"strings"
)

// Finding is one float operation that WGSL lets an adapter compute
// inexactly (or drop NaN from), written bare in a kernel instead of
// through the shared helpers.
type Finding struct {
	Kernel string // the kernel's name (file and variant)
	Func   string // the WGSL function it is in ("" at module scope)
	Line   int    // 1-based line in the rendered source
	Op     string // min, max, clamp, saturate, /, %, sin, cos, tan, or "helper" (a changed helper)
	Expr   string // the expression, whitespace collapsed
	Why    string
	pos    int // byte offset in the source, for ordering
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: fn %s, line %d: %s: %s (%s)", f.Kernel, f.Func, f.Line, f.Op, f.Expr, f.Why)
}

// Allow is one allow-list entry: a float operation that may stay bare,
// with the reason. It matches a finding in function Func of kernel file
// File ("" for any file) whose expression is Expr (whitespace collapsed).
type Allow struct {
	File, Func, Expr string
	Reason           string
}

// Guard checks kernels against the numerics rules (see package doc).
type Guard struct {
	helpers map[string]map[string]bool // helper name → its canonical texts
	allow   []Allow
	used    []bool
}

// New returns a Guard that exempts the functions in helpers (name → every
// text the shared templates render for it; a kernel function of that
// name must be one of them, character for character up to whitespace)
// and the operations allow lists.
func New(helpers map[string][]string, allow []Allow) *Guard {
	g := &Guard{helpers: map[string]map[string]bool{}, allow: allow, used: make([]bool, len(allow))}
	for name, texts := range helpers {
		g.helpers[name] = map[string]bool{}
		for _, t := range texts {
			g.helpers[name][Normalize(t)] = true
		}
	}
	return g
}

// Unused returns the allow-list entries no checked kernel has needed.
func (g *Guard) Unused() []Allow {
	var out []Allow
	for i, u := range g.used {
		if !u {
			out = append(out, g.allow[i])
		}
	}
	return out
}

// Normalize collapses whitespace runs to one space.
func Normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// FileOf returns the kernel file of a kernel name ("softmax.wgsl{...}" →
// "softmax.wgsl").
func FileOf(kernel string) string {
	if i := strings.Index(kernel, ".wgsl"); i >= 0 {
		return kernel[:i+len(".wgsl")]
	}
	return kernel
}

// Check parses src, the rendered source of kernel, and returns its bare
// float operations that no allow-list entry covers. An error means the
// source is not WGSL this checker understands.
func (g *Guard) Check(kernel, src string) ([]Finding, error) {
	m, err := parseModule(src)
	if err != nil {
		return nil, fmt.Errorf("numguard: %s: %w", kernel, err)
	}
	c := &checker{g: g, m: m, kernel: kernel, file: FileOf(kernel), structs: map[string]*structDecl{},
		aliases: map[string]*typeSyn{}, globals: map[string]*globalDecl{}, gtypes: map[string]*vtype{},
		fns: map[string]*fnDecl{}, seen: map[span]bool{}}
	for _, s := range m.structs {
		c.structs[s.name] = s
	}
	for _, a := range m.aliases {
		c.aliases[a.name] = a.typ
	}
	for _, v := range m.globals {
		c.globals[v.name] = v
	}
	for _, f := range m.fns {
		c.fns[f.name] = f
	}
	for _, v := range m.globals {
		c.globalType(v.name)
	}
	for _, f := range m.fns {
		c.checkFn(f)
	}
	sort.Slice(c.out, func(i, j int) bool { return c.out[i].pos < c.out[j].pos })
	return c.out, nil
}

type checker struct {
	g       *Guard
	m       *module
	kernel  string
	file    string
	structs map[string]*structDecl
	aliases map[string]*typeSyn
	globals map[string]*globalDecl
	gtypes  map[string]*vtype
	fns     map[string]*fnDecl
	scopes  []map[string]*vtype
	fn      string
	seen    map[span]bool
	out     []Finding
}

func (c *checker) line(pos int) int { return 1 + strings.Count(c.m.src[:pos], "\n") }

func (c *checker) text(s span) string { return Normalize(c.m.src[s.start:s.end]) }

// report records a finding at s unless the allow list covers it.
func (c *checker) report(s span, op, why string) {
	if c.seen[s] {
		return
	}
	c.seen[s] = true
	text := c.text(s)
	for i, a := range c.g.allow {
		if (a.File == "" || a.File == c.file) && a.Func == c.fn && a.Expr == text {
			c.g.used[i] = true
			return
		}
	}
	c.out = append(c.out, Finding{Kernel: c.kernel, Func: c.fn, Line: c.line(s.start), Op: op, Expr: text, Why: why, pos: s.start})
}

// globalType types a module-scope declaration (lazily: consts may refer
// to each other in any order).
func (c *checker) globalType(name string) *vtype {
	if t, ok := c.gtypes[name]; ok {
		return t
	}
	v := c.globals[name]
	c.gtypes[name] = tUnknown // a cycle stays unknown
	var t *vtype
	switch {
	case v.typ != nil:
		t = c.resolve(v.typ)
		if v.init != nil {
			c.typeOf(v.init)
		}
	case v.init != nil:
		t = c.typeOf(v.init)
		if v.kind != "const" {
			t = t.concrete()
		}
	default:
		t = tUnknown
	}
	c.gtypes[name] = t
	return t
}

func (c *checker) checkFn(f *fnDecl) {
	c.fn = f.name
	if texts, ok := c.g.helpers[f.name]; ok {
		if !texts[Normalize(c.m.src[f.start:f.end])] {
			c.report(span{f.start, f.start + len("fn ") + len(f.name)}, "helper",
				"a function named like a shared numerics helper differs from every text common.tmpl renders for it")
		}
		return
	}
	c.scopes = []map[string]*vtype{{}}
	for _, p := range f.params {
		c.scopes[0][p.name] = c.resolve(p.typ)
	}
	c.block(f.body)
	c.scopes = nil
}

func (c *checker) push() { c.scopes = append(c.scopes, map[string]*vtype{}) }
func (c *checker) pop()  { c.scopes = c.scopes[:len(c.scopes)-1] }

func (c *checker) declare(name string, t *vtype) { c.scopes[len(c.scopes)-1][name] = t }

func (c *checker) lookup(name string) *vtype {
	for i := len(c.scopes) - 1; i >= 0; i-- {
		if t, ok := c.scopes[i][name]; ok {
			return t
		}
	}
	if _, ok := c.globals[name]; ok {
		return c.globalType(name)
	}
	return tUnknown
}

func (c *checker) block(b *blockStmt) {
	if b == nil {
		return
	}
	c.push()
	for _, s := range b.list {
		c.stmt(s)
	}
	c.pop()
}

func (c *checker) stmt(s stmt) {
	switch s := s.(type) {
	case nil:
	case *blockStmt:
		c.block(s)
	case *declStmt:
		var t *vtype
		if s.init != nil {
			t = c.typeOf(s.init)
		}
		if s.typ != nil {
			t = c.resolve(s.typ)
		} else if t == nil {
			t = tUnknown
		} else if s.kind != "const" {
			t = t.concrete()
		}
		c.declare(s.name, t)
	case *assignStmt:
		var lt *vtype
		if s.lhs != nil {
			lt = c.typeOf(s.lhs)
		}
		if s.rhs != nil {
			c.typeOf(s.rhs)
		}
		if (s.op == "/=" || s.op == "%=") && lt != nil {
			c.checkDivision(s.span, s.op[:1], lt.deref())
		}
	case *exprStmt:
		c.typeOf(s.x)
	case *ifStmt:
		c.typeOf(s.cond)
		c.block(s.then)
		c.stmt(s.els)
	case *forStmt:
		c.push()
		c.stmt(s.init)
		if s.cond != nil {
			c.typeOf(s.cond)
		}
		c.stmt(s.update)
		c.block(s.body)
		c.pop()
	case *whileStmt:
		c.typeOf(s.cond)
		c.block(s.body)
	case *loopStmt:
		// continuing sees the body's declarations.
		c.push()
		for _, b := range s.body.list {
			c.stmt(b)
		}
		c.block(s.continuing)
		c.pop()
	case *returnStmt:
		if s.x != nil {
			c.typeOf(s.x)
		}
	case *breakIfStmt:
		c.typeOf(s.cond)
	case *switchStmt:
		c.typeOf(s.x)
		for _, cl := range s.clauses {
			for _, e := range cl.sel {
				if _, ok := e.(*identExpr); !ok {
					c.typeOf(e)
				}
			}
			c.block(cl.body)
		}
	case *jumpStmt:
	default:
		panic(fmt.Sprintf("numguard: statement %T", s))
	}
}

// checkDivision reports a float division or remainder.
func (c *checker) checkDivision(s span, op string, t *vtype) {
	switch {
	case t.isFloat():
		c.report(s, op, "WGSL allows 2.5 ulp for float "+op+": use div_rn (common.tmpl) or allow-list it with a reason")
	case t.kind == kUnknown:
		c.report(s, op, "cannot type the operands: write them so they type, or allow-list it")
	}
}

// typeOf infers e's type and reports the bare float operations in it.
func (c *checker) typeOf(e expr) *vtype {
	switch e := e.(type) {
	case *litExpr:
		return literalType(e.text)
	case *identExpr:
		return c.lookup(e.name)
	case *parenExpr:
		return c.typeOf(e.x)
	case *unaryExpr:
		t := c.typeOf(e.x)
		switch e.op {
		case "&":
			return &vtype{kind: kPtr, elem: t}
		case "*":
			return t.deref()
		case "!":
			if d := t.deref(); d.kind == kVec {
				return d.withScalar("bool")
			}
			return tBool
		}
		return t.deref()
	case *binaryExpr:
		l, r := c.typeOf(e.l).deref(), c.typeOf(e.r).deref()
		switch e.op {
		case "&&", "||":
			return tBool
		case "==", "!=", "<", ">", "<=", ">=":
			if u := unify(l, r); u.kind == kVec {
				return u.withScalar("bool")
			}
			return tBool
		case "<<", ">>":
			return l
		case "/", "%":
			u := unify(l, r)
			if !(l.abstract() && r.abstract()) {
				c.checkDivision(e.span, e.op, u)
			}
			return u
		}
		return unify(l, r)
	case *indexExpr:
		c.typeOf(e.i)
		t := c.typeOf(e.x).deref()
		switch t.kind {
		case kArray:
			return t.elem
		case kVec:
			return scalarT(t.scalar)
		case kMat:
			return vecT(t.rows, t.scalar)
		}
		return tUnknown
	case *memberExpr:
		t := c.typeOf(e.x).deref()
		switch t.kind {
		case kVec:
			return swizzle(t, e.name)
		case kStruct:
			for _, f := range c.structs[t.name].fields {
				if f.name == e.name {
					return c.resolve(f.typ)
				}
			}
		}
		return tUnknown
	case *callExpr:
		return c.call(e)
	}
	panic(fmt.Sprintf("numguard: expression %T", e))
}

// floatCalls are the builtins whose float results WGSL leaves inexact or
// NaN-unsafe: min/max/clamp/saturate (NaN undefined), and the
// trigonometric functions (bounded only on [-pi, pi]).
var floatCalls = map[string]string{
	"min":      "WGSL leaves min's result with a NaN operand undefined: use fmin_ (common.tmpl)",
	"max":      "WGSL leaves max's result with a NaN operand undefined: use fmax_ (common.tmpl)",
	"clamp":    "WGSL leaves clamp's result with NaN undefined: use fclamp_ (common.tmpl)",
	"saturate": "WGSL leaves saturate's result with NaN undefined: use fclamp_ (common.tmpl)",
}

var trigCalls = map[string]bool{"sin": true, "cos": true, "tan": true}

func (c *checker) call(e *callExpr) *vtype {
	args := make([]*vtype, len(e.args))
	for i, a := range e.args {
		args[i] = c.typeOf(a)
	}
	if e.ctor != nil {
		t := c.resolve(e.ctor)
		if e.fn != "bitcast" {
			t = c.completeCtor(t, args)
		}
		return t
	}
	if trigCalls[e.fn] {
		c.report(e.span, e.fn, "WGSL bounds "+e.fn+"'s error only on [-pi, pi]: use "+e.fn+"_ (common.tmpl), which reduces the argument")
	}
	if f, ok := c.fns[e.fn]; ok {
		if f.ret == nil {
			return tVoid
		}
		return c.resolve(f.ret)
	}
	if t, ok := builtinType(e.fn, args); ok {
		if why, bad := floatCalls[e.fn]; bad {
			switch {
			case t.isFloat():
				c.report(e.span, e.fn, why)
			case t.kind == kUnknown:
				c.report(e.span, e.fn, "cannot type the arguments: write them so they type, or allow-list it")
			}
		}
		return t
	}
	// A constructor spelled without a template: f32(x), vec4(x), State(...).
	t := c.resolve(&typeSyn{name: e.fn})
	if t.kind != kUnknown {
		return c.completeCtor(t, args)
	}
	return tUnknown
}

// completeCtor fills in the component type of vecN(...) and array(...)
// from the arguments.
func (c *checker) completeCtor(t *vtype, args []*vtype) *vtype {
	switch {
	case t.kind == kVec && t.scalar == "":
		if len(args) == 0 {
			return vecT(t.n, "f32") // vec4() is a zero vector of abstract ints; f32 is what we write
		}
		u := args[0]
		for _, a := range args[1:] {
			u = unify(u, a)
		}
		u = u.deref().concrete()
		if u.kind == kUnknown {
			return tUnknown
		}
		return vecT(t.n, u.scalar)
	case t.kind == kArray && t.elem.kind == kUnknown && len(args) > 0:
		return &vtype{kind: kArray, elem: args[0].concrete()}
	}
	return t
}
