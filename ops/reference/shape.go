package reference

import (
	"fmt"
)

// Shape and indexing ops, element by element over output coordinates:
//
//	aten.cat.default [tensors, dim, out]
//	aten.slice_copy.Tensor [self, dim, start, end, step, out]
//	aten.select_copy.int [self, dim, index, out]
//	aten.split_with_sizes_copy.default [self, split_sizes, dim, outs]
//	aten.split_copy.Tensor [self, split_size, dim, outs]
//	aten.expand_copy.default [self, size, implicit, out]
//	aten.repeat.default [self, repeats, out]
//	aten.repeat_interleave.self_int [self, repeats, dim, output_size, out]
//	aten.flip.default [self, dims, out]
//	aten.index_select.default [self, dim, index, out]
//	aten.gather.default [self, dim, index, sparse_grad, out]
//	aten.index.Tensor [self, indices, out]
//	aten.embedding.default [weight, indices, padding_idx, scale_grad_by_freq, sparse, out]
//
// Index values follow the GPU ops' documented rule: a negative index
// counts from the end, and one outside the dim gives a zero element.
func init() {
	Register("aten.cat.default", catRef)
	Register("aten.slice_copy.Tensor", sliceRef)
	Register("aten.select_copy.int", selectRef)
	Register("aten.split_with_sizes_copy.default", func(e *Env, a []int32) error { return splitRef(e, a, true) })
	Register("aten.split_copy.Tensor", func(e *Env, a []int32) error { return splitRef(e, a, false) })
	Register("aten.expand_copy.default", expandRef)
	Register("aten.repeat.default", repeatRef)
	Register("aten.repeat_interleave.self_int", repeatInterleaveRef)
	Register("aten.flip.default", flipRef)
	Register("aten.index_select.default", indexSelectRef)
	Register("aten.gather.default", gatherRef)
	Register("aten.index.Tensor", indexRef)
	Register("aten.embedding.default", embeddingRef)
}

// shCoords returns the row-major coordinates of element i of shape.
func shCoords(i int64, shape []int64) []int64 {
	c := make([]int64, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		c[k] = i % shape[k]
		i /= shape[k]
	}
	return c
}

// shFlat returns the row-major element number of coordinates c in shape.
func shFlat(c, shape []int64) int64 {
	n := int64(0)
	for k := range shape {
		n = n*shape[k] + c[k]
	}
	return n
}

// shWrapDim normalizes dim for rank (a scalar takes -1 and 0).
func shWrapDim(dim int64, rank int) (int, error) {
	r := int64(rank)
	if r == 0 {
		r = 1
	}
	if dim < -r || dim >= r {
		return 0, fmt.Errorf("dim %d out of range for rank %d", dim, rank)
	}
	if dim < 0 {
		dim += r
	}
	return int(dim), nil
}

// shPick reads index value v for a dim of size n: negative from the end;
// ok is false when it is out of range.
func shPick(v float64, n int64) (int64, bool) {
	i := int64(v)
	if i < 0 {
		i += n
	}
	return i, i >= 0 && i < n
}

// pickAlong fills out, whose coordinates run over shape os, from x (shape
// xs): element i takes x at its own coordinates but index(i, c) along dim
// (c its coordinates); an index out of range leaves a zero.
func pickAlong(out, x *Tensor, os, xs []int64, dim int, index func(i int, c []int64) float64) {
	for i := range out.V {
		c := shCoords(int64(i), os)
		j, ok := shPick(index(i, c), xs[dim])
		if !ok {
			continue
		}
		c[dim] = j
		out.V[i] = x.V[shFlat(c, xs)]
	}
}

