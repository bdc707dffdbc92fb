package wgdelegate_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// End-to-end tests: graphs in the real VH00/.pte/.ptd format, built with the
// serialization writer, loaded through the public API and run on the real
// device (lavapipe in CI).

var (
	devOnce sync.Once
	dev     *wgdelegate.Device
	devErr  error
)

func device(t testing.TB) *wgdelegate.Device {
	t.Helper()
	devOnce.Do(func() { dev, devErr = wgdelegate.OpenDevice(context.Background(), wgdelegate.DeviceOptions{}) })
	if devErr != nil {
		t.Fatalf("open device: %v", devErr)
	}
	return dev
}

func TestMain(m *testing.M) {
	code := m.Run()
	if dev != nil {
		dev.Close()
	}
	os.Exit(code)
}

func f32(t *testing.T, x wgdelegate.Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func randF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.Float64()*2 - 1)
	}
	return v
}

func f32bytes(v []float32) []byte { return graph.Float32Tensor([]int64{int64(len(v))}, v).Data }

func dims(s ...int64) []uint32 {
	d := make([]uint32, len(s))
	for i, x := range s {
		d[i] = uint32(x)
	}
	return d
}

// load encodes b into a .pte (delegate in a segment) plus a .ptd holding the
// named constants, and loads it.
func load(t testing.TB, b *serialization.Builder, opts ...wgdelegate.Option) (*wgdelegate.Model, error) {
	t.Helper()
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	pte, err := serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: blob}}})
	if err != nil {
		t.Fatal(err)
	}
	ptd, err := serialization.EncodePTD(b.NamedBlobs())
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]wgdelegate.Option{wgdelegate.WithDevice(device(t)), wgdelegate.WithData(ptd)}, opts...)
	return wgdelegate.Load(context.Background(), pte, opts...)
}

func mustLoad(t *testing.T, b *serialization.Builder) *wgdelegate.Model {
	t.Helper()
	m, err := load(t, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func requireOps(t *testing.T, names ...string) {
	for _, n := range names {
		if _, ok := ops.Lookup(n); !ok {
			t.Fatalf("op %s is not registered", n)
		}
	}
}

func closeTo(t *testing.T, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("len %d, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > tol*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("element %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

// TestMLP runs linear -> relu -> linear with weights as named constants in a
// .ptd, against a plain-Go computation.
func TestMLP(t *testing.T) {
	requireOps(t, "aten.linear.default", "aten.relu.default")
	const batch, in, hidden, out = 3, 13, 32, 5
	r := rand.New(rand.NewPCG(1, 2))
	w1, b1, w2 := randF32(r, hidden*in), randF32(r, hidden), randF32(r, out*hidden)
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(batch, in), -1)
	cw1, _ := b.NamedConst(serialization.Float32, dims(hidden, in), f32bytes(w1))
	cb1, _ := b.NamedConst(serialization.Float32, dims(hidden), f32bytes(b1))
	cw2, _ := b.NamedConst(serialization.Float32, dims(out, hidden), f32bytes(w2))
	h := b.Tensor(serialization.Float32, dims(batch, hidden), 0)
	hr := b.Tensor(serialization.Float32, dims(batch, hidden), 1)
	y := b.Tensor(serialization.Float32, dims(batch, out), 0)
	b.Op("aten.linear.default", x, cw1, cb1, h)
	b.Op("aten.relu.default", h, hr)
	b.Op("aten.linear.default", hr, cw2, b.Null(), y)
	b.Inputs(x)
	b.Outputs(y)
	m := mustLoad(t, b)

	xv := randF32(r, batch*in)
	outs, err := m.Execute(context.Background(), []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{batch, in}, xv)}...)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, batch*out)
	for i := 0; i < batch; i++ {
		hid := make([]float64, hidden)
		for j := range hid {
			s := float64(b1[j])
			for k := 0; k < in; k++ {
				s += float64(xv[i*in+k]) * float64(w1[j*in+k])
			}
			hid[j] = math.Max(s, 0)
		}
		for j := 0; j < out; j++ {
			s := 0.0
			for k := 0; k < hidden; k++ {
				s += hid[k] * float64(w2[j*hidden+k])
			}
			want[i*out+j] = float32(s)
		}
	}
	closeTo(t, f32(t, outs[0]), want, 1e-5)
	st := m.MemoryStats()
	if st.NumSharedObjects != 2 || st.NumDeferredConstants != 0 {
		t.Errorf("stats %+v: want 2 shared objects and no deferred constants (linear reads its weights directly)", st)
	}
}

