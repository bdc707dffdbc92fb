package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/npy"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// realPTEDir holds real ExecuTorch programs (none with a VulkanBackend
// delegate), shared with the rest of the project beside the repository.
const realPTEDir = "../../../shared/testdata/executorch"

// sharedDevice is the one device every test in this process uses; see
// openDevice.
var sharedDevice *wgdelegate.Device

func TestMain(m *testing.M) {
	var (
		once sync.Once
		err  error
	)
	openDevice = func(ctx context.Context, opts wgdelegate.DeviceOptions) (*wgdelegate.Device, func(), error) {
		if opts.CPUThreads != 0 {
			// A thread setting is fixed when a device opens: no sharing.
			dev, err := wgdelegate.OpenDevice(ctx, opts)
			if err != nil {
				return nil, nil, err
			}
			return dev, func() { dev.Close() }, nil
		}
		once.Do(func() { sharedDevice, err = wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{}) })
		if err != nil {
			return nil, nil, err
		}
		return sharedDevice, func() {}, nil
	}
	code := m.Run()
	if sharedDevice != nil {
		sharedDevice.Close()
	}
	os.Exit(code)
}

// invoke runs the command in-process and returns its exit code and output.
func invoke(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// mustFail checks the error contract: status 1, exactly one stderr line
// "wgdelegate: ...", no recovered panic, and that the line contains every
// one of wants.
func mustFail(t *testing.T, wants []string, args ...string) string {
	t.Helper()
	code, _, stderr := invoke(t, args...)
	if code != 1 {
		t.Fatalf("%v: exit %d, want 1 (stderr %q)", args, code, stderr)
	}
	if !strings.HasPrefix(stderr, "wgdelegate: ") || !strings.HasSuffix(stderr, "\n") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("%v: stderr %q is not one 'wgdelegate: ' line", args, stderr)
	}
	if strings.Contains(stderr, "internal error") || strings.Contains(stderr, "panic") {
		t.Fatalf("%v: panicked: %s", args, stderr)
	}
	for _, w := range wants {
		if !strings.Contains(stderr, w) {
			t.Errorf("%v: stderr %q does not mention %q", args, stderr, w)
		}
	}
	return stderr
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := invoke(t, args...)
	if code != 0 || stderr != "" {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
	}
	return stdout
}

func write(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeNPY(t *testing.T, dir, name string, tensor graph.Tensor) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := npy.WriteFile(p, tensor); err != nil {
		t.Fatal(err)
	}
	return p
}

func readNPY(t *testing.T, path string) graph.Tensor {
	t.Helper()
	tensor, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return tensor
}

func float32s(t *testing.T, tensor graph.Tensor) []float32 {
	t.Helper()
	v, err := tensor.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var (
	xData = []float32{1, -2, 3, -4, 5, -6}
	wData = []float32{0.5, 1.5, 2.5, 3.5, 4.5, 5.5}
)

func f32bytes(v []float32) []byte { return graph.Float32Tensor(nil, v).Data }

// twoOutputGraph builds, from registered ops only:
//
//	x [2 3] --view_copy--> y [3 2]                    output 0
//	w (named constant) --prepack--> p --clone--> z    output 1
//
// and returns the builder, so callers can encode it as a blob or a .pte.
func twoOutputGraph() *serialization.Builder {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, []uint32{2, 3}, 0)
	y := b.Tensor(serialization.Float32, []uint32{3, 2}, 1)
	b.Op("aten.view_copy.default", x, b.IntList(3, 2), y)
	w, _ := b.NamedConst(serialization.Float32, []uint32{2, 3}, f32bytes(wData))
	p := b.Tensor(serialization.Float32, []uint32{2, 3}, -1)
	b.Op("et_vk.prepack.default", w, p)
	z := b.Tensor(serialization.Float32, []uint32{2, 3}, 0)
	b.Op("aten.clone.default", p, b.Null(), z)
	b.Inputs(x)
	b.Outputs(y, z)
	return b
}