func catRef(e *Env, a []int32) error {
	ids, err := e.ValueList(a[0])
	if err != nil {
		return err
	}
	d, err := e.Int(a[1])
	if err != nil {
		return err
	}
	var xs []*Tensor
	var dt = -1
	for _, id := range ids {
		x, err := e.In(id)
		if err != nil {
			return err
		}
		dt = int(x.DType)
		if len(x.Shape) == 1 && x.Shape[0] == 0 {
			continue
		}
		xs = append(xs, x)
	}
	if dt < 0 {
		return fmt.Errorf("cat of nothing")
	}
	if len(xs) == 0 {
		out, err := e.NewOut(a[2], []int64{0})
		if err != nil {
			return err
		}
		e.Set(a[2], out)
		return nil
	}
	dim, err := shWrapDim(d, len(xs[0].Shape))
	if err != nil {
		return err
	}
	shape := append([]int64{}, xs[0].Shape...)
	shape[dim] = 0
	for _, x := range xs {
		if len(x.Shape) != len(shape) {
			return fmt.Errorf("cat: ranks differ")
		}
		shape[dim] += x.Shape[dim]
	}
	out, err := e.NewOut(a[2], shape)
	if err != nil {
		return err
	}
	for i := range out.V {
		c := shCoords(int64(i), shape)
		pos := c[dim]
		for _, x := range xs {
			if pos < x.Shape[dim] {
				c[dim] = pos
				out.V[i] = x.V[shFlat(c, x.Shape)]
				break
			}
			pos -= x.Shape[dim]
		}
	}
	e.Set(a[2], out)
	return nil
}

// sliceTo writes x[start:end:step] along dim into output id.
func sliceTo(e *Env, x *Tensor, dim int, start, end, step int64, id int32) error {
	shape := append([]int64{}, x.Shape...)
	shape[dim] = 0
	for i := start; i < end; i += step {
		shape[dim]++
	}
	out, err := e.NewOut(id, shape)
	if err != nil {
		return err
	}
	for i := range out.V {
		c := shCoords(int64(i), shape)
		c[dim] = start + c[dim]*step
		out.V[i] = x.V[shFlat(c, x.Shape)]
	}
	e.Set(id, out)
	return nil
}

func sliceRef(e *Env, a []int32) error {
	x, dim, err := e.inDim(a[0], a[1])
	if err != nil {
		return err
	}
	if len(x.Shape) == 0 {
		return fmt.Errorf("slice of a scalar")
	}
	n := x.Shape[dim]
	bound := func(id int32, def int64) (int64, error) {
		if e.IsNull(id) {
			return def, nil
		}
		v, err := e.Int(id)
		if err != nil {
			return 0, err
		}
		if v < 0 {
			v += n
		}
		if v < 0 {
			v = 0
		}
		if v > n {
			v = n
		}
		return v, nil
	}
	start, err := bound(a[2], 0)
	if err != nil {
		return err
	}
	end, err := bound(a[3], n)
	if err != nil {
		return err
	}
	step, err := e.Int(a[4])
	if err != nil {
		return err
	}
	if step <= 0 {
		return fmt.Errorf("slice step %d", step)
	}
	return sliceTo(e, x, dim, start, end, step, a[5])
}

func selectRef(e *Env, a []int32) error {
	x, dim, err := e.inDim(a[0], a[1])
	if err != nil {
		return err
	}
	idx, err := e.Int(a[2])
	if err != nil {
		return err
	}
	if len(x.Shape) == 0 {
		return fmt.Errorf("select from a scalar")
	}
	if idx < 0 {
		idx += x.Shape[dim]
	}
	if idx < 0 || idx >= x.Shape[dim] {
		return fmt.Errorf("select index out of range")
	}
	var shape []int64
	for k, s := range x.Shape {
		if k != dim {
			shape = append(shape, s)
		}
	}
	out, err := e.NewOut(a[3], shape)
	if err != nil {
		return err
	}
	for i := range out.V {
		c := shCoords(int64(i), shape)
		full := append(append(append([]int64{}, c[:dim]...), idx), c[dim:]...)
		out.V[i] = x.V[shFlat(full, x.Shape)]
	}
	e.Set(a[3], out)
	return nil
}

func splitRef(e *Env, a []int32, withSizes bool) error {
	x, dim, err := e.inDim(a[0], a[2])
	if err != nil {
		return err
	}
	outs, err := e.ValueList(a[3])
	if err != nil {
		return err
	}
	n := x.Shape[dim]
	var sizes []int64
	if withSizes {
		if sizes, err = e.IntList(a[1]); err != nil {
			return err
		}
	} else {
		s, err := e.Int(a[1])
		if err != nil {
			return err
		}
		for at := int64(0); at < n; at += s {
			sizes = append(sizes, min(s, n-at))
		}
		if n == 0 {
			sizes = []int64{0}
		}
	}
	if len(sizes) != len(outs) {
		return fmt.Errorf("split into %v for %d outputs", sizes, len(outs))
	}
	at := int64(0)
	for i, s := range sizes {
		if err := sliceTo(e, x, dim, at, at+s, 1, outs[i]); err != nil {
			return err
		}
		at += s
	}
	if at != n {
		return fmt.Errorf("split sizes %v for size %d", sizes, n)
	}
	return nil
}

