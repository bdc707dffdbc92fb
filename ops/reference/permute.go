package reference

import "fmt"

// aten.permute_copy.default [self, dims, out]: out[i0..in] = self at the
// coordinates the output axes map back to (output axis i is input axis
// dims[i], negative dims counted from the end).
func init() {
	Register("aten.permute_copy.default", permuteRef)
	Register("aten.permute.default", permuteRef)
}

func permuteRef(e *Env, a []int32) error {
	if len(a) != 3 {
		return fmt.Errorf("permute: %d args", len(a))
	}
	x, dims, err := e.inInts(a[0], a[1])
	if err != nil {
		return err
	}
	rank := len(x.Shape)
	if len(dims) != rank {
		return fmt.Errorf("permute: dims %v for shape %v", dims, x.Shape)
	}
	shape := make([]int64, rank)
	perm := make([]int, rank)
	used := map[int]bool{}
	for i, d := range dims {
		if d < 0 {
			d += int64(rank)
		}
		if d < 0 || d >= int64(rank) || used[int(d)] {
			return fmt.Errorf("permute: dims %v is not a permutation", dims)
		}
		used[int(d)] = true
		perm[i] = int(d)
		shape[i] = x.Shape[d]
	}
	out, err := e.NewOut(a[2], shape)
	if err != nil {
		return err
	}
	for o := range out.V {
		coord := shCoords(int64(o), out.Shape) // output coordinates
		// Input coordinate along axis perm[i] is coord[i]; flatten it.
		src := int64(0)
		for axis := 0; axis < rank; axis++ {
			var c int64
			for i := range perm {
				if perm[i] == axis {
					c = coord[i]
				}
			}
			src = src*x.Shape[axis] + c
		}
		out.V[o] = x.V[src]
	}
	e.Set(a[2], out)
	return nil
}
