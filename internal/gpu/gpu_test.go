package gpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/wgdelegate/wgdelegate/shaders"
)

var testDev *Device

func TestMain(m *testing.M) {
	d, err := Open(context.Background(), Options{})
	if err != nil {
		println("open device:", err.Error())
		os.Exit(1)
	}
	testDev = d
	code := m.Run()
	d.Close()
	os.Exit(code)
}

const incWGSL = `
@group(0) @binding(0) var<storage, read_write> d: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x < arrayLength(&d)) { d[gid.x] = d[gid.x] + 1u; }
}`

// incRig is the inc kernel (or another of its layout) bound to a storage
// buffer, with a staging buffer as large where asked: the setup many
// device tests start from.
type incRig struct {
	p   *Pipeline
	buf *Buffer
	st  *Buffer // nil without staging
	bg  *BindGroup
}

// newIncRig makes an incRig on d over a storage buffer of size bytes,
// with a staging buffer of as many bytes when staging is set; any error
// fails t. The caller releases it (release).
func newIncRig(t testing.TB, d *Device, size uint64, staging bool) incRig {
	t.Helper()
	p, err := d.Pipeline("inc", incWGSL, "main", []shaders.Binding{shaders.ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	return newRig(t, d, p, size, staging)
}

// newRig is newIncRig for p, a kernel of one read-write binding.
func newRig(t testing.TB, d *Device, p *Pipeline, size uint64, staging bool) incRig {
	t.Helper()
	r := incRig{p: p}
	var err error
	if r.buf, err = d.NewBuffer(Storage, size, "data"); err != nil {
		t.Fatal(err)
	}
	if staging {
		if r.st, err = d.NewBuffer(Staging, size, "staging"); err != nil {
			r.buf.Release()
			t.Fatal(err)
		}
	}
	if r.bg, err = d.NewBindGroup(r.p, []BindEntry{{Buf: r.buf}}, "inc"); err != nil {
		r.release()
		t.Fatal(err)
	}
	return r
}

// release releases the rig's bind group and buffers (not the cached
// pipeline); releasing twice is harmless.
func (r incRig) release() {
	if r.bg != nil {
		r.bg.Release()
	}
	if r.st != nil {
		r.st.Release()
	}
	r.buf.Release()
}

// TestReadAfterWriteInOnePass records 500 dependent dispatches in one
// compute pass: each reads what the previous one wrote. WebGPU makes every
// dispatch its own usage scope, so the result must be exactly 500.
func TestReadAfterWriteInOnePass(t *testing.T) {
	d := testDev
	r := newIncRig(t, d, 4*100, true)
	defer r.release()
	p, buf, st, bg := r.p, r.buf, r.st, r.bg
	if err := d.Write(buf, 0, make([]byte, 400)); err != nil {
		t.Fatal(err)
	}
	const n = 500
	ds := make([]Dispatch, n)
	for i := range ds {
		ds[i] = Dispatch{Pipeline: p, Group: bg, X: 2, Y: 1, Z: 1}
	}
	if err := d.Run(context.Background(), ds, []Readback{{Src: buf, Dst: st, Size: 400}}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Mapped()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if v := binary.LittleEndian.Uint32(m[4*i:]); v != n {
			t.Fatalf("element %d = %d, want %d", i, v, n)
		}
	}
	if err := st.Unmap(); err != nil {
		t.Fatal(err)
	}
	// The pipeline is cached by content: asking again returns the same one.
	p2, err := d.Pipeline("other label", incWGSL, "main", []shaders.Binding{shaders.ReadWrite})
	if err != nil || p2 != p {
		t.Fatalf("pipeline not reused: %v", err)
	}
}

// TestCancelledRunSettles cancels a Run and checks that the next Run on the
// same staging buffer settles the pending map instead of aborting.
func TestCancelledRunSettles(t *testing.T) {
	d := testDev
	buf, _ := d.NewBuffer(Storage, 64, "data")
	defer buf.Release()
	st, _ := d.NewBuffer(Staging, 64, "staging")
	defer st.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := d.Run(ctx, nil, []Readback{{Src: buf, Dst: st, Size: 64}})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	want := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	if err := d.Write(buf, 0, want); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(context.Background(), nil, []Readback{{Src: buf, Dst: st, Size: 64}}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Mapped()
	if err != nil {
		t.Fatal(err)
	}
	if string(m) != string(want) {
		t.Fatalf("read %q", m)
	}
}

// TestWriteTail checks a write whose length is not a multiple of 4.
func TestWriteTail(t *testing.T) {
	d := testDev
	buf, _ := d.NewBuffer(Storage, 5, "data")
	defer buf.Release()
	if buf.Size() != 16 {
		t.Fatalf("size %d, want 16", buf.Size())
	}
	st, _ := d.NewBuffer(Staging, 8, "staging")
	defer st.Release()
	if err := d.Write(buf, 0, []byte{1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(buf, 0, make([]byte, 20)); err == nil {
		t.Fatal("overflowing write accepted")
	}
	if err := d.Run(context.Background(), nil, []Readback{{Src: buf, Dst: st, Size: 8}}); err != nil {
		t.Fatal(err)
	}
	m, _ := st.Mapped()
	if m[0] != 1 || m[4] != 5 || m[5] != 0 {
		t.Fatalf("read %v", m)
	}
}

func TestBadShaderIsAnError(t *testing.T) {
	_, err := testDev.Pipeline("bad", "this is not wgsl", "main", nil)
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("got %v, want *gpu.Error", err)
	}
}

func TestStagingMisuse(t *testing.T) {
	d := testDev
	buf, _ := d.NewBuffer(Storage, 16, "data")
	defer buf.Release()
	if _, err := buf.Mapped(); err == nil {
		t.Fatal("Mapped on an unmapped buffer succeeded")
	}
	if err := d.Run(context.Background(), nil, []Readback{{Src: buf, Dst: buf, Size: 16}}); err == nil {
		t.Fatal("readback into a storage buffer accepted")
	}
	if _, err := d.NewBuffer(Storage, 1<<62, "huge"); err == nil {
		t.Fatal("huge buffer accepted")
	}
}

// TestSubmitValidationErrorIsReturned: a dispatch the device rejects (a grid
// over maxComputeWorkgroupsPerDimension) comes back as an error from the
// raw submit path, instead of reaching the binding's fatal uncaptured-error
// handler; the device stays usable.
func TestSubmitValidationErrorIsReturned(t *testing.T) {
	d := testDev
	r := newIncRig(t, d, 64, false)
	defer r.release()
	p, g := r.p, r.bg
	over := d.Limits().MaxComputeWorkgroupsPerDimension + 1
	err := d.Run(context.Background(), []Dispatch{{Pipeline: p, Group: g, X: over, Y: 1, Z: 1}}, nil)
	if err == nil {
		t.Fatal("a grid over the device limit was accepted")
	}
	t.Logf("rejected: %v", err)
	if err := d.Run(context.Background(), []Dispatch{{Pipeline: p, Group: g, X: 1, Y: 1, Z: 1}}, nil); err != nil {
		t.Fatalf("device unusable after a rejected submit: %v", err)
	}
}

// TestFlushedWrites: writes totalling several writeFlushBytes are flushed
// along the way (at most writeFlushDepth flushes unfinished), small writes
// are not, and every byte arrives whatever the flushing.
func TestFlushedWrites(t *testing.T) {
	d := testDev
	const n = 3
	const piece = writeFlushBytes / 4
	size := 2*writeFlushBytes + writeFlushBytes/2
	var bufs []*Buffer
	var datas [][]byte
	d.mu.Lock()
	before := d.flush.count
	d.mu.Unlock()
	for i := range n {
		b, err := d.NewBuffer(Storage, uint64(size), "big")
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(j*7 + i)
		}
		for off := 0; off < size; off += piece {
			if err := d.Write(b, uint64(off), data[off:off+piece]); err != nil {
				t.Fatal(err)
			}
		}
		bufs, datas = append(bufs, b), append(datas, data)
	}
	d.mu.Lock()
	flushes := d.flush.count - before
	d.mu.Unlock()
	// A flush after every writeFlushBytes: 7.5 thresholds written.
	if want := int64(n * size / writeFlushBytes); flushes != want {
		t.Errorf("%d flushes for %d bytes, want %d", flushes, n*size, want)
	}
	small, _ := d.NewBuffer(Storage, 64, "small")
	defer small.Release()
	d.mu.Lock()
	before = d.flush.count
	d.mu.Unlock()
	if err := d.Write(small, 0, make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(small, 0, make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	if d.flush.count != before {
		t.Errorf("small writes flushed %d times", d.flush.count-before)
	}
	d.mu.Unlock()
	for i, b := range bufs {
		st, _ := d.NewBuffer(Staging, uint64(size), "staging")
		defer st.Release()
		if err := d.Run(context.Background(), nil, []Readback{{Src: b, Dst: st, Size: b.Size()}}); err != nil {
			t.Fatal(err)
		}
		m, _ := st.Mapped()
		if !bytes.Equal(m[:size], datas[i]) {
			t.Fatalf("buffer %d: bytes differ after flushed writes", i)
		}
	}
}