// prepackGraph builds y = x + prepack(w) (+ extra, optionally).
func prepackGraph(w []float32, extra func(b *serialization.Builder, x, c, y int32) []int32) *serialization.Builder {
	b := serialization.NewBuilder()
	n := int64(len(w))
	x := b.Tensor(serialization.Float32, dims(n), -1)
	c, _ := b.NamedConst(serialization.Float32, dims(n), f32bytes(w))
	p := b.Tensor(serialization.Float32, dims(n), -1)
	b.Op("et_vk.prepack.default", c, p)
	y := b.Tensor(serialization.Float32, dims(n), -1)
	b.Op("aten.add.Tensor", x, p, b.Int(1), y)
	outs := []int32{y}
	if extra != nil {
		outs = append(outs, extra(b, x, c, y)...)
	}
	b.Inputs(x)
	b.Outputs(outs...)
	return b
}

func TestPrepackDeferred(t *testing.T) {
	requireOps(t, "aten.add.Tensor")
	w := []float32{1, 2, 3, 4, 5, 6, 7}
	m := mustLoad(t, prepackGraph(w, nil))
	st := m.MemoryStats()
	if st.NumDeferredConstants != 1 || st.DeferredConstantBytes != 28 {
		t.Errorf("deferred %d (%d bytes), want 1 (28 bytes)", st.NumDeferredConstants, st.DeferredConstantBytes)
	}
	// x, the prepacked copy and y: three dedicated 28-byte tensors, no
	// buffer for the constant itself.
	if st.UnsharedTensorBufferBytes != 3*28 {
		t.Errorf("unshared bytes %d, want %d", st.UnsharedTensorBufferBytes, 3*28)
	}
	x := []float32{10, 20, 30, 40, 50, 60, 70}
	outs, err := m.Execute(context.Background(), []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{7}, x)}...)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, f32(t, outs[0]), []float32{11, 22, 33, 44, 55, 66, 77}, 0)
}

func TestPrepackSourceAlsoUsedDirectly(t *testing.T) {
	requireOps(t, "aten.add.Tensor")
	w := []float32{1, 2, 3}
	for _, c := range []struct {
		name  string
		extra func(b *serialization.Builder, x, c, y int32) []int32
	}{
		{"direct", func(b *serialization.Builder, x, c, y int32) []int32 {
			z := b.Tensor(serialization.Float32, dims(3), -1)
			b.Op("aten.add.Tensor", y, c, b.Int(1), z)
			return []int32{z}
		}},
		{"through ValueList", func(b *serialization.Builder, x, c, y int32) []int32 {
			// clone ignores its memory_format argument, but the prescan
			// must still see the constant inside the list as a direct use.
			z := b.Tensor(serialization.Float32, dims(3), -1)
			b.Op("aten.clone.default", y, b.ValueList(c), z)
			return []int32{z}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := mustLoad(t, prepackGraph(w, c.extra))
			if st := m.MemoryStats(); st.NumDeferredConstants != 0 {
				t.Errorf("constant deferred although used directly: %+v", st)
			}
			outs, err := m.Execute(context.Background(), []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{3}, []float32{1, 1, 1})}...)
			if err != nil {
				t.Fatal(err)
			}
			closeTo(t, f32(t, outs[0]), []float32{2, 3, 4}, 0)
		})
	}
}

