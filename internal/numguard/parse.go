package numguard

import (
	"fmt"
	"strings"
)

// The syntax tree: only what the checks need (declarations, statements
// and expressions with their source spans), for the WGSL our kernels use.

// span is a node's byte range in the source.
type span struct{ start, end int }

func (s span) rng() span { return s }

type expr interface{ rng() span }

type (
	identExpr struct {
		span
		name string
	}
	litExpr struct {
		span
		text string
	}
	// callExpr is a function call, a value constructor (ctor set: the
	// constructed type, its template spelled out or implied) or a bitcast
	// (fn "bitcast", ctor the target type).
	callExpr struct {
		span
		fn   string
		ctor *typeSyn
		args []expr
	}
	binaryExpr struct {
		span
		op   string
		l, r expr
	}
	unaryExpr struct {
		span
		op string
		x  expr
	}
	indexExpr struct {
		span
		x, i expr
	}
	memberExpr struct {
		span
		x    expr
		name string
	}
	parenExpr struct {
		span
		x expr
	}
)

// typeSyn is a type as written: a name and its template arguments (types,
// or an expression for an array's size, or a word for a pointer's address
// space and access mode).
type typeSyn struct {
	name string
	args []*typeSyn
	size expr // array size, when given
}

func (t *typeSyn) String() string {
	if t == nil {
		return "<nil>"
	}
	if len(t.args) == 0 && t.size == nil {
		return t.name
	}
	var parts []string
	for _, a := range t.args {
		parts = append(parts, a.String())
	}
	if t.size != nil {
		parts = append(parts, "N")
	}
	return t.name + "<" + strings.Join(parts, ", ") + ">"
}

type stmt interface{}

type (
	blockStmt struct{ list []stmt }
	// declStmt is let, var or const.
	declStmt struct {
		span
		kind string
		name string
		typ  *typeSyn
		init expr
	}
	// assignStmt is =, a compound assignment, or ++/-- (rhs nil); lhs is
	// nil for the phony assignment _ = e.
	assignStmt struct {
		span
		op       string
		lhs, rhs expr
	}
	exprStmt struct{ x expr }
	ifStmt   struct {
		cond expr
		then *blockStmt
		els  stmt // nil, *ifStmt or *blockStmt
	}
	forStmt struct {
		init   stmt
		cond   expr
		update stmt
		body   *blockStmt
	}
	whileStmt struct {
		cond expr
		body *blockStmt
	}
	loopStmt struct {
		body, continuing *blockStmt
	}
	returnStmt  struct{ x expr }
	breakIfStmt struct{ cond expr }
	switchStmt  struct {
		x       expr
		clauses []caseClause
	}
	caseClause struct {
		sel  []expr // nil: default
		body *blockStmt
	}
	jumpStmt struct{ word string } // break, continue, discard
)

// Module-scope declarations.
type (
	structDecl struct {
		name   string
		fields []param
	}
	param struct {
		name string
		typ  *typeSyn
	}
	// globalDecl is a var, const or override at module scope.
	globalDecl struct {
		kind string
		name string
		typ  *typeSyn
		init expr
	}
	aliasDecl struct {
		name string
		typ  *typeSyn
	}
	fnDecl struct {
		span
		name   string
		params []param
		ret    *typeSyn
		body   *blockStmt
	}
)

type module struct {
	src     string
	structs []*structDecl
	globals []*globalDecl
	aliases []*aliasDecl
	fns     []*fnDecl
}

type parser struct {
	src  string
	toks []token
	i    int
}

// parseModule parses a WGSL source.
func parseModule(src string) (m *module, err error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			m, err = nil, pe
		}
	}()
	m = &module{src: src}
	for p.peek().kind != tEOF {
		p.topDecl(m)
	}
	return m, nil
}

type parseError struct {
	pos int
	msg string
	src string
}

func (e parseError) Error() string {
	line := 1 + strings.Count(e.src[:min(e.pos, len(e.src))], "\n")
	return fmt.Sprintf("line %d: %s", line, e.msg)
}

func (p *parser) fail(format string, a ...any) {
	panic(parseError{p.peek().pos, fmt.Sprintf(format, a...), p.src})
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) is(text string) bool {
	t := p.peek()
	return t.kind != tNum && t.text == text
}