// mustBlob encodes b, failing t on an error.
func mustBlob(t testing.TB, b *serialization.Builder) []byte {
	t.Helper()
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	return blob
}

// reluGraph is float32 x --relu--> y of dims, x and y in memory objects
// xMem and yMem (-1: their own).
func reluGraph(t *testing.T, dims []uint32, xMem, yMem int32) []byte {
	t.Helper()
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims, xMem)
	y := b.Tensor(serialization.Float32, dims, yMem)
	b.Op("aten.relu.default", x, y)
	b.Inputs(x)
	b.Outputs(y)
	return mustBlob(t, b)
}

// twoDelegatePTE writes dir/two.pte: a program with two VulkanBackend
// delegates, each viewGraph float32, and returns its path.
func twoDelegatePTE(t *testing.T, dir string) string {
	t.Helper()
	blob := viewGraph(t, serialization.Float32)
	in := serialization.EValueSpec{ScalarType: serialization.ScalarTypeFloat, Sizes: []int32{2, 3}}
	out := serialization.EValueSpec{ScalarType: serialization.ScalarTypeFloat, Sizes: []int32{3, 2}}
	pte, err := serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{
		{ID: serialization.VulkanBackendID, Blob: blob, Inputs: []serialization.EValueSpec{in}, Outputs: []serialization.EValueSpec{out}},
		{ID: serialization.VulkanBackendID, Blob: blob, Inputs: []serialization.EValueSpec{in}, Outputs: []serialization.EValueSpec{out}}}})
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, "two.pte", pte)
}

// viewGraph is x [2 3] --view_copy--> y [3 2] of the given dtype, all inline.
func viewGraph(t *testing.T, dt serialization.DataType) []byte {
	t.Helper()
	b := serialization.NewBuilder()
	x := b.Tensor(dt, []uint32{2, 3}, -1)
	y := b.Tensor(dt, []uint32{3, 2}, -1)
	b.Op("aten.view_copy.default", x, b.IntList(3, 2), y)
	b.Inputs(x)
	b.Outputs(y)
	return mustBlob(t, b)
}

// fixture writes the two-output graph as a raw blob plus .ptd, as a .pte
// with an inline delegate and its own named data, and as a .pte with a
// segment delegate whose weights are only in the .ptd.
type fixture struct {
	dir, blob, ptd, pteInline, pteSegment, x string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	b := twoOutputGraph()
	blob := mustBlob(t, b)
	ptd, err := serialization.EncodePTD(b.NamedBlobs())
	if err != nil {
		t.Fatal(err)
	}
	inline, err := serialization.EncodePTE(serialization.PTEOptions{
		Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: blob, Inline: true}},
		NamedData: b.NamedBlobs(),
	})
	if err != nil {
		t.Fatal(err)
	}
	segment, err := serialization.EncodePTE(serialization.PTEOptions{
		Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: blob}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{
		dir:        dir,
		blob:       write(t, dir, "model.bin", blob),
		ptd:        write(t, dir, "weights.ptd", ptd),
		pteInline:  write(t, dir, "inline.pte", inline),
		pteSegment: write(t, dir, "segment.pte", segment),
		x:          writeNPY(t, dir, "x.npy", graph.Float32Tensor([]int64{2, 3}, xData)),
	}
}

// checkTwoOutputs checks the files the two-output graph writes.
func checkTwoOutputs(t *testing.T, out string) {
	t.Helper()
	y := readNPY(t, filepath.Join(out, "output_0.npy"))
	if !slices.Equal(y.Shape, []int64{3, 2}) || !slices.Equal(float32s(t, y), xData) {
		t.Errorf("output 0: %v %v", y.Shape, float32s(t, y))
	}
	z := readNPY(t, filepath.Join(out, "output_1.npy"))
	if !slices.Equal(z.Shape, []int64{2, 3}) || !slices.Equal(float32s(t, z), wData) {
		t.Errorf("output 1: %v %v", z.Shape, float32s(t, z))
	}
	if _, err := os.Stat(filepath.Join(out, "output_2.npy")); err == nil {
		t.Errorf("an output_2.npy was written for a two-output graph")
	}
}

