package reference

import (
	"fmt"
	"math"
	"math/big"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// The elementwise unary ops, each [self, <scalars>, out], out shaped like
// self. Values are computed in float64 from the formulas torch documents
// and rounded to out's dtype by Env.Set.
func init() {
	simple := map[string]func(float64) float64{
		"abs":  math.Abs,
		"neg":  func(v float64) float64 { return -v },
		"exp":  math.Exp,
		"sqrt": math.Sqrt,
		"rsqrt": func(v float64) float64 {
			return 1 / math.Sqrt(v)
		},
		"sin":   math.Sin,
		"cos":   math.Cos,
		"tan":   math.Tan,
		"tanh":  math.Tanh,
		"log10": math.Log10,
		"round": math.RoundToEven,
		"sigmoid": func(v float64) float64 {
			if v >= 0 {
				return 1 / (1 + math.Exp(-v))
			}
			ev := math.Exp(v)
			return ev / (1 + ev)
		},
		// relu, relu6, hardswish, hardsigmoid keep NaN, as torch does.
		"relu": func(v float64) float64 {
			if v < 0 {
				return 0
			}
			return v
		},
		"relu6": func(v float64) float64 { return clampNaN(v, 0, 6) },
		// torch forms x*relu6(x+3) in float32 before dividing by 6, so
		// it overflows for x near the float32 maximum.
		"hardswish":   func(v float64) float64 { return float64(float32(v*clampNaN(v+3, 0, 6))) / 6 },
		"hardsigmoid": func(v float64) float64 { return clampNaN(v+3, 0, 6) / 6 },
		"logical_not": func(v float64) float64 {
			if v == 0 {
				return 1
			}
			return 0
		},
	}
	for name, f := range simple {
		Register("aten."+name+".default", func(e *Env, a []int32) error { return mapOp(e, a, 2, f) })
	}
	Register("aten.gelu.default", geluRef)
	Register("aten.hardtanh.default", func(e *Env, a []int32) error { return clampRef(e, a) })
	Register("aten.clamp.default", func(e *Env, a []int32) error { return clampRef(e, a) })
	Register("aten.hardshrink.default", func(e *Env, a []int32) error {
		l, err := e.Float(a[1])
		if err != nil {
			return err
		}
		l = float64(float32(l))
		return mapOp(e, a, 3, func(v float64) float64 {
			if v >= -l && v <= l {
				return 0
			}
			return v
		})
	})
	Register("aten.leaky_relu.default", func(e *Env, a []int32) error {
		s, err := e.Float(a[1])
		if err != nil {
			return err
		}
		return mapOp(e, a, 3, func(v float64) float64 {
			if v > 0 {
				return v
			}
			return v * s
		})
	})
	Register("aten.pow.Tensor_Scalar", powRef)
	Register("aten.bitwise_not.default", bitwiseNotRef)
}

// clampNaN is min(max(v, lo), hi) letting a NaN v through.
func clampNaN(v, lo, hi float64) float64 {
	if v < lo {
		v = lo
	}
	if v > hi {
		v = hi
	}
	return v
}

// mapOp applies f to every element of args[0] into args[n-1].
func mapOp(e *Env, args []int32, n int, f func(float64) float64) error {
	if len(args) != n {
		return fmt.Errorf("%d args, want %d", len(args), n)
	}
	x, err := e.In(args[0])
	if err != nil {
		return err
	}
	y, err := e.NewOut(args[n-1], x.Shape)
	if err != nil {
		return err
	}
	for i, v := range x.V {
		y.V[i] = f(v)
	}
	e.Set(args[n-1], y)
	return nil
}

// geluRef: x*0.5*(1+erf(x/sqrt2)) written with erfc, which keeps the
// negative tail exact; or the tanh approximation
// 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))).
func geluRef(e *Env, a []int32) error {
	approx := "none"
	if len(a) == 3 && !e.IsNull(a[1]) {
		s, err := e.String(a[1])
		if err != nil {
			return err
		}
		approx = s
	}
	switch approx {
	case "none":
		return mapOp(e, a, 3, func(v float64) float64 { return v * 0.5 * math.Erfc(-v/math.Sqrt2) })
	case "tanh":
		return mapOp(e, a, 3, func(v float64) float64 {
			return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
		})
	}
	return fmt.Errorf("approximate %q", approx)
}

// clampRef: hardtanh [self, min_val, max_val, out] and clamp [self, min,
// max, out] (Null bounds are open). Bounds are cast to float32 for a
// float32 out, as torch casts the scalars; int32 bounds are integral and
// compared as they are (a bound past the int32 range clamps nothing).
func clampRef(e *Env, a []int32) error {
	if len(a) != 4 {
		return fmt.Errorf("%d args, want 4", len(a))
	}
	dt, _, err := e.Decl(a[3])
	if err != nil {
		return err
	}
	b := [2]float64{math.Inf(-1), math.Inf(1)}
	for k := range b {
		if e.IsNull(a[1+k]) {
			continue
		}
		if b[k], err = e.Float(a[1+k]); err != nil {
			return err
		}
		if dt == serialization.Float32 {
			b[k] = Round(dt, b[k])
		}
	}
	return mapOp(e, a, 4, func(v float64) float64 { return clampNaN(v, b[0], b[1]) })
}

// powRef follows torch: an int32 result is the wrapped integer power; a
// float32 one uses the exponent cast to float32, sqrt for ±0.5, and C's
// pow otherwise.
func powRef(e *Env, a []int32) error {
	if len(a) != 3 {
		return fmt.Errorf("%d args, want 3", len(a))
	}
	dt, _, err := e.Decl(a[2])
	if err != nil {
		return err
	}
	p, err := e.Float(a[1])
	if err != nil {
		return err
	}
	if dt == serialization.Int32 {
		exp := big.NewInt(int64(p))
		mod := new(big.Int).Lsh(big.NewInt(1), 32)
		return mapOp(e, a, 3, func(v float64) float64 {
			base := new(big.Int).Mod(big.NewInt(int64(v)), mod)
			r := new(big.Int).Exp(base, exp, mod)
			return float64(int32(uint32(r.Uint64())))
		})
	}
	p = float64(float32(p))
	return mapOp(e, a, 3, func(v float64) float64 {
		switch p {
		case 0.5:
			return math.Sqrt(v)
		case -0.5:
			return 1 / math.Sqrt(v)
		}
		return math.Pow(v, p)
	})
}

// bitwiseNotRef: ~x for integers of the tensor's width, !x for bool.
func bitwiseNotRef(e *Env, a []int32) error {
	if len(a) != 2 {
		return fmt.Errorf("%d args, want 2", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	var f func(float64) float64
	switch x.DType {
	case serialization.Bool:
		f = func(v float64) float64 { return 1 - v }
	case serialization.Uint8:
		f = func(v float64) float64 { return float64(^uint8(v)) }
	case serialization.Int8:
		f = func(v float64) float64 { return float64(^int8(v)) }
	default:
		f = func(v float64) float64 { return float64(^int64(v)) }
	}
	return mapOp(e, a, 2, f)
}