// TestTwoPrepacksOfOneKey covers tied weights: two constants with the same
// named key, each prepacked into its own tensor.
func TestTwoPrepacksOfOneKey(t *testing.T) {
	requireOps(t, "aten.add.Tensor")
	w := []float32{0.5, -1.5, 2.25, 8}
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(4), -1)
	c1, k1 := b.NamedConst(serialization.Float32, dims(4), f32bytes(w))
	c2, k2 := b.NamedConst(serialization.Float32, dims(4), f32bytes(w))
	if k1 != k2 || c1 == c2 {
		t.Fatalf("want two constants sharing one key: %d %d %s %s", c1, c2, k1, k2)
	}
	p1 := b.Tensor(serialization.Float32, dims(4), -1)
	p2 := b.Tensor(serialization.Float32, dims(4), -1)
	b.Op("et_vk.prepack.default", c1, p1)
	b.Op("et_vk.prepack.default", c2, p2)
	s := b.Tensor(serialization.Float32, dims(4), -1)
	y := b.Tensor(serialization.Float32, dims(4), -1)
	b.Op("aten.add.Tensor", x, p1, b.Int(1), s)
	b.Op("aten.add.Tensor", s, p2, b.Double(2), y)
	b.Inputs(x)
	b.Outputs(y)
	m := mustLoad(t, b)
	if st := m.MemoryStats(); st.NumDeferredConstants != 2 {
		t.Errorf("deferred %d, want 2", st.NumDeferredConstants)
	}
	outs, err := m.Execute(context.Background(), []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{4}, []float32{1, 2, 3, 4})}...)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, f32(t, outs[0]), []float32{1 + 1.5, 2 - 4.5, 3 + 6.75, 4 + 24}, 0)
}

// TestConstantOutput returns a constant as a graph output: it must get a
// buffer (an output is a direct use) and read back its bytes.
func TestConstantOutput(t *testing.T) {
	w := []float32{3, 1, 4, 1, 5}
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(5), -1)
	c, _ := b.NamedConst(serialization.Float32, dims(5), f32bytes(w))
	p := b.Tensor(serialization.Float32, dims(5), -1)
	b.Op("et_vk.prepack.default", c, p)
	y := b.Tensor(serialization.Float32, dims(5), -1)
	b.Op("aten.clone.default", x, b.Null(), y)
	b.Inputs(x)
	b.Outputs(y, c, p)
	m := mustLoad(t, b)
	if st := m.MemoryStats(); st.NumDeferredConstants != 0 {
		t.Errorf("a constant that is an output was deferred: %+v", st)
	}
	outs, err := m.Execute(context.Background(), []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{5}, []float32{9, 9, 9, 9, 9})}...)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, f32(t, outs[0]), []float32{9, 9, 9, 9, 9}, 0)
	closeTo(t, f32(t, outs[1]), w, 0)
	closeTo(t, f32(t, outs[2]), w, 0)
}

// TestSharedMemObj runs a chain whose intermediates alternate between two
// shared objects, sized to their largest user, and checks read-after-write
// ordering across dispatches in one pass.
func TestSharedMemObj(t *testing.T) {
	requireOps(t, "aten.add.Tensor")
	const n, steps = 1031, 40
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(n), -1)
	one := b.Int(1)
	cur := x
	for i := 0; i < steps; i++ {
		next := b.Tensor(serialization.Float32, dims(n), int32(i%2))
		b.Op("aten.add.Tensor", cur, x, one, next)
		cur = next
	}
	small := b.Tensor(serialization.Float32, dims(3), 1) // a smaller user of object 1
	_ = small
	y := b.Tensor(serialization.Float32, dims(n), -1)
	b.Op("aten.clone.default", cur, b.Null(), y)
	b.Inputs(x)
	b.Outputs(y)
	m := mustLoad(t, b)
	st := m.MemoryStats()
	if st.NumSharedObjects != 2 || st.SharedBufferBytes != 2*4*n {
		t.Errorf("shared: %d objects, %d bytes; want 2, %d", st.NumSharedObjects, st.SharedBufferBytes, 2*4*n)
	}
	xv := make([]float32, n)
	want := make([]float32, n)
	for i := range xv {
		xv[i] = float32(i%17) - 8
		want[i] = xv[i] * (steps + 1)
	}
	outs, err := m.Execute(context.Background(), []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{n}, xv)}...)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, f32(t, outs[0]), want, 0)
}