func TestRunModelKinds(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name string
		args []string
	}{
		{"blob with --data", []string{"--data", f.ptd, "--input", f.x, f.blob}},
		{"pte inline delegate, named data in the pte", []string{"--input", f.x, f.pteInline}},
		{"pte segment delegate with --data", []string{"--data", f.ptd, "--input", f.x, f.pteSegment}},
		// The same .ptd twice merges cleanly.
		{"pte inline delegate plus the ptd", []string{"--data=" + f.ptd, "--input=" + f.x, f.pteInline}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(f.dir, "out", string(rune('a'+i)), "nested")
			args := append([]string{"run", "--output-dir", out}, tc.args...)
			stdout := mustRun(t, args...)
			checkTwoOutputs(t, out)
			if !strings.Contains(stdout, "output_0.npy") || !strings.Contains(stdout, "output_1.npy") {
				t.Errorf("stdout %q does not list the outputs", stdout)
			}
		})
	}
}

// TestRunFlagOrder: flags may come before or after MODEL, in any mix.
func TestRunFlagOrder(t *testing.T) {
	f := newFixture(t)
	for i, args := range [][]string{
		{"run", "--output-dir", "OUT", f.pteSegment, "--input", f.x, "--data", f.ptd},
		{"run", f.pteSegment, "--output-dir=OUT", "--input", f.x, "--data", f.ptd},
		{"run", "-data", f.ptd, "-output-dir", "OUT", "-input", f.x, f.pteSegment},
		{"run", "--data", f.ptd, "--input", f.x, "--output-dir", "OUT", "--", f.pteSegment},
	} {
		out := filepath.Join(f.dir, "order", string(rune('a'+i)))
		for j := range args {
			if args[j] == "OUT" {
				args[j] = out
			} else if args[j] == "--output-dir=OUT" {
				args[j] = "--output-dir=" + out
			}
		}
		mustRun(t, args...)
		checkTwoOutputs(t, out)
	}
}

func TestRunQuietVerbose(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(f.dir, "out")
	if s := mustRun(t, "run", "-q", "--input", f.x, "--output-dir", out, f.pteInline); s != "" {
		t.Errorf("--quiet printed %q", s)
	}
	code, s, stderr := invoke(t, "run", "-v", "--input", f.x, "--output-dir", out, f.pteInline)
	if code != 0 || !strings.Contains(stderr, "level=DEBUG") || !strings.Contains(stderr, "graph: built") {
		t.Errorf("--verbose: exit %d, stderr %q (want debug logs)", code, stderr)
	}
	for _, want := range []string{"adapter:", "subnormals: kept", "output_1.npy", "deferred constants", "1 (24 bytes)", "dispatches"} {
		if !strings.Contains(s, want) {
			t.Errorf("--verbose output lacks %q:\n%s", want, s)
		}
	}
}

