package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// uploadDevices returns the shared device and, when it has direct uploads,
// a second one opened with StagedUploads, so both paths run.
func uploadDevices(t *testing.T) map[string]*Device {
	t.Helper()
	devs := map[string]*Device{"default": testDev}
	if testDev.Info().AdapterType == "cpu" && !testDev.DirectUploads() {
		t.Error("a CPU adapter (lavapipe) without direct uploads")
	}
	staged, err := Open(context.Background(), Options{StagedUploads: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { staged.Close() })
	if staged.DirectUploads() {
		t.Error("StagedUploads device reports direct uploads")
	}
	devs["staged"] = staged
	return devs
}

// readBuffer copies b's bytes back through a staging buffer.
func readBuffer(t *testing.T, d *Device, b *Buffer) []byte {
	t.Helper()
	st, err := d.NewBuffer(Staging, b.Size(), "readback")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Release()
	if err := d.Run(context.Background(), nil, []Readback{{Src: b, Dst: st, Size: b.Size()}}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Mapped()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(m)
}

// checkUploaded: b holds data, then zeros, and is AlignedSize(max(size,
// len(data))) bytes.
func checkUploaded(t *testing.T, d *Device, b *Buffer, size uint64, data []byte) {
	t.Helper()
	if want := AlignedSize(max(size, uint64(len(data)))); b.Size() != want {
		t.Fatalf("buffer is %d bytes, want %d", b.Size(), want)
	}
	got := readBuffer(t, d, b)
	if !bytes.Equal(got[:len(data)], data) {
		t.Fatal("uploaded bytes differ")
	}
	for i, v := range got[len(data):] {
		if v != 0 {
			t.Fatalf("padding byte %d = %d, want 0", len(data)+i, v)
		}
	}
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + seed)
	}
	return b
}

// TestNewBufferData: a buffer created with its data holds it, zero padded
// to the requested size, through the direct path (lavapipe) and through
// queue writes, for sizes around the alignment and a large one.
func TestNewBufferData(t *testing.T) {
	for name, d := range uploadDevices(t) {
		for _, n := range []int{0, 3, 16, 4097, 1<<20 + 5} {
			for _, extra := range []uint64{0, 100} {
				t.Run(fmt.Sprintf("%s/%d+%d", name, n, extra), func(t *testing.T) {
					live := d.LiveObjects()
					data := pattern(n, n)
					b, err := d.NewBufferData(uint64(n)+extra, data, "data")
					if err != nil {
						t.Fatal(err)
					}
					checkUploaded(t, d, b, uint64(n)+extra, data)
					b.Release()
					if got := d.LiveObjects(); got.Buffers != live.Buffers || got.BufferBytes != live.BufferBytes {
						t.Errorf("live buffers %+v after release, want %+v", got, live)
					}
				})
			}
		}
	}
}

// TestBeginFinishUpload: a buffer begun with BeginUpload (prepared by
// PrepareUpload or not) holds the data
// FinishUpload gives it (zero padded), can be finished again with other
// data, and serves a dispatch; the misuses are errors.
func TestBeginFinishUpload(t *testing.T) {
	for name, d := range uploadDevices(t) {
		t.Run(name, func(t *testing.T) {
			var bufs []*Buffer
			var datas [][]byte
			// Several begun at once, prepared or not, finished in order,
			// like a load.
			for i, n := range []int{5, 4096, 1<<20 + 3, 3 << 20, 2<<20 + 1} {
				b, err := d.BeginUpload(uint64(n)+7, "upload")
				if err != nil {
					t.Fatal(err)
				}
				defer b.Release()
				if i%2 == 0 {
					if err := d.PrepareUpload(b); err != nil {
						t.Fatal(err)
					}
				}
				bufs, datas = append(bufs, b), append(datas, pattern(n, i))
			}
			for i, b := range bufs {
				if err := d.FinishUpload(b, datas[i]); err != nil {
					t.Fatal(err)
				}
			}
			for i, b := range bufs {
				checkUploaded(t, d, b, uint64(len(datas[i]))+7, datas[i])
			}
			// Finished again: the new bytes replace the old.
			again := pattern(len(datas[1]), 99)
			if err := d.FinishUpload(bufs[1], again); err != nil {
				t.Fatal(err)
			}
			checkUploaded(t, d, bufs[1], uint64(len(again))+7, again)

			// A dispatch reads and writes an uploaded buffer.
			p, err := d.Pipeline("inc", incWGSL, "main", []shaders.Binding{shaders.ReadWrite})
			if err != nil {
				t.Fatal(err)
			}
			bg, err := d.NewBindGroup(p, []BindEntry{{Buf: bufs[1]}}, "inc")
			if err != nil {
				t.Fatal(err)
			}
			defer bg.Release()
			if err := d.Run(context.Background(), []Dispatch{{Pipeline: p, Group: bg, X: 17, Y: 1, Z: 1}}, nil); err != nil {
				t.Fatal(err)
			}
			got := readBuffer(t, d, bufs[1])
			for i := 0; i < len(again)/4; i++ {
				w := uint32(again[4*i]) | uint32(again[4*i+1])<<8 | uint32(again[4*i+2])<<16 | uint32(again[4*i+3])<<24
				g := uint32(got[4*i]) | uint32(got[4*i+1])<<8 | uint32(got[4*i+2])<<16 | uint32(got[4*i+3])<<24
				if g != w+1 {
					t.Fatalf("word %d = %d after the dispatch, want %d", i, g, w+1)
				}
			}

			// Misuse.
			var ge *Error
			if err := d.FinishUpload(bufs[0], make([]byte, bufs[0].Size()+4)); !errors.As(err, &ge) {
				t.Errorf("oversized FinishUpload: %v, want *gpu.Error", err)
			}
			if _, err := d.BeginUpload(d.Limits().MaxBufferSize+16, "huge"); !errors.As(err, &ge) {
				t.Errorf("BeginUpload over maxBufferSize: %v, want *gpu.Error", err)
			}
			gone, err := d.BeginUpload(64, "released")
			if err != nil {
				t.Fatal(err)
			}
			gone.Release()
			if err := d.FinishUpload(gone, make([]byte, 8)); err == nil {
				t.Error("FinishUpload of a released buffer succeeded")
			}
			if err := d.PrepareUpload(gone); d.DirectUploads() && err == nil {
				t.Error("PrepareUpload of a released buffer succeeded")
			}
		})
	}
}

