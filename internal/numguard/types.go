package numguard

import (
	"fmt"
	"strings"
)

// kind is a value type's shape.
type kind uint8

const (
	kUnknown  kind = iota
	kScalar        // scalar: f32, f16, i32, u32, bool
	kVec           // vecN<scalar>
	kMat           // matCxR<scalar>
	kArray         // array<elem>
	kStruct        // a struct, by name
	kPtr           // ptr<..., elem>
	kAtomic        // atomic<elem>
	kAbsInt        // an abstract integer (an unsuffixed literal, a const)
	kAbsFloat      // an abstract float
	kVoid
)

// vtype is an inferred value type.
type vtype struct {
	kind   kind
	scalar string // kScalar, kVec, kMat
	n      int    // kVec size, kMat columns
	rows   int    // kMat
	elem   *vtype // kArray, kPtr, kAtomic
	name   string // kStruct
}

var (
	tUnknown  = &vtype{kind: kUnknown}
	tVoid     = &vtype{kind: kVoid}
	tAbsInt   = &vtype{kind: kAbsInt}
	tAbsFloat = &vtype{kind: kAbsFloat}
	tBool     = scalarT("bool")
	tF32      = scalarT("f32")
	tI32      = scalarT("i32")
	tU32      = scalarT("u32")
)

func scalarT(s string) *vtype { return &vtype{kind: kScalar, scalar: s} }

func vecT(n int, s string) *vtype { return &vtype{kind: kVec, n: n, scalar: s} }

func (t *vtype) String() string {
	switch t.kind {
	case kScalar:
		return t.scalar
	case kVec:
		return fmt.Sprintf("vec%d<%s>", t.n, t.scalar)
	case kMat:
		return fmt.Sprintf("mat%dx%d<%s>", t.n, t.rows, t.scalar)
	case kArray:
		return "array<" + t.elem.String() + ">"
	case kStruct:
		return t.name
	case kPtr:
		return "ptr<" + t.elem.String() + ">"
	case kAtomic:
		return "atomic<" + t.elem.String() + ">"
	case kAbsInt:
		return "abstract-int"
	case kAbsFloat:
		return "abstract-float"
	case kVoid:
		return "void"
	}
	return "unknown"
}

// isFloat reports whether values of t are (run-time) floats: f32 or f16
// scalars, vectors and matrices. Abstract floats are constants the
// compiler evaluates, so they are not.
func (t *vtype) isFloat() bool {
	return (t.kind == kScalar || t.kind == kVec || t.kind == kMat) && (t.scalar == "f32" || t.scalar == "f16")
}

func (t *vtype) abstract() bool { return t.kind == kAbsInt || t.kind == kAbsFloat }

// deref strips pointers (WGSL loads through them implicitly here).
func (t *vtype) deref() *vtype {
	for t.kind == kPtr {
		t = t.elem
	}
	return t
}

// concrete is the type a let or var gives an abstract value: i32 for an
// abstract integer, f32 for an abstract float.
func (t *vtype) concrete() *vtype {
	switch t.kind {
	case kAbsInt:
		return tI32
	case kAbsFloat:
		return tF32
	}
	return t
}

// component is a scalar's, vector's or matrix's component type.
func (t *vtype) component() *vtype {
	switch t.kind {
	case kVec, kMat:
		return scalarT(t.scalar)
	}
	return t
}

// withScalar returns t's shape with component type s.
func (t *vtype) withScalar(s string) *vtype {
	switch t.kind {
	case kVec:
		return vecT(t.n, s)
	case kScalar:
		return scalarT(s)
	}
	return t
}

// unify is the type of a binary arithmetic result or of a builtin's
// common argument type: a concrete operand wins over an abstract one, a
// vector over a scalar (splat), abstract float over abstract int.
func unify(a, b *vtype) *vtype {
	a, b = a.deref(), b.deref()
	switch {
	case a.kind == kUnknown || b.kind == kUnknown:
		return tUnknown
	case a.abstract() && b.abstract():
		if a.kind == kAbsFloat || b.kind == kAbsFloat {
			return tAbsFloat
		}
		return tAbsInt
	case a.abstract():
		return b
	case b.abstract():
		return a
	case a.kind == kVec || a.kind == kMat:
		return a
	}
	return b
}