// TestRunNarrowing feeds int64 data to an int32 graph and float64 data to a
// float32 graph; the graph narrows both.
func TestRunNarrowing(t *testing.T) {
	dir := t.TempDir()
	i32 := write(t, dir, "i32.bin", viewGraph(t, serialization.Int32))
	in := writeNPY(t, dir, "in.npy", graph.Int64Tensor([]int64{2, 3}, []int64{1, -2, 3, math.MaxInt32, math.MinInt32, 0}))
	out := filepath.Join(dir, "out")
	mustRun(t, "run", "--input", in, "--output-dir", out, i32)
	got, err := readNPY(t, filepath.Join(out, "output_0.npy")).Int32s()
	if err != nil || !slices.Equal(got, []int32{1, -2, 3, math.MaxInt32, math.MinInt32, 0}) {
		t.Errorf("int32 output %v, %v", got, err)
	}
	over := writeNPY(t, dir, "over.npy", graph.Int64Tensor([]int64{2, 3}, []int64{1, 2, 3, 4, 5, math.MaxInt32 + 1}))
	mustFail(t, []string{"overflows"}, "run", "--input", over, "--output-dir", out, i32)

	f32 := write(t, dir, "f32.bin", viewGraph(t, serialization.Float32))
	vals := []float64{0.5, -1.25, 3, 1e-3, -7, 100}
	var raw []byte
	for _, v := range vals {
		raw = append(raw, graph.Int64Tensor(nil, []int64{int64(math.Float64bits(v))}).Data...)
	}
	in64 := writeNPY(t, dir, "in64.npy", graph.Tensor{DType: serialization.Float64, Shape: []int64{2, 3}, Data: raw})
	mustRun(t, "run", "--input", in64, "--output-dir", out, f32)
	gotF := float32s(t, readNPY(t, filepath.Join(out, "output_0.npy")))
	for i, v := range vals {
		if gotF[i] != float32(v) {
			t.Errorf("float output %d = %v, want %v", i, gotF[i], float32(v))
		}
	}
}

// TestRunRelu runs aten.relu.default once that op is registered.
func TestRunRelu(t *testing.T) {
	if _, ok := ops.Lookup("aten.relu.default"); !ok {
		t.Skip("aten.relu.default is not registered yet")
	}
	dir := t.TempDir()
	model := write(t, dir, "relu.bin", reluGraph(t, []uint32{2, 3}, 0, 1))
	in := writeNPY(t, dir, "x.npy", graph.Float32Tensor([]int64{2, 3}, xData))
	mustRun(t, "run", "--input", in, "--output-dir", dir, model)
	got := float32s(t, readNPY(t, filepath.Join(dir, "output_0.npy")))
	if want := []float32{1, 0, 3, 0, 5, 0}; !slices.Equal(got, want) {
		t.Errorf("relu gave %v, want %v", got, want)
	}
}

