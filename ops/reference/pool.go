package reference

import (
	"fmt"
	"math"
)

// aten.max_pool2d.default [self, kernel_size, stride, padding, dilation,
// ceil_mode, out], aten.max_pool2d_with_indices.default (same inputs,
// ValueList[out, indices]) and aten.avg_pool2d.default [self, kernel_size,
// stride, padding, ceil_mode, count_include_pad, divisor_override, out].
//
// Each output element visits its window in row-major order, as torch's CPU
// kernels do: max keeps the first maximum and lets every NaN replace it
// (the index starts at the window's first in-bounds position); avg sums the
// in-bounds values and divides by divisor_override, or by the window
// clipped to the padded input (count_include_pad) or to the input.
func init() {
	Register("aten.max_pool2d.default", func(e *Env, a []int32) error { return poolRef(e, a, "max") })
	Register("aten.max_pool2d_with_indices.default", func(e *Env, a []int32) error { return poolRef(e, a, "maxidx") })
	Register("aten.avg_pool2d.default", func(e *Env, a []int32) error { return poolRef(e, a, "avg") })
}

// pair reads a 1- or 2-entry list; an empty one is def.
func pair(e *Env, id int32, def []int64) ([]int64, error) {
	l, err := e.IntList(id)
	if err != nil {
		return nil, err
	}
	switch len(l) {
	case 0:
		if def == nil {
			return nil, fmt.Errorf("empty list")
		}
		return def, nil
	case 1:
		return []int64{l[0], l[0]}, nil
	case 2:
		return l, nil
	}
	return nil, fmt.Errorf("list %v", l)
}

// poolSize is the output size: floor or ceil of (in + 2p - d(k-1) - 1)/s,
// plus one, where a ceil'd last window must start inside input + left pad.
func poolSize(in, k, p, s, d int64, ceil bool) int64 {
	span := float64(in + 2*p - d*(k-1) - 1)
	var o int64
	if ceil {
		o = int64(math.Ceil(span/float64(s))) + 1
		if (o-1)*s >= in+p {
			o--
		}
	} else {
		o = int64(math.Floor(span/float64(s))) + 1
	}
	return o
}

func poolRef(e *Env, a []int32, op string) error {
	avg := op == "avg"
	n := 7
	if avg {
		n = 8
	}
	if len(a) != n {
		return fmt.Errorf("%d args, want %d", len(a), n)
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	k, err := pair(e, a[1], nil)
	if err != nil {
		return err
	}
	s, err := pair(e, a[2], k)
	if err != nil {
		return err
	}
	p, err := pair(e, a[3], nil)
	if err != nil {
		return err
	}
	d := []int64{1, 1}
	ci := 4
	if !avg {
		if d, err = pair(e, a[4], nil); err != nil {
			return err
		}
		ci = 5
	}
	ceil, err := e.Bool(a[ci])
	if err != nil {
		return err
	}
	rank := len(x.Shape)
	if rank != 3 && rank != 4 {
		return fmt.Errorf("self shape %v", x.Shape)
	}
	H, W := x.Shape[rank-2], x.Shape[rank-1]
	oh := poolSize(H, k[0], p[0], s[0], d[0], ceil)
	ow := poolSize(W, k[1], p[1], s[1], d[1], ceil)
	shape := append(append([]int64(nil), x.Shape[:rank-2]...), oh, ow)
	outID, idxID := a[n-1], int32(-1)
	if op == "maxidx" {
		ids, err := e.ValueList(a[n-1])
		if err != nil {
			return err
		}
		outID, idxID = ids[0], ids[1]
	}
	out, err := e.NewOut(outID, shape)
	if err != nil {
		return err
	}
	var idx *Tensor
	if idxID >= 0 {
		if idx, err = e.NewOut(idxID, shape); err != nil {
			return err
		}
	}
	planes := x.Numel() / (H * W)
	for pl := int64(0); pl < planes; pl++ {
		in := x.V[pl*H*W : (pl+1)*H*W]
		for y := int64(0); y < oh; y++ {
			for xx := int64(0); xx < ow; xx++ {
				o := (pl*oh+y)*ow + xx
				hs, ws := y*s[0]-p[0], xx*s[1]-p[1]
				if avg {
					he, we := min(hs+k[0], H+p[0]), min(ws+k[1], W+p[1])
					padded := (he - hs) * (we - ws)
					hs2, ws2, he2, we2 := max(hs, 0), max(ws, 0), min(he, H), min(we, W)
					if hs2 >= he2 || ws2 >= we2 {
						continue
					}
					sum := 0.0
					for i := hs2; i < he2; i++ {
						for j := ws2; j < we2; j++ {
							sum += in[i*W+j]
						}
					}
					div := float64((he2 - hs2) * (we2 - ws2))
					if incl, _ := e.Bool(a[5]); incl {
						div = float64(padded)
					}
					if !e.IsNull(a[6]) {
						dv, err := e.Int(a[6])
						if err != nil {
							return err
						}
						div = float64(dv)
					}
					out.V[o] = sum / div
					continue
				}
				best, bestI := math.Inf(-1), int64(-1)
				for i := int64(0); i < k[0]; i++ {
					for j := int64(0); j < k[1]; j++ {
						iy, ix := hs+i*d[0], ws+j*d[1]
						if iy < 0 || iy >= H || ix < 0 || ix >= W {
							continue
						}
						if bestI < 0 {
							bestI = iy*W + ix
						}
						if v := in[iy*W+ix]; v > best || math.IsNaN(v) {
							best, bestI = v, iy*W+ix
						}
					}
				}
				out.V[o] = best
				if idx != nil {
					idx.V[o] = float64(bestI)
				}
			}
		}
	}
	e.Set(outID, out)
	if idx != nil {
		e.Set(idxID, idx)
	}
	return nil
}