// resolve turns a written type into a value type.
func (c *checker) resolve(t *typeSyn) *vtype {
	if t == nil {
		return tUnknown
	}
	switch t.name {
	case "f32", "f16", "i32", "u32", "bool":
		return scalarT(t.name)
	case "vec2", "vec3", "vec4":
		n := int(t.name[3] - '0')
		if len(t.args) == 0 {
			return &vtype{kind: kVec, n: n} // component type from the arguments
		}
		return vecT(n, c.resolve(t.args[0]).scalar)
	case "array":
		if len(t.args) == 0 {
			return &vtype{kind: kArray, elem: tUnknown}
		}
		return &vtype{kind: kArray, elem: c.resolve(t.args[0])}
	case "ptr":
		return &vtype{kind: kPtr, elem: c.resolve(t.args[1])}
	case "atomic":
		return &vtype{kind: kAtomic, elem: c.resolve(t.args[0])}
	}
	if strings.HasPrefix(t.name, "mat") && len(t.name) >= 6 && t.name[4] == 'x' {
		m := &vtype{kind: kMat, n: int(t.name[3] - '0'), rows: int(t.name[5] - '0'), scalar: "f32"}
		if len(t.args) > 0 {
			m.scalar = c.resolve(t.args[0]).scalar
		} else if len(t.name) == 7 {
			m.scalar = map[byte]string{'f': "f32", 'h': "f16"}[t.name[6]]
		}
		return m
	}
	// Predeclared aliases: vec4f, vec3i, vec2u, vec4h.
	if len(t.name) == 5 && strings.HasPrefix(t.name, "vec") && t.name[3] >= '2' && t.name[3] <= '4' {
		if s, ok := map[byte]string{'f': "f32", 'i': "i32", 'u': "u32", 'h': "f16"}[t.name[4]]; ok {
			return vecT(int(t.name[3]-'0'), s)
		}
	}
	if a, ok := c.aliases[t.name]; ok {
		return c.resolve(a)
	}
	if _, ok := c.structs[t.name]; ok {
		return &vtype{kind: kStruct, name: t.name}
	}
	return tUnknown
}

// literalType types a numeric or bool literal.
func literalType(text string) *vtype {
	if text == "true" || text == "false" {
		return tBool
	}
	hex := strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X")
	switch text[len(text)-1] {
	case 'u':
		return tU32
	case 'i':
		return tI32
	case 'h':
		return scalarT("f16")
	case 'f':
		if !hex {
			return tF32
		}
	}
	if hex {
		if strings.ContainsAny(text, ".pP") {
			return tAbsFloat
		}
		return tAbsInt
	}
	if strings.ContainsAny(text, ".eE") {
		return tAbsFloat
	}
	return tAbsInt
}

// swizzle types a vector member access (.x, .xy, .rgba).
func swizzle(v *vtype, name string) *vtype {
	for _, ch := range name {
		if !strings.ContainsRune("xyzwrgba", ch) {
			return tUnknown
		}
	}
	if len(name) == 1 {
		return scalarT(v.scalar)
	}
	return vecT(len(name), v.scalar)
}

// builtinType is the result type of builtin fn applied to args, and false
// when fn is not a builtin this checker knows.
func builtinType(fn string, args []*vtype) (*vtype, bool) {
	first := tUnknown
	if len(args) > 0 {
		first = args[0].deref()
	}
	common := func() *vtype {
		if len(args) == 0 {
			return tUnknown
		}
		t := args[0]
		for _, a := range args[1:] {
			t = unify(t, a)
		}
		return t
	}
	switch fn {
	case "abs", "sign", "floor", "ceil", "round", "trunc", "fract", "sqrt", "inverseSqrt",
		"exp", "exp2", "log", "log2", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos",
		"atan", "asinh", "acosh", "atanh", "atan2", "pow", "min", "max", "clamp", "saturate", "mix",
		"fma", "step", "smoothstep", "countLeadingZeros", "countTrailingZeros", "countOneBits",
		"reverseBits", "firstLeadingBit", "firstTrailingBit", "radians", "degrees", "normalize",
		"cross", "reflect", "faceForward", "quantizeToF16", "dpdx", "dpdy", "fwidth":
		return common(), true
	case "extractBits", "insertBits", "ldexp":
		return first, true
	case "select":
		if len(args) < 2 {
			return tUnknown, true
		}
		return unify(args[0], args[1]), true
	case "dot", "length", "distance", "determinant":
		return first.component(), true
	case "all", "any":
		return tBool, true
	case "arrayLength":
		return tU32, true
	case "pack2x16float", "pack4x8unorm", "pack4x8snorm", "pack2x16snorm", "pack2x16unorm",
		"pack4xI8", "pack4xU8", "pack4xI8Clamp", "pack4xU8Clamp", "dot4U8Packed":
		return tU32, true
	case "dot4I8Packed":
		return tI32, true
	case "unpack2x16float", "unpack2x16snorm", "unpack2x16unorm":
		return vecT(2, "f32"), true
	case "unpack4x8unorm", "unpack4x8snorm":
		return vecT(4, "f32"), true
	case "unpack4xI8":
		return vecT(4, "i32"), true
	case "unpack4xU8":
		return vecT(4, "u32"), true
	case "workgroupBarrier", "storageBarrier", "textureBarrier", "atomicStore":
		return tVoid, true
	case "atomicLoad", "atomicAdd", "atomicSub", "atomicMax", "atomicMin", "atomicAnd", "atomicOr",
		"atomicXor", "atomicExchange":
		if first.kind == kAtomic {
			return first.elem, true
		}
		return tUnknown, true
	case "workgroupUniformLoad":
		return first, true
	}
	return nil, false
}