func TestRunErrors(t *testing.T) {
	f := newFixture(t)
	dir := f.dir
	out := filepath.Join(dir, "out")
	blob, err := os.ReadFile(f.blob)
	if err != nil {
		t.Fatal(err)
	}
	garbage := write(t, dir, "garbage.pte", []byte("this is not a model, just some text\n"))
	truncated := write(t, dir, "truncated.bin", blob[:len(blob)/2])
	empty := write(t, dir, "empty.bin", nil)
	badNPY := write(t, dir, "bad.npy", []byte("\x93NUMPY\x01\x00\x20\x00{'descr': '<f4', 'shape': (2,}\n"))
	shortNPY := write(t, dir, "short.npy", func() []byte {
		b, _ := npy.Encode(graph.Float32Tensor([]int64{2, 3}, xData))
		return b[:len(b)-4]
	}())
	wrongShape := writeNPY(t, dir, "wrong_shape.npy", graph.Float32Tensor([]int64{3, 2}, xData))
	wrongRank := writeNPY(t, dir, "wrong_rank.npy", graph.Float32Tensor([]int64{6}, xData))
	wrongType := writeNPY(t, dir, "wrong_type.npy", graph.Int32Tensor([]int64{2, 3}, []int32{1, 2, 3, 4, 5, 6}))

	ub := serialization.NewBuilder()
	ux := ub.Tensor(serialization.Float32, []uint32{2, 3}, -1)
	uy := ub.Tensor(serialization.Float32, []uint32{2, 3}, -1)
	ub.Op("aten.bogus_op.default", ux, uy)
	ub.Op("aten.other_missing.default", uy, ux)
	ub.Inputs(ux)
	ub.Outputs(uy)
	ublob, err := ub.Blob()
	if err != nil {
		t.Fatal(err)
	}
	unknownOp := write(t, dir, "unknown_op.bin", ublob)

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"missing model file", []string{"--input", f.x, "--output-dir", out, filepath.Join(dir, "nope.pte")}, []string{"nope.pte", "no such file"}},
		{"garbage model", []string{"--input", f.x, "--output-dir", out, garbage}, []string{"garbage.pte", "not a .pte program or a VH00 delegate blob"}},
		{"empty model", []string{"--output-dir", out, empty}, []string{"empty file"}},
		{"ptd as model", []string{"--output-dir", out, f.ptd}, []string{"--data"}},
		{"npy as model", []string{"--output-dir", out, f.x}, []string{"--input"}},
		{"truncated blob", []string{"--data", f.ptd, "--input", f.x, "--output-dir", out, truncated}, []string{"truncated.bin", "serialization"}},
		{"wrong input count (two)", []string{"--data", f.ptd, "--input", f.x, "--input", f.x, "--output-dir", out, f.blob}, []string{"takes 1 input(s)", "got 2"}},
		{"wrong input shape", []string{"--data", f.ptd, "--input", wrongShape, "--output-dir", out, f.blob}, []string{"wrong_shape.npy", "[3 2]", "[2 3]"}},
		{"wrong input rank", []string{"--data", f.ptd, "--input", wrongRank, "--output-dir", out, f.blob}, []string{"[6]"}},
		{"wrong input dtype", []string{"--data", f.ptd, "--input", wrongType, "--output-dir", out, f.blob}, []string{"int32", "float32"}},
		{"malformed npy", []string{"--data", f.ptd, "--input", badNPY, "--output-dir", out, f.blob}, []string{"input 0", "bad.npy", "npy:"}},
		{"short npy", []string{"--data", f.ptd, "--input", shortNPY, "--output-dir", out, f.blob}, []string{"short.npy", "data length"}},
		{"missing npy", []string{"--data", f.ptd, "--input", filepath.Join(dir, "nope.npy"), "--output-dir", out, f.blob}, []string{"nope.npy"}},
		{"unknown op", []string{"--input", f.x, "--output-dir", out, unknownOp}, []string{"aten.bogus_op.default", "aten.other_missing.default"}},
		{"missing --output-dir", []string{"--data", f.ptd, "--input", f.x, f.blob}, []string{"--output-dir"}},
		{"missing named key", []string{"--input", f.x, "--output-dir", out, f.pteSegment}, []string{"named key", "--data"}},
		{"missing named key (blob)", []string{"--input", f.x, "--output-dir", out, f.blob}, []string{"named key"}},
		{"bad data file", []string{"--data", f.x, "--input", f.x, "--output-dir", out, f.blob}, []string{"data file 0"}},
		{"missing data file", []string{"--data", filepath.Join(dir, "nope.ptd"), "--input", f.x, "--output-dir", out, f.blob}, []string{"nope.ptd"}},
		{"output dir is a file", []string{"--data", f.ptd, "--input", f.x, "--output-dir", f.x, f.blob}, []string{"output"}},
		{"no model", []string{"--output-dir", out}, []string{"no MODEL"}},
		{"two models", []string{"--output-dir", out, f.blob, f.pteInline}, []string{"one MODEL"}},
		{"unknown flag", []string{"--frobnicate", f.blob}, []string{"--frobnicate"}},
		{"flag without value", []string{f.blob, "--output-dir"}, []string{"--output-dir", "needs a value"}},
		{"bool flag with value", []string{"--quiet=yes", f.blob}, []string{"--quiet"}},
		{"output dir twice", []string{"--output-dir", out, "--output-dir", out, f.blob}, []string{"twice"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustFail(t, tc.want, append([]string{"run"}, tc.args...)...)
		})
	}
}

// TestRunNoVulkanDelegate loads real ExecuTorch programs that hold other
// delegates (or none); the error names what they do hold.
func TestRunNoVulkanDelegate(t *testing.T) {
	cases := []struct{ file, want string }{
		{"add_apple.pte", "program has no delegates"},
		{"stories260k_qnn.pte", "QnnBackend"},
	}
	for _, tc := range cases {
		path := filepath.Join(realPTEDir, tc.file)
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s not available: %v", path, err)
		}
		out := t.TempDir()
		mustFail(t, []string{"no VulkanBackend delegate", tc.want}, "run", "--output-dir", out, path)
		mustFail(t, []string{"no VulkanBackend delegate", tc.want}, "inspect", path)
	}
}