func (p *parser) accept(text string) bool {
	if p.is(text) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expect(text string) token {
	if !p.is(text) {
		p.fail("want %q, have %q", text, p.peek().text)
	}
	return p.next()
}

func (p *parser) ident() string {
	t := p.peek()
	if t.kind != tIdent {
		p.fail("want an identifier, have %q", t.text)
	}
	return p.next().text
}

// closeTemplate consumes one '>' closing a template list, splitting '>>'
// and '>=' so that nested lists close one at a time.
func (p *parser) closeTemplate() {
	t := p.peek()
	switch t.text {
	case ">":
		p.next()
	case ">>", ">=", ">>=":
		p.toks[p.i] = token{tPunct, t.text[1:], t.pos + 1}
	default:
		p.fail("want '>' closing a template, have %q", t.text)
	}
}

// attrs skips attributes (@name or @name(...)).
func (p *parser) attrs() {
	for p.accept("@") {
		p.ident()
		if p.is("(") {
			p.skipParens()
		}
	}
}

// skipParens skips a balanced (...) group.
func (p *parser) skipParens() {
	p.expect("(")
	depth := 1
	for depth > 0 {
		t := p.next()
		switch {
		case t.kind == tEOF:
			p.fail("unbalanced parentheses")
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
		}
	}
}

func (p *parser) topDecl(m *module) {
	if p.accept(";") {
		return
	}
	p.attrs()
	switch t := p.peek(); t.text {
	case "enable", "requires", "diagnostic", "const_assert":
		for !p.accept(";") {
			if p.next().kind == tEOF {
				p.fail("unterminated directive")
			}
		}
	case "struct":
		p.next()
		s := &structDecl{name: p.ident()}
		p.expect("{")
		s.fields = p.params("}")
		p.accept(";")
		m.structs = append(m.structs, s)
	case "alias":
		p.next()
		a := &aliasDecl{name: p.ident()}
		p.expect("=")
		a.typ = p.typ()
		p.expect(";")
		m.aliases = append(m.aliases, a)
	case "var", "const", "override", "let":
		d := p.decl()
		p.expect(";")
		m.globals = append(m.globals, &globalDecl{kind: d.kind, name: d.name, typ: d.typ, init: d.init})
	case "fn":
		start := p.next().pos
		f := &fnDecl{name: p.ident()}
		p.expect("(")
		f.params = p.params(")")
		if p.accept("->") {
			p.attrs()
			f.ret = p.typ()
		}
		f.body = p.block()
		f.span = span{start, p.toks[p.i-1].pos + 1}
		m.fns = append(m.fns, f)
	default:
		p.fail("unexpected %q at module scope", t.text)
	}
}

// decl parses let/var/const/override name [: T] [= e] (no ';').
func (p *parser) decl() *declStmt {
	t := p.next()
	d := &declStmt{kind: t.text}
	d.start = t.pos
	if d.kind == "var" && p.is("<") {
		// var<storage, read> and friends: the address space does not
		// change the value type.
		p.next()
		for !p.is(">") {
			if p.next().kind == tEOF {
				p.fail("unterminated var template")
			}
		}
		p.next()
	}
	d.name = p.ident()
	if p.accept(":") {
		d.typ = p.typ()
	}
	if p.accept("=") {
		d.init = p.expr()
	}
	d.end = p.toks[p.i-1].pos + len(p.toks[p.i-1].text)
	return d
}

// templated are the type generators and builtins that take a template
// list in expressions.
var templated = map[string]bool{
	"vec2": true, "vec3": true, "vec4": true, "array": true, "ptr": true, "atomic": true, "bitcast": true,
	"mat2x2": true, "mat2x3": true, "mat2x4": true, "mat3x2": true, "mat3x3": true, "mat3x4": true,
	"mat4x2": true, "mat4x3": true, "mat4x4": true,
}

// typ parses a type.
func (p *parser) typ() *typeSyn {
	t := &typeSyn{name: p.ident()}
	if !p.is("<") {
		return t
	}
	p.next()
	switch t.name {
	case "array":
		t.args = append(t.args, p.typ())
		if p.accept(",") && !p.is(">") {
			t.size = p.exprNoGreater()
		}
	case "ptr":
		// ptr<space, T[, access]>
		t.args = append(t.args, &typeSyn{name: p.ident()})
		p.expect(",")
		t.args = append(t.args, p.typ())
		if p.accept(",") {
			t.args = append(t.args, &typeSyn{name: p.ident()})
		}
	default:
		t.args = append(t.args, p.typ())
		for p.accept(",") {
			t.args = append(t.args, p.typ())
		}
	}
	p.closeTemplate()
	return t
}

func (p *parser) block() *blockStmt {
	p.expect("{")
	b := &blockStmt{}
	for !p.accept("}") {
		if p.peek().kind == tEOF {
			p.fail("unterminated block")
		}
		if s := p.stmt(); s != nil {
			b.list = append(b.list, s)
		}
	}
	return b
}

func (p *parser) stmt() stmt {
	p.attrs()
	switch p.peek().text {
	case ";":
		p.next()
		return nil
	case "{":
		return p.block()
	case "let", "var", "const":
		d := p.decl()
		p.expect(";")
		return d
	case "if":
		return p.ifStmt()
	case "for":
		p.next()
		p.expect("(")
		f := &forStmt{}
		if !p.is(";") {
			f.init = p.simple()
		}
		p.expect(";")
		if !p.is(";") {
			f.cond = p.expr()
		}
		p.expect(";")
		if !p.is(")") {
			f.update = p.simple()
		}
		p.expect(")")
		f.body = p.block()
		return f
	case "while":
		p.next()
		w := &whileStmt{cond: p.expr()}
		w.body = p.block()
		return w
	case "loop":
		p.next()
		p.expect("{")
		l := &loopStmt{body: &blockStmt{}}
		for !p.accept("}") {
			if p.is("continuing") {
				p.next()
				l.continuing = p.block()
				continue
			}
			if s := p.stmt(); s != nil {
				l.body.list = append(l.body.list, s)
			}
		}
		return l
	case "switch":
		p.next()
		s := &switchStmt{x: p.expr()}
		p.attrs()
		p.expect("{")
		for !p.accept("}") {
			var c caseClause
			if p.accept("default") {
				p.accept(":")
			} else {
				p.expect("case")
				for !p.is(":") && !p.is("{") {
					if p.accept("default") {
						c.sel = append(c.sel, &identExpr{name: "default"})
					} else {
						c.sel = append(c.sel, p.expr())
					}
					if !p.accept(",") {
						break
					}
				}
				p.accept(":")
			}
			c.body = p.block()
			s.clauses = append(s.clauses, c)
		}
		return s
	case "return":
		p.next()
		r := &returnStmt{}
		if !p.is(";") {
			r.x = p.expr()
		}
		p.expect(";")
		return r
	case "break":
		p.next()
		if p.accept("if") {
			b := &breakIfStmt{cond: p.expr()}
			p.expect(";")
			return b
		}
		p.expect(";")
		return &jumpStmt{"break"}
	case "continue", "discard":
		w := p.next().text
		p.expect(";")
		return &jumpStmt{w}
	}
	s := p.simple()
	p.expect(";")
	return s
}

func (p *parser) ifStmt() stmt {
	p.expect("if")
	s := &ifStmt{cond: p.expr()}
	s.then = p.block()
	if p.accept("else") {
		if p.is("if") {
			s.els = p.ifStmt()
		} else {
			s.els = p.block()
		}
	}
	return s
}

// simple parses an assignment, increment, declaration or call statement
// (no ';'): the forms allowed in a for header.
func (p *parser) simple() stmt {
	switch p.peek().text {
	case "let", "var", "const":
		return p.decl()
	}
	start := p.peek().pos
	var lhs expr
	if !p.accept("_") {
		lhs = p.expr()
	}
	t := p.peek()
	switch t.text {
	case "++", "--":
		p.next()
		return &assignStmt{span: span{start, t.pos + 2}, op: t.text, lhs: lhs}
	case "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ">>=", "<<=":
		p.next()
		rhs := p.expr()
		return &assignStmt{span: span{start, rhs.rng().end}, op: t.text, lhs: lhs, rhs: rhs}
	}
	if lhs == nil {
		p.fail("phony '_' without an assignment")
	}
	return &exprStmt{lhs}
}

// Binary operator precedence, loosest first (C's order, which agrees with
// WGSL's on every combination WGSL accepts).
var precedence = map[string]int{
	"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5,
	"==": 6, "!=": 6,
	"<": 7, ">": 7, "<=": 7, ">=": 7,
	"<<": 8, ">>": 8,
	"+": 9, "-": 9,
	"*": 10, "/": 10, "%": 10,
}

func (p *parser) expr() expr { return p.binary(1, false) }

// exprNoGreater parses an expression inside a template list, where '>'
// closes the list.
func (p *parser) exprNoGreater() expr { return p.binary(1, true) }

func (p *parser) binary(minPrec int, noGreater bool) expr {
	l := p.unary(noGreater)
	for {
		t := p.peek()
		if t.kind != tPunct {
			return l
		}
		prec, ok := precedence[t.text]
		if !ok || prec < minPrec || (noGreater && (t.text == ">" || t.text == ">>" || t.text == ">=")) {
			return l
		}
		p.next()
		r := p.binary(prec+1, noGreater)
		l = &binaryExpr{span: span{l.rng().start, r.rng().end}, op: t.text, l: l, r: r}
	}
}

func (p *parser) unary(noGreater bool) expr {
	t := p.peek()
	switch t.text {
	case "-", "!", "~", "&", "*":
		if t.kind == tPunct {
			p.next()
			x := p.unary(noGreater)
			return &unaryExpr{span: span{t.pos, x.rng().end}, op: t.text, x: x}
		}
	}
	return p.postfix(p.primary(noGreater))
}

func (p *parser) postfix(x expr) expr {
	for {
		switch {
		case p.is("["):
			p.next()
			i := p.expr()
			e := p.expect("]")
			x = &indexExpr{span: span{x.rng().start, e.pos + 1}, x: x, i: i}
		case p.is("."):
			p.next()
			t := p.peek()
			name := p.ident()
			x = &memberExpr{span: span{x.rng().start, t.pos + len(name)}, x: x, name: name}
		default:
			return x
		}
	}
}

func (p *parser) primary(noGreater bool) expr {
	t := p.peek()
	switch {
	case t.kind == tNum:
		p.next()
		return &litExpr{span: span{t.pos, t.pos + len(t.text)}, text: t.text}
	case t.text == "(":
		p.next()
		x := p.expr()
		e := p.expect(")")
		return &parenExpr{span: span{t.pos, e.pos + 1}, x: x}
	case t.kind == tIdent:
		if t.text == "true" || t.text == "false" {
			p.next()
			return &litExpr{span: span{t.pos, t.pos + len(t.text)}, text: t.text}
		}
		if templated[t.text] && p.peekAt(1).text == "<" {
			ts := p.typ()
			call := &callExpr{fn: ts.name, ctor: ts}
			if ts.name == "bitcast" {
				call.ctor = ts.args[0]
			}
			call.args = p.args()
			call.span = span{t.pos, p.toks[p.i-1].pos + 1}
			return call
		}
		p.next()
		if p.is("(") {
			call := &callExpr{fn: t.text}
			call.args = p.args()
			call.span = span{t.pos, p.toks[p.i-1].pos + 1}
			return call
		}
		return &identExpr{span: span{t.pos, t.pos + len(t.text)}, name: t.text}
	}
	p.fail("unexpected %q in an expression", t.text)
	return nil
}

func (p *parser) args() []expr {
	p.expect("(")
	var out []expr
	for !p.accept(")") {
		out = append(out, p.expr())
		if !p.accept(",") {
			p.expect(")")
			break
		}
	}
	return out
}

// params reads a comma-separated list of attributed "name: type" entries
// (a struct's fields or a function's parameters) up to and including
// closing, a trailing comma allowed.
func (p *parser) params(closing string) []param {
	var out []param
	for !p.accept(closing) {
		p.attrs()
		a := param{name: p.ident()}
		p.expect(":")
		a.typ = p.typ()
		out = append(out, a)
		if !p.accept(",") {
			p.expect(closing)
			break
		}
	}
	return out
}
