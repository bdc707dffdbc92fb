package reference

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// aten.add.Tensor / aten.sub.Tensor [self, other, alpha, out];
// aten.mul.Tensor / aten.div.Tensor [self, other, out].
//
// Broadcasting is done the obvious way: every output index is split into
// coordinates, and each input reads coordinate 0 along its size-1 (or
// missing leading) dims. An int32 out is computed in int64 and wrapped to
// int32 (float64 cannot hold a product of two int32s exactly); everything
// else is computed in float64 and rounded by Set. div is true division.
func init() {
	Register("aten.add.Tensor", func(e *Env, a []int32) error { return binaryOp(e, "add", a) })
	Register("aten.sub.Tensor", func(e *Env, a []int32) error { return binaryOp(e, "sub", a) })
	Register("aten.mul.Tensor", func(e *Env, a []int32) error { return binaryOp(e, "mul", a) })
	Register("aten.div.Tensor", func(e *Env, a []int32) error { return binaryOp(e, "div", a) })
}

func binaryOp(e *Env, op string, args []int32) error {
	withAlpha := op == "add" || op == "sub"
	n := 3
	if withAlpha {
		n = 4
	}
	if len(args) != n {
		return fmt.Errorf("%d args, want %d", len(args), n)
	}
	x, err := e.In(args[0])
	if err != nil {
		return err
	}
	y, err := e.In(args[1])
	if err != nil {
		return err
	}
	z, err := e.Out(args[n-1])
	if err != nil {
		return err
	}
	intOut := z.DType == serialization.Int32
	alpha, alphaInt := 1.0, int64(1)
	if withAlpha && !e.IsNull(args[2]) {
		if intOut {
			alphaInt, err = e.Int(args[2])
		} else {
			alpha, err = e.Float(args[2])
		}
		if err != nil {
			return err
		}
	}
	xi, yi := broadcastIndex(x.Shape, z.Shape), broadcastIndex(y.Shape, z.Shape)
	if xi == nil || yi == nil {
		return fmt.Errorf("cannot broadcast %v and %v to %v", x.Shape, y.Shape, z.Shape)
	}
	for i := range z.V {
		a, b := x.V[xi(i)], y.V[yi(i)]
		if intOut && op != "div" {
			ia, ib := int64(a), int64(b)
			var r int64
			switch op {
			case "add":
				r = ia + alphaInt*ib
			case "sub":
				r = ia - alphaInt*ib
			case "mul":
				r = ia * ib
			}
			z.V[i] = float64(int32(r))
			continue
		}
		switch op {
		case "add":
			z.V[i] = a + alpha*b
		case "sub":
			z.V[i] = a - alpha*b
		case "mul":
			z.V[i] = a * b
		case "div":
			z.V[i] = a / b
		}
	}
	e.Set(args[n-1], z)
	return nil
}

// broadcastIndex returns a function from a linear index into out to the
// linear index into a tensor of shape in broadcast to out, or nil when in
// does not broadcast to out.
func broadcastIndex(in, out []int64) func(int) int {
	if len(in) > len(out) {
		return nil
	}
	lead := len(out) - len(in)
	for i, d := range in {
		if d != 1 && d != out[lead+i] {
			return nil
		}
	}
	return func(lin int) int {
		idx := 0
		stride := 1
		rest := lin
		for k := len(out) - 1; k >= 0; k-- {
			c := rest % int(out[k])
			rest /= int(out[k])
			if k >= lead {
				d := int(in[k-lead])
				if d != 1 {
					idx += c * stride
				}
				stride *= d
			}
		}
		return idx
	}
}