func TestCommands(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "run"}, {"help", "inspect"}, {"help", "graph"},
		{"run", "-h"}, {"run", "--output-dir", "x", "--help"}, {"inspect", "-h"}, {"graph", "--help"}} {
		code, stdout, stderr := invoke(t, args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage:") || !hasExamples(stdout) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if s := mustRun(t, "version"); !strings.HasPrefix(s, "wgdelegate ") || strings.Count(s, "\n") != 1 {
		t.Errorf("version printed %q", s)
	}
	mustFail(t, []string{"frob"}, "frob")
	mustFail(t, []string{"unknown command"}, "help", "frob")
	mustFail(t, []string{"version"}, "version", "extra")
	mustFail(t, []string{"no MODEL"}, "inspect")
	mustFail(t, []string{"--data"}, "inspect", "--data", "x", "model.pte")
}

// TestPanicBecomesError checks the top-level recover with a writer that
// panics: the error contract holds even for bugs.
func TestPanicBecomesError(t *testing.T) {
	var e bytes.Buffer
	code := run([]string{"version"}, panicWriter{}, &e)
	if code != 1 || strings.Count(e.String(), "\n") != 1 || !strings.HasPrefix(e.String(), "wgdelegate: internal error") {
		t.Fatalf("exit %d, stderr %q", code, e.String())
	}
}

type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("writer exploded") }

func TestInspect(t *testing.T) {
	f := newFixture(t)
	common := []string{
		"VH00 header", "header_size", "flatbuffer_offset", "bytes_size",
		"\nvalues\n", "VkTensor", "IntList", "[3 2]", "CONSTANT_ID", "MEM_OBJ_ID",
		"\nops\n", "aten.view_copy.default", "et_vk.prepack.default", "aten.clone.default",
		"\nconstants\n", "DEFERRED", "yes",
		"\ninputs\n", "\noutputs\n",
		"memory plan", "shared objects", "2, 48 bytes", "deferred constants", "1, 24 bytes",
	}
	s := mustRun(t, "inspect", f.blob)
	for _, want := range append(common, "format VH00 delegate blob", "ptd") {
		if !strings.Contains(s, want) {
			t.Errorf("inspect blob lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "\nprogram\n") {
		t.Errorf("inspect of a raw blob printed a program section")
	}
	s = mustRun(t, "inspect", f.pteInline)
	for _, want := range append(common, "\nprogram\n", "ET12", "\ndelegates\n", "VulkanBackend", "inline 0", "pte") {
		if !strings.Contains(s, want) {
			t.Errorf("inspect .pte lacks %q:\n%s", want, s)
		}
	}
	s = mustRun(t, "inspect", f.pteSegment)
	for _, want := range []string{"eh00 header", "segment 0", "named data", "0 keys"} {
		if !strings.Contains(s, want) {
			t.Errorf("inspect segment .pte lacks %q:\n%s", want, s)
		}
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("trailing space in %q", line)
		}
	}

	dir := f.dir
	mustFail(t, []string{"nope.bin"}, "inspect", filepath.Join(dir, "nope.bin"))
	mustFail(t, []string{"not a .pte program"}, "inspect", write(t, dir, "junk", []byte("junk junk junk")))
	blob, _ := os.ReadFile(f.blob)
	mustFail(t, []string{"serialization"}, "inspect", write(t, dir, "trunc.bin", blob[:40]))
	pte, _ := os.ReadFile(f.pteInline)
	mustFail(t, []string{"serialization"}, "inspect", write(t, dir, "trunc.pte", pte[:len(pte)/2]))
}

// TestPlanMatchesRuntime compares inspect's memory plan with what the
// runtime reports after loading the same model.
func TestPlanMatchesRuntime(t *testing.T) {
	b := twoOutputGraph()
	blob := mustBlob(t, b)
	dec, err := serialization.DecodeBlob(blob)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := newGraphInfo(dec.Graph).plan()
	if err != nil {
		t.Fatal(err)
	}
	ptd, err := serialization.EncodePTD(b.NamedBlobs())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dev, release, err := openDevice(ctx, wgdelegate.DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	m, err := dev.Load(ctx, blob, ptd)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ms := m.MemoryStats()
	s := p.Stats
	if ms.NumSharedObjects != s.NumSharedObjects || ms.SharedBufferBytes != s.SharedBufferBytes ||
		ms.UnsharedTensorBufferBytes != s.UnsharedTensorBufferBytes || ms.NumDeferredConstants != s.NumDeferred ||
		ms.DeferredConstantBytes != s.DeferredBytes || ms.TensorBufferBytes != s.TensorBufferBytes() {
		t.Errorf("inspect plan %+v, runtime %+v", s, ms)
	}
}

func TestList(t *testing.T) {
	if got := list([]int{1, 2, 3}); got != "[1 2 3]" {
		t.Errorf("short list %q", got)
	}
	long := make([]int, 40)
	for i := range long {
		long[i] = i
	}
	if got := list(long); !strings.Contains(got, "(40 items)") || !strings.HasSuffix(got, " 39]") {
		t.Errorf("long list %q", got)
	}
}

// TestInspectCorrupt feeds inspect thousands of corrupted copies of a valid
// blob and .pte: each must print or fail cleanly, never panic.
func TestInspectCorrupt(t *testing.T) {
	f := newFixture(t)
	r := rand.New(rand.NewPCG(7, 7))
	for _, path := range []string{f.blob, f.pteInline} {
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3000 {
			b := slices.Clone(orig)
			for range 1 + r.IntN(4) {
				b[r.IntN(len(b))] = byte(r.Uint32())
			}
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%s mutation %d: inspect panicked: %v", path, i, p)
					}
				}()
				inspectModel(io.Discard, path, b, wgdelegate.DefaultLimits, "default")
				inspectJSON(io.Discard, path, b, wgdelegate.DefaultLimits, "default")
				writeDOT(io.Discard, path, b)
			}()
		}
	}
}