func TestPrepackOutputAliasedRejected(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(4), -1)
	c, _ := b.NamedConst(serialization.Float32, dims(4), f32bytes([]float32{1, 2, 3, 4}))
	p := b.Tensor(serialization.Float32, dims(4), 0) // aliased: mem_obj_id 0
	b.Op("et_vk.prepack.default", c, p)
	y := b.Tensor(serialization.Float32, dims(4), -1)
	b.Op("aten.clone.default", p, b.Null(), y)
	b.Inputs(x)
	b.Outputs(y)
	_, err := load(t, b)
	var oe *graph.OpError
	if !errors.Is(err, graph.ErrInvalidGraph) || !errors.As(err, &oe) || oe.Name != "et_vk.prepack.default" {
		t.Fatalf("got %v, want an invalid-graph OpError from the prepack", err)
	}
	if !strings.Contains(err.Error(), "aliased") {
		t.Errorf("message %q does not say the output is aliased", err)
	}
}

func TestPrepackMismatchRejected(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(4), -1)
	c, _ := b.NamedConst(serialization.Float32, dims(4), f32bytes([]float32{1, 2, 3, 4}))
	p := b.Tensor(serialization.Float32, dims(2, 2), -1)
	b.Op("et_vk.prepack.default", c, p)
	b.Inputs(x)
	b.Outputs(p)
	if _, err := load(t, b); !errors.Is(err, ops.ErrArg) {
		t.Fatalf("got %v, want ops.ErrArg", err)
	}
}

func TestUnsupportedOpsListedAtOnce(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(4), -1)
	y := b.Tensor(serialization.Float32, dims(4), -1)
	b.Op("aten.frobnicate.default", x, y)
	b.Op("aten.clone.default", x, b.Null(), y)
	b.Op("my.custom.op", x, y)
	b.Op("aten.frobnicate.default", x, y)
	b.Inputs(x)
	b.Outputs(y)
	_, err := load(t, b)
	var ue *ops.UnsupportedError
	if !errors.Is(err, graph.ErrUnsupported) || !errors.As(err, &ue) {
		t.Fatalf("got %v, want ErrUnsupported", err)
	}
	if len(ue.Ops) != 2 || ue.Ops[0] != "aten.frobnicate.default" || ue.Ops[1] != "my.custom.op" {
		t.Errorf("ops %v", ue.Ops)
	}
}

func TestMissingNamedKey(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(4), -1)
	c := b.NamedConstKey(serialization.Float32, dims(4), "weights.not.here", 16)
	p := b.Tensor(serialization.Float32, dims(4), -1)
	b.Op("et_vk.prepack.default", c, p)
	b.Inputs(x)
	b.Outputs(p)
	_, err := load(t, b)
	var ce *graph.ConstantError
	if !errors.As(err, &ce) || ce.Key != "weights.not.here" || !strings.Contains(err.Error(), "weights.not.here") {
		t.Fatalf("got %v, want a ConstantError naming the key", err)
	}
}

func TestNamedDataTooShort(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(4), -1)
	c, key := b.NamedConst(serialization.Float32, dims(4), f32bytes([]float32{1, 2}))
	b.Inputs(x)
	b.Outputs(c)
	_, err := load(t, b)
	if !errors.Is(err, graph.ErrConstant) || !strings.Contains(err.Error(), key) {
		t.Fatalf("got %v, want ErrConstant naming %s", err, key)
	}
}

