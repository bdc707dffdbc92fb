package wgdelegate_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestReexportedErrors: each error value the root package re-exports is
// the original, so errors.Is matches a wrapped original by the root name
// and the other way round; each re-exported type is the original type, so
// errors.As into the root type finds a wrapped original.
func TestReexportedErrors(t *testing.T) {
	values := []struct {
		name       string
		root, orig error
	}{
		{"ErrBadMagic", wgdelegate.ErrBadMagic, serialization.ErrBadMagic},
		{"ErrBadIdentifier", wgdelegate.ErrBadIdentifier, serialization.ErrBadIdentifier},
		{"ErrTruncated", wgdelegate.ErrTruncated, serialization.ErrTruncated},
		{"ErrBadHeader", wgdelegate.ErrBadHeader, serialization.ErrBadHeader},
		{"ErrBadFlatbuffer", wgdelegate.ErrBadFlatbuffer, serialization.ErrBadFlatbuffer},
		{"ErrLimit", wgdelegate.ErrLimit, serialization.ErrLimit},
		{"ErrBadValueID", wgdelegate.ErrBadValueID, serialization.ErrBadValueID},
		{"ErrBadIndex", wgdelegate.ErrBadIndex, serialization.ErrBadIndex},
		{"ErrValueListCycle", wgdelegate.ErrValueListCycle, serialization.ErrValueListCycle},
		{"ErrBadDataType", wgdelegate.ErrBadDataType, serialization.ErrBadDataType},
		{"ErrBadConstant", wgdelegate.ErrBadConstant, serialization.ErrBadConstant},
		{"ErrNamedConstant", wgdelegate.ErrNamedConstant, serialization.ErrNamedConstant},
		{"ErrMissingKey", wgdelegate.ErrMissingKey, serialization.ErrMissingKey},
		{"ErrDuplicateKey", wgdelegate.ErrDuplicateKey, serialization.ErrDuplicateKey},
		{"ErrNoDelegate", wgdelegate.ErrNoDelegate, serialization.ErrNoDelegate},
		{"ErrInvalidGraph", wgdelegate.ErrInvalidGraph, graph.ErrInvalidGraph},
		{"ErrUnsupported", wgdelegate.ErrUnsupported, graph.ErrUnsupported},
		{"ErrConstant", wgdelegate.ErrConstant, graph.ErrConstant},
		{"ErrInput", wgdelegate.ErrInput, graph.ErrInput},
		{"ErrReadBeforeWrite", wgdelegate.ErrReadBeforeWrite, graph.ErrReadBeforeWrite},
		{"ErrDeviceLimit", wgdelegate.ErrDeviceLimit, graph.ErrDeviceLimit},
		{"ErrClosed", wgdelegate.ErrClosed, graph.ErrClosed},
		{"ErrArg", wgdelegate.ErrArg, ops.ErrArg},
	}
	for i, v := range values {
		if v.root == nil || v.root != v.orig {
			t.Errorf("%d %s: root %v is not the original %v", i, v.name, v.root, v.orig)
		}
		if !errors.Is(fmt.Errorf("wrapped: %w", v.orig), v.root) || !errors.Is(fmt.Errorf("wrapped: %w", v.root), v.orig) {
			t.Errorf("%d %s: errors.Is does not match through wrapping", i, v.name)
		}
		for j, w := range values[:i] {
			if errors.Is(v.root, w.root) {
				t.Errorf("%d %s matches %d %s", i, v.name, j, w.name)
			}
		}
	}

	// ErrDeviceLost comes from an internal package; the root name is the
	// only one users have. It must be a distinct, non-nil value.
	if wgdelegate.ErrDeviceLost == nil || errors.Is(wgdelegate.ErrDeviceLost, wgdelegate.ErrClosed) {
		t.Errorf("ErrDeviceLost = %v", wgdelegate.ErrDeviceLost)
	}

	types := []struct {
		name string
		err  error // an original error value, wrapped below
		as   func(error) bool
	}{
		{"FormatError", &serialization.FormatError{Off: 8, Err: serialization.ErrTruncated},
			func(err error) bool { var e *wgdelegate.FormatError; return errors.As(err, &e) && e.Off == 8 }},
		{"NoDelegateError", &serialization.NoDelegateError{Want: "VulkanBackend", Have: []string{"QnnBackend"}},
			func(err error) bool {
				var e *wgdelegate.NoDelegateError
				return errors.As(err, &e) && e.Have[0] == "QnnBackend"
			}},
		{"OpError", &graph.OpError{Index: 3, Name: "aten.add.Tensor", Err: &ops.ArgError{Arg: 1}},
			func(err error) bool { var e *wgdelegate.OpError; return errors.As(err, &e) && e.Index == 3 }},
		{"ArgError", &graph.OpError{Index: 3, Name: "aten.add.Tensor", Err: &ops.ArgError{Arg: 1}},
			func(err error) bool {
				var e *wgdelegate.ArgError
				return errors.As(err, &e) && e.Arg == 1 && errors.Is(err, wgdelegate.ErrArg)
			}},
		{"ConstantError", &graph.ConstantError{Key: "w"},
			func(err error) bool {
				var e *wgdelegate.ConstantError
				return errors.As(err, &e) && e.Key == "w" && errors.Is(err, wgdelegate.ErrConstant)
			}},
		{"InputError", &graph.InputError{Index: 2},
			func(err error) bool {
				var e *wgdelegate.InputError
				return errors.As(err, &e) && e.Index == 2 && errors.Is(err, wgdelegate.ErrInput)
			}},
		{"LimitError", &graph.LimitError{Bytes: 1 << 30},
			func(err error) bool {
				var e *wgdelegate.LimitError
				return errors.As(err, &e) && e.Bytes == 1<<30 && errors.Is(err, wgdelegate.ErrDeviceLimit)
			}},
		{"UnsupportedError", &ops.UnsupportedError{Ops: []string{"aten.foo.default"}},
			func(err error) bool {
				var e *wgdelegate.UnsupportedError
				return errors.As(err, &e) && e.Ops[0] == "aten.foo.default"
			}},
	}
	for i, tc := range types {
		if !tc.as(fmt.Errorf("wrapped: %w", tc.err)) {
			t.Errorf("%d %s: errors.As into the root type fails on a wrapped %T", i, tc.name, tc.err)
		}
	}
}