// TestPrefetch: pipelines made ahead by Prefetch count as created once;
// the first Pipelines lookup that claims them (and its repeats) is not a
// hit, later lookups are; a bad shader yields nil, and the error comes
// from the Pipelines call that needs it.
func TestPrefetch(t *testing.T) {
	d := testDev
	src := incWGSL + "\n// prefetch test\n"
	spec := PipelineSpec{Label: "prefetched", Source: src, Entry: "main", Layout: []shaders.Binding{shaders.ReadWrite}}
	before := d.PipelineStats()
	ps := d.Prefetch([]PipelineSpec{spec})
	if ps[0] == nil {
		t.Fatal("Prefetch returned no pipeline")
	}
	if s := d.PipelineStats(); s.Created != before.Created+1 || s.Hits != before.Hits {
		t.Errorf("after Prefetch: %+v, want one created, no hit (before %+v)", s, before)
	}
	if again := d.Prefetch([]PipelineSpec{spec}); again[0] != ps[0] {
		t.Error("a second Prefetch made another pipeline")
	}
	got, err := d.Pipelines([]PipelineSpec{spec, spec})
	if err != nil || got[0] != ps[0] || got[1] != ps[0] {
		t.Fatalf("Pipelines after Prefetch: %v, %v", got, err)
	}
	if s := d.PipelineStats(); s.Created != before.Created+1 || s.Hits != before.Hits {
		t.Errorf("after claiming: %+v, want no hit yet (before %+v)", s, before)
	}
	if _, err := d.Pipelines([]PipelineSpec{spec}); err != nil {
		t.Fatal(err)
	}
	if s := d.PipelineStats(); s.Hits != before.Hits+1 {
		t.Errorf("a later lookup: %d hits, want %d", s.Hits, before.Hits+1)
	}
	bad := PipelineSpec{Label: "bad", Source: "not wgsl (prefetch)", Entry: "main"}
	if ps := d.Prefetch([]PipelineSpec{bad}); ps[0] != nil {
		t.Error("Prefetch of a bad shader returned a pipeline")
	}
	var ge *Error
	if _, err := d.Pipelines([]PipelineSpec{bad}); !errors.As(err, &ge) {
		t.Errorf("Pipelines of a bad shader: %v, want *gpu.Error", err)
	}
}

// TestSubmitThenRun: Submit returns without waiting and a later Run sees
// (and waits for) its work, the queue being in order.
func TestSubmitThenRun(t *testing.T) {
	d := testDev
	p, err := d.Pipeline("inc", incWGSL, "main", []shaders.Binding{shaders.ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := d.NewBufferData(0, make([]byte, 256), "submit")
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Release()
	bg, err := d.NewBindGroup(p, []BindEntry{{Buf: buf}}, "inc")
	if err != nil {
		t.Fatal(err)
	}
	defer bg.Release()
	for range 3 {
		if err := d.Submit([]Dispatch{{Pipeline: p, Group: bg, X: 1, Y: 1, Z: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	got := readBuffer(t, d, buf)
	for i := 0; i < 64; i++ {
		if got[4*i] != 3 {
			t.Fatalf("word %d = %d after three submits, want 3", i, got[4*i])
		}
	}
}