// hasExamples reports whether usage text ends with an Examples section
// holding at least one wgdelegate command line.
func hasExamples(usage string) bool {
	_, ex, ok := strings.Cut(usage, "\nExamples:\n")
	return ok && (strings.Contains(ex, "\n  wgdelegate ") || strings.HasPrefix(ex, "  wgdelegate "))
}

// TestPrintMemoryStatsRebinding: the memory table shows re-bound tensors
// and added shared buffers only when there are some.
func TestPrintMemoryStatsRebinding(t *testing.T) {
	for _, c := range []struct {
		s         wgdelegate.MemoryStats
		want, not []string
	}{
		{wgdelegate.MemoryStats{NumSharedObjects: 2}, nil, []string{"re-bound", "added shared", "quantized"}},
		{wgdelegate.MemoryStats{NumQuantizedWeights: 3, QuantizedParams: 1000, QuantizedWeightBytes: 625},
			[]string{"quantized weights", "3 (1000 parameters in 625 bytes, 0.625 bytes each)"}, []string{"re-bound"}},
		{wgdelegate.MemoryStats{NumSharedObjects: 2, MovedTensors: 3}, []string{"re-bound tensors", "3"}, []string{"added shared"}},
		{wgdelegate.MemoryStats{NumSharedObjects: 3, AddedSharedObjects: 1, AddedSharedBytes: 64},
			[]string{"added shared buffers", "1 (64 bytes beyond the exporter's plan)"}, []string{"re-bound"}},
	} {
		var b strings.Builder
		printMemoryStats(&b, c.s)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%+v: output lacks %q:\n%s", c.s, w, b.String())
			}
		}
		for _, w := range c.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("%+v: output has %q:\n%s", c.s, w, b.String())
			}
		}
	}
}
