package reference

// Argument readers shared by the reference ops: the same few reads start
// most of them.

// inInt reads tensor xID and Int iID.
func (e *Env) inInt(xID, iID int32) (*Tensor, int64, error) {
	x, err := e.In(xID)
	if err != nil {
		return nil, 0, err
	}
	v, err := e.Int(iID)
	if err != nil {
		return nil, 0, err
	}
	return x, v, nil
}

// inDim reads tensor xID and the dim at dID, normalized for the tensor's
// rank with shWrapDim (a scalar takes -1 and 0).
func (e *Env) inDim(xID, dID int32) (*Tensor, int, error) {
	x, d, err := e.inInt(xID, dID)
	if err != nil {
		return nil, 0, err
	}
	dim, err := shWrapDim(d, len(x.Shape))
	if err != nil {
		return nil, 0, err
	}
	return x, dim, nil
}

// in2 reads tensors xID and yID.
func (e *Env) in2(xID, yID int32) (*Tensor, *Tensor, error) {
	x, err := e.In(xID)
	if err != nil {
		return nil, nil, err
	}
	y, err := e.In(yID)
	if err != nil {
		return nil, nil, err
	}
	return x, y, nil
}

// inInts reads tensor xID and IntList lID.
func (e *Env) inInts(xID, lID int32) (*Tensor, []int64, error) {
	x, err := e.In(xID)
	if err != nil {
		return nil, nil, err
	}
	l, err := e.IntList(lID)
	if err != nil {
		return nil, nil, err
	}
	return x, l, nil
}

// selfDimIndex reads the leading [self, dim, index] of a: self, dim
// normalized for it, and the index tensor.
func (e *Env) selfDimIndex(a []int32) (*Tensor, int, *Tensor, error) {
	x, dim, err := e.inDim(a[0], a[1])
	if err != nil {
		return nil, 0, nil, err
	}
	ix, err := e.In(a[2])
	if err != nil {
		return nil, 0, nil, err
	}
	return x, dim, ix, nil
}