func expandRef(e *Env, a []int32) error {
	x, size, err := e.inInts(a[0], a[1])
	if err != nil {
		return err
	}
	lead := len(size) - len(x.Shape)
	if lead < 0 {
		return fmt.Errorf("expand to fewer dims")
	}
	shape := append([]int64{}, size...)
	for k := lead; k < len(size); k++ {
		xd := x.Shape[k-lead]
		if size[k] == -1 {
			shape[k] = xd
		} else if xd != 1 && xd != size[k] {
			return fmt.Errorf("cannot expand %v to %v", x.Shape, size)
		}
	}
	out, err := e.NewOut(a[3], shape)
	if err != nil {
		return err
	}
	tileFrom(out, x, lead)
	e.Set(a[3], out)
	return nil
}

// tileFrom fills out from x, whose dims align with out's last dims (the
// first lead are new): each output coordinate is taken modulo x's size, so
// size-1 dims broadcast (expand) and larger ones repeat (repeat).
func tileFrom(out, x *Tensor, lead int) {
	for i := range out.V {
		c := shCoords(int64(i), out.Shape)[lead:]
		for k := range c {
			c[k] %= x.Shape[k]
		}
		out.V[i] = x.V[shFlat(c, x.Shape)]
	}
}

func repeatRef(e *Env, a []int32) error {
	x, reps, err := e.inInts(a[0], a[1])
	if err != nil {
		return err
	}
	lead := len(reps) - len(x.Shape)
	if lead < 0 {
		return fmt.Errorf("repeat: too few repeats")
	}
	shape := make([]int64, len(reps))
	for k := range reps {
		xd := int64(1)
		if k >= lead {
			xd = x.Shape[k-lead]
		}
		shape[k] = reps[k] * xd
	}
	out, err := e.NewOut(a[2], shape)
	if err != nil {
		return err
	}
	tileFrom(out, x, lead)
	e.Set(a[2], out)
	return nil
}

func repeatInterleaveRef(e *Env, a []int32) error {
	x, r, err := e.inInt(a[0], a[1])
	if err != nil {
		return err
	}
	shape := []int64{x.Numel()}
	dim := 0
	if !e.IsNull(a[2]) {
		d, err := e.Int(a[2])
		if err != nil {
			return err
		}
		if dim, err = shWrapDim(d, len(x.Shape)); err != nil {
			return err
		}
		shape = append([]int64{}, x.Shape...)
		if len(shape) == 0 {
			shape = []int64{1}
		}
	}
	src := append([]int64{}, shape...)
	shape[dim] *= r
	out, err := e.NewOut(a[4], shape)
	if err != nil {
		return err
	}
	for i := range out.V {
		c := shCoords(int64(i), shape)
		c[dim] /= r
		out.V[i] = x.V[shFlat(c, src)]
	}
	e.Set(a[4], out)
	return nil
}

func flipRef(e *Env, a []int32) error {
	x, dims, err := e.inInts(a[0], a[1])
	if err != nil {
		return err
	}
	flip := make([]bool, max(len(x.Shape), 1))
	for _, d := range dims {
		k, err := shWrapDim(d, len(x.Shape))
		if err != nil {
			return err
		}
		flip[k] = true
	}
	out, err := e.NewOut(a[2], x.Shape)
	if err != nil {
		return err
	}
	for i := range out.V {
		c := shCoords(int64(i), x.Shape)
		for k := range c {
			if flip[k] {
				c[k] = x.Shape[k] - 1 - c[k]
			}
		}
		out.V[i] = x.V[shFlat(c, x.Shape)]
	}
	e.Set(a[2], out)
	return nil
}

func indexSelectRef(e *Env, a []int32) error {
	x, dim, ix, err := e.selfDimIndex(a)
	if err != nil {
		return err
	}
	xs := x.Shape
	shape := append([]int64{}, x.Shape...)
	if len(xs) == 0 {
		xs = []int64{1}
	} else {
		shape[dim] = int64(len(ix.V))
	}
	out, err := e.NewOut(a[3], shape)
	if err != nil {
		return err
	}
	os := append([]int64{}, xs...)
	os[dim] = int64(len(ix.V))
	pickAlong(out, x, os, xs, dim, func(_ int, c []int64) float64 { return ix.V[c[dim]] })
	e.Set(a[3], out)
	return nil
}