func TestInlineConstant(t *testing.T) {
	w := []float32{1.5, 2.5, 3.5}
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(3), -1)
	c := b.InlineConst(serialization.Float32, dims(3), f32bytes(w))
	p := b.Tensor(serialization.Float32, dims(3), -1)
	b.Op("et_vk.prepack.default", c, p)
	b.Inputs(x)
	b.Outputs(p)
	m := mustLoad(t, b)
	outs, err := m.Execute(context.Background(), []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{3}, []float32{0, 0, 0})}...)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, f32(t, outs[0]), w, 0)
}

func TestExecuteInputErrors(t *testing.T) {
	b := cloneOf(serialization.Int32, 2, 2)
	m := mustLoad(t, b)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		in   []wgdelegate.Tensor
	}{
		{"count", nil},
		{"shape", []wgdelegate.Tensor{wgdelegate.Int32Tensor([]int64{4}, []int32{1, 2, 3, 4})}},
		{"dtype", []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{2, 2}, []float32{1, 2, 3, 4})}},
		{"int64 overflow", []wgdelegate.Tensor{wgdelegate.Int64Tensor([]int64{2, 2}, []int64{1, 2, 1 << 40, 4})}},
		{"short data", []wgdelegate.Tensor{{DType: serialization.Int32, Shape: []int64{2, 2}, Data: make([]byte, 12)}}},
	} {
		if _, err := m.Execute(ctx, c.in...); !errors.Is(err, graph.ErrInput) {
			t.Errorf("%s: got %v, want ErrInput", c.name, err)
		}
	}
	// int64 host data narrowed into the int32 tensor, as after the
	// exporter's default downcast.
	outs, err := m.Execute(ctx, []wgdelegate.Tensor{wgdelegate.Int64Tensor([]int64{2, 2}, []int64{-1, 2, math.MaxInt32, math.MinInt32})}...)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := outs[0].Int32s()
	if got[0] != -1 || got[1] != 2 || got[2] != math.MaxInt32 || got[3] != math.MinInt32 {
		t.Errorf("got %v", got)
	}
}

func TestNoVulkanDelegate(t *testing.T) {
	pte, err := serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{{ID: "XnnpackBackend", Blob: []byte("x")}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = device(t).Load(context.Background(), pte)
	if !errors.Is(err, serialization.ErrNoDelegate) || !strings.Contains(err.Error(), "XnnpackBackend") {
		t.Fatalf("got %v", err)
	}
	if _, err := device(t).Load(context.Background(), []byte("definitely not a model")); !errors.Is(err, wgdelegate.ErrUnknownFormat) {
		t.Fatalf("got %v", err)
	}
}

func TestCloseReleases(t *testing.T) {
	m, err := load(t, cloneModel())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := m.Execute(context.Background(), []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{4}, make([]float32, 4))}...); !errors.Is(err, graph.ErrClosed) {
		t.Fatalf("Execute after Close: %v", err)
	}
}

// TestInt64OutputsWidened: the exporter stores int64 tensors as int32 on the
// device; the program's delegate call still says int64, so outputs are
// widened back and int64 inputs narrowed.
func TestInt64OutputsWidened(t *testing.T) {
	b := cloneOf(serialization.Int32, 3)
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	long := serialization.EValueSpec{ScalarType: serialization.ScalarTypeLong, Sizes: []int32{3}}
	pte, err := serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{{
		ID: serialization.VulkanBackendID, Blob: blob, Inputs: []serialization.EValueSpec{long}, Outputs: []serialization.EValueSpec{long}}}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := device(t).Load(context.Background(), pte)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if dt, _, _ := m.OutputInfo(0); dt != serialization.Int64 {
		t.Fatalf("output dtype %v, want int64", dt)
	}
	outs, err := m.Execute(context.Background(), []wgdelegate.Tensor{wgdelegate.Int64Tensor([]int64{3}, []int64{-5, 0, math.MaxInt32})}...)
	if err != nil {
		t.Fatal(err)
	}
	want := wgdelegate.Int64Tensor([]int64{3}, []int64{-5, 0, math.MaxInt32})
	if outs[0].DType != serialization.Int64 || string(outs[0].Data) != string(want.Data) {
		t.Fatalf("got %v %v", outs[0].DType, outs[0].Data)
	}
}