func gatherRef(e *Env, a []int32) error {
	x, dim, ix, err := e.selfDimIndex(a)
	if err != nil {
		return err
	}
	out, err := e.NewOut(a[4], ix.Shape)
	if err != nil {
		return err
	}
	xs, is := x.Shape, ix.Shape
	if len(xs) == 0 {
		xs, is = []int64{1}, []int64{1}
	}
	pickAlong(out, x, is, xs, dim, func(i int, _ []int64) float64 { return ix.V[i] })
	e.Set(a[4], out)
	return nil
}

func indexRef(e *Env, a []int32) error {
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	ids, err := e.ValueList(a[1])
	if err != nil {
		return err
	}
	idx := make([]*Tensor, len(x.Shape)) // nil: not indexed
	var first, last = -1, -1
	var bshape []int64
	count := 0
	for k, id := range ids {
		if e.IsNull(id) {
			continue
		}
		t, err := e.In(id)
		if err != nil {
			return err
		}
		idx[k] = t
		if first < 0 {
			first = k
		}
		last = k
		count++
		// Broadcast bshape with t.Shape.
		n := max(len(bshape), len(t.Shape))
		nb := make([]int64, n)
		for i := 0; i < n; i++ {
			p, q := int64(1), int64(1)
			if i < len(bshape) {
				p = bshape[len(bshape)-1-i]
			}
			if i < len(t.Shape) {
				q = t.Shape[len(t.Shape)-1-i]
			}
			switch {
			case p == q || q == 1:
				nb[n-1-i] = p
			case p == 1:
				nb[n-1-i] = q
			default:
				return fmt.Errorf("index shapes do not broadcast")
			}
		}
		bshape = nb
	}
	if count == 0 {
		return fmt.Errorf("no index tensors")
	}
	together := last-first+1 == count
	// Output layout: the position of B in the output and the self dims
	// around it.
	var shape []int64
	var selfDims []int // self dim of each non-B output dim, in order
	bAt := 0
	if together {
		for k := 0; k < first; k++ {
			shape = append(shape, x.Shape[k])
			selfDims = append(selfDims, k)
		}
		bAt = len(shape)
		shape = append(shape, bshape...)
		for k := last + 1; k < len(x.Shape); k++ {
			shape = append(shape, x.Shape[k])
			selfDims = append(selfDims, k)
		}
	} else {
		shape = append(shape, bshape...)
		for k := range x.Shape {
			if idx[k] == nil {
				shape = append(shape, x.Shape[k])
				selfDims = append(selfDims, k)
			}
		}
	}
	out, err := e.NewOut(a[2], shape)
	if err != nil {
		return err
	}
	for i := range out.V {
		c := shCoords(int64(i), shape)
		bc := c[bAt : bAt+len(bshape)]
		rest := append(append([]int64{}, c[:bAt]...), c[bAt+len(bshape):]...)
		src := make([]int64, len(x.Shape))
		for j, k := range selfDims {
			src[k] = rest[j]
		}
		ok := true
		for k, t := range idx {
			if t == nil {
				continue
			}
			// t's element at bc, broadcast right-aligned.
			tc := make([]int64, len(t.Shape))
			for m := range tc {
				if t.Shape[m] != 1 {
					tc[m] = bc[len(bc)-len(t.Shape)+m]
				}
			}
			v, in := shPick(t.V[shFlat(tc, t.Shape)], x.Shape[k])
			ok = ok && in
			src[k] = v
		}
		if ok {
			out.V[i] = x.V[shFlat(src, x.Shape)]
		}
	}
	e.Set(a[2], out)
	return nil
}

func embeddingRef(e *Env, a []int32) error {
	w, ix, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	if len(w.Shape) != 2 {
		return fmt.Errorf("embedding weight %v", w.Shape)
	}
	dd := w.Shape[1]
	out, err := e.NewOut(a[5], append(append([]int64{}, ix.Shape...), dd))
	if err != nil {
		return err
	}
	for i, v := range ix.V {
		row, ok := shPick(v, w.Shape[0])
		if !ok {
			continue
		}
		copy(out.V[int64(i)*dd:int64(i+1)*dd], w.V[row*dd:(row+1)*dd])
	}
	e.Set(a[5], out)
	return nil
}