// TestConcurrentExecute runs two graphs on one device from several
// goroutines each; Execute is serialised per graph and the device queue is
// shared. Run it with -race.
func TestConcurrentExecute(t *testing.T) {
	build := func(scale float32) *wgdelegate.Model {
		b := serialization.NewBuilder()
		x := b.Tensor(serialization.Float32, dims(33), -1)
		c, _ := b.NamedConst(serialization.Float32, dims(33), f32bytes(make([]float32, 33)))
		y := b.Tensor(serialization.Float32, dims(33), -1)
		b.Op("aten.add.Tensor", x, c, b.Double(float64(scale)), y)
		b.Inputs(x)
		b.Outputs(y)
		return mustLoad(t, b)
	}
	models := []*wgdelegate.Model{build(1), build(2)}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			m := models[w%2]
			for i := 0; i < 20; i++ {
				v := make([]float32, 33)
				for j := range v {
					v[j] = float32(w*1000 + i)
				}
				outs, err := m.Execute(context.Background(), []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{33}, v)}...)
				if err != nil {
					errs <- err
					return
				}
				got, _ := outs[0].Float32s()
				for j := range got {
					if got[j] != v[j] {
						errs <- fmt.Errorf("worker %d iteration %d: element %d = %v, want %v", w, i, j, got[j], v[j])
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestConcurrentLoads loads models with large weights (deferred, split
// uploads; background compiles; early warm-ups) from several goroutines at
// once on one device while another model executes, and checks every
// result. Run it with -race.
func TestConcurrentLoads(t *testing.T) {
	const n = 300007 // over 1 MiB of float32
	build := func(seed int) (*serialization.Builder, []float32) {
		b := serialization.NewBuilder()
		f := serialization.Float32
		x := b.Tensor(f, dims(n), -1)
		want := make([]float32, n)
		c1v, c2v := make([]float32, n), make([]float32, n)
		for i := range c1v {
			c1v[i] = float32((i*7+seed)%101) - 50
			c2v[i] = float32((i*3+seed)%89) * 0.5
			want[i] = c1v[i] + c2v[i] // x is zero
		}
		c1, _ := b.NamedConst(f, dims(n), f32bytes(c1v))
		c2, _ := b.NamedConst(f, dims(n), f32bytes(c2v))
		p := b.Tensor(f, dims(n), -1)
		b.Op("et_vk.prepack.default", c2, p)
		y := b.Tensor(f, dims(n), -1)
		b.Op("aten.add.Tensor", x, c1, b.Double(1), y)
		z := b.Tensor(f, dims(n), -1)
		b.Op("aten.add.Tensor", y, p, b.Double(1), z)
		b.Inputs(x)
		b.Outputs(z)
		return b, want
	}
	check := func(m *wgdelegate.Model, want []float32) error {
		outs, err := m.Execute(context.Background(), wgdelegate.Float32Tensor([]int64{n}, make([]float32, n)))
		if err != nil {
			return err
		}
		got, _ := outs[0].Float32s()
		for i := range want {
			if got[i] != want[i] {
				return fmt.Errorf("element %d = %v, want %v", i, got[i], want[i])
			}
		}
		return nil
	}
	busyB, busyWant := build(99)
	busy := mustLoad(t, busyB)
	stop := make(chan struct{})
	errs := make(chan error, 16)
	var bg sync.WaitGroup
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := check(busy, busyWant); err != nil {
				errs <- fmt.Errorf("executing model: %w", err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			b, want := build(w)
			m, err := load(t, b)
			if err != nil {
				errs <- fmt.Errorf("load %d: %w", w, err)
				return
			}
			defer m.Close()
			if err := check(m, want); err != nil {
				errs <- fmt.Errorf("model %d: %w", w, err)
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
