package gpu

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// BufferKind selects a buffer's usage flags.
type BufferKind uint8

// Buffer kinds.
const (
	// Storage buffers hold tensors: Storage|CopyDst|CopySrc.
	Storage BufferKind = iota
	// UniformBuf buffers hold kernel parameters: Uniform|CopyDst.
	UniformBuf
	// Staging buffers receive outputs for readback: MapRead|CopyDst.
	Staging
)

type mapState uint8

const (
	unmapped mapState = iota
	mapPending
	mapped
	mapFailed
)

// MaxWriteChunk is the largest single Queue.WriteBuffer call issued; larger
// writes are split because one 64 MiB write is twice as slow on lavapipe as
// four 16 MiB writes.
const MaxWriteChunk = 16 << 20

// writeFlushBytes and writeFlushDepth bound the queue writes in flight. A
// queue write copies the data into a fresh staging allocation, which the
// queue copies into the buffer at the next submit and frees once that
// submit is done. Left to pile up until the next submit, a load's
// constants all sit in staging memory at once, every page of it touched
// for the first time (a page fault each); flushed every writeFlushBytes
// (an empty submit) with at most writeFlushDepth flushes unfinished, the
// staging memory of finished flushes is reused. Measured on lavapipe in a
// fresh process, 64 MiB of weights written from a file mapping as eight
// 8 MiB buffers: 67–80 ms unflushed, 46–50 ms flushed after each buffer
// and waited for.
const (
	writeFlushBytes = 8 << 20
	writeFlushDepth = 2
)

// writeFlush is the state of Device's write flushing (under Device.mu).
type writeFlush struct {
	pending uint64                          // bytes written since the last submit
	cells   [writeFlushDepth]unsafe.Pointer // done cells of the flushes
	busy    [writeFlushDepth]bool           // flush i not yet waited for
	next    int
	empty   program // no dispatches, no copies
	count   int64   // flushes so far (for tests)
}

// noteWriteLocked counts n bytes written and flushes the queue writes when
// writeFlushBytes have accumulated since the last submit.
func (d *Device) noteWriteLocked(n int) error {
	f := &d.flush
	f.pending += uint64(n)
	if f.pending < writeFlushBytes {
		return nil
	}
	k := f.next
	if f.cells[k] == nil {
		f.cells[k] = newCell()
	}
	if f.busy[k] {
		cell := f.cells[k]
		if err := d.waitLocked(context.Background(), func() bool { return cellValue(cell) != 0 }); err != nil {
			return err
		}
		f.busy[k] = false
	}
	if err := d.submit(&f.empty); err != nil {
		return err
	}
	d.rawOnDone(f.cells[k])
	f.count++
	f.busy[k] = true
	f.next = (k + 1) % writeFlushDepth
	return nil
}

// Buffer is a device buffer with its size and, for staging buffers, its map
// state, which is tracked so that no submission can ever see a mapped buffer.
type Buffer struct {
	d        *Device
	b        *wgpu.Buffer
	size     uint64
	kind     BufferKind
	mappable bool // a Storage buffer that can be mapped for writing (direct uploads)
	state    mapState
	released bool
	cell     unsafe.Pointer // staging or mappable: C status cell of the pending map
	host     unsafe.Pointer // BeginUpload on a prefaulting device: the memory, until FinishUpload
	prep     chan struct{}  // PrepareUpload's prefault, closed when done
}

// AlignedSize rounds n up to a multiple of 16 with a minimum of 16. WebGPU
// needs multiples of 4 for sizes and copies and rejects empty bindings; 16
// lets every kernel read and write whole vec4<u32> words, which llvmpipe
// moves several times faster than scalars, without a bounds case at the end.
func AlignedSize(n uint64) uint64 {
	if n < 16 {
		return 16
	}
	return (n + 15) &^ 15
}

// NewBuffer creates a buffer of at least size bytes (rounded by AlignedSize).
func (d *Device) NewBuffer(kind BufferKind, size uint64, label string) (*Buffer, error) {
	size = AlignedSize(size)
	if kind == UniformBuf {
		size = (size + 15) &^ 15
	}
	if size > d.limits.MaxBufferSize {
		return nil, &Error{Op: "create buffer " + label, Err: fmt.Errorf("%d bytes exceeds the device's maxBufferSize %d", size, d.limits.MaxBufferSize)}
	}
	var usage wgpu.BufferUsage
	switch kind {
	case Storage:
		usage = wgpu.BufferUsageStorage | wgpu.BufferUsageCopyDst | wgpu.BufferUsageCopySrc
	case UniformBuf:
		usage = wgpu.BufferUsageUniform | wgpu.BufferUsageCopyDst
	case Staging:
		usage = wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	if err := d.checkLostLocked("create buffer " + label); err != nil {
		return nil, err
	}
	b, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: label, Usage: usage, Size: size})
	if err != nil {
		return nil, &Error{Op: "create buffer " + label, Err: err}
	}
	d.live.buffers.Add(1)
	d.live.bufferBytes.Add(int64(size))
	buf := &Buffer{d: d, b: b, size: size, kind: kind}
	if kind == Staging {
		buf.cell = newCell()
	}
	return buf, nil
}

// DirectUploads reports whether NewBufferData writes into the buffer's own
// memory (see NewBufferData).
func (d *Device) DirectUploads() bool { return d.direct }

// NewBufferData creates a Storage buffer of at least size bytes (rounded by
// AlignedSize; at least len(data)) that starts with data, zeros after. On a
// device with direct uploads (a CPU or integrated adapter with the
// mappable-primary-buffers feature, such as lavapipe) the buffer is created
// mapped and data is copied into its own memory: one copy, no staging
// allocation and no queue work. Elsewhere it is NewBuffer followed by
// Write. Either way the bytes are in place for every later submission.
func (d *Device) NewBufferData(size uint64, data []byte, label string) (*Buffer, error) {
	size = AlignedSize(max(size, uint64(len(data))))
	if !d.direct {
		b, err := d.NewBuffer(Storage, size, label)
		if err != nil {
			return nil, err
		}
		if err := d.Write(b, 0, data); err != nil {
			b.Release()
			return nil, err
		}
		return b, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.newMappableLocked(size, label, true)
	if err != nil {
		return nil, err
	}
	// The mapping starts zeroed (WebGPU guarantees it), so the padding is.
	m := rawMappedRange(b.b, size)
	if m == nil {
		d.releaseLocked(b)
		return nil, &Error{Op: "create buffer " + label, Err: errors.New("buffer mapped at creation has no mapping")}
	}
	copy(m, data)
	d.rawUnmap(b)
	return b, nil
}

// newMappableLocked creates a Storage buffer that may also be mapped for
// writing (direct uploads only), mapped at creation or not.
func (d *Device) newMappableLocked(size uint64, label string, mapped bool) (*Buffer, error) {
	if size > d.limits.MaxBufferSize {
		return nil, &Error{Op: "create buffer " + label, Err: fmt.Errorf("%d bytes exceeds the device's maxBufferSize %d", size, d.limits.MaxBufferSize)}
	}
	if d.closed {
		return nil, ErrClosed
	}
	if err := d.checkLostLocked("create buffer " + label); err != nil {
		return nil, err
	}
	usage := wgpu.BufferUsageStorage | wgpu.BufferUsageCopyDst | wgpu.BufferUsageCopySrc | wgpu.BufferUsageMapWrite
	b, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: label, Usage: usage, Size: size, MappedAtCreation: mapped})
	if err != nil {
		return nil, &Error{Op: "create buffer " + label, Err: err}
	}
	d.live.buffers.Add(1)
	d.live.bufferBytes.Add(int64(size))
	return &Buffer{d: d, b: b, size: size, kind: Storage, mappable: true}, nil
}

// BeginUpload creates a Storage buffer of at least size bytes (rounded by
// AlignedSize) whose contents FinishUpload will write; until then they are
// undefined. It is NewBufferData split in two, so that a load can create
// its buffers, record its dispatches (which starts compiling their
// pipelines in the background) and only then copy the weights in.
//
// On a device with direct uploads the buffer is host memory that
// FinishUpload maps and copies into; the cost there is first-touching that
// fresh memory (page faults), which PrepareUpload can move to another
// thread. On a CPU adapter (lavapipe) BeginUpload also finds the memory of
// a buffer of 1 MiB or more, by mapping its first 8 bytes, so that it can
// be prefaulted, and with Options.HugePages advises huge pages for it.
// Elsewhere BeginUpload is NewBuffer and FinishUpload is Write.
func (d *Device) BeginUpload(size uint64, label string) (*Buffer, error) {
	size = AlignedSize(size)
	if !d.direct {
		return d.NewBuffer(Storage, size, label)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.newMappableLocked(size, label, false)
	if err != nil || !d.prefault || size < prefaultMin {
		return b, err
	}
	p, err := d.hostAddrLocked(b)
	if err != nil {
		d.releaseLocked(b)
		return nil, err
	}
	b.host = p
	if d.hugePages && p != nil {
		adviseHugePages(p, b.size)
	}
	return b, nil
}

// prefaultMin is the smallest upload buffer that BeginUpload finds the
// memory of, for PrepareUpload and FinishUpload to prefault.
const prefaultMin = 1 << 20

// populate prefaults size bytes at p (see PrepareUpload). A kernel that
// cannot (before Linux 5.14: EINVAL; a sandbox may say otherwise) makes
// later uploads fall back to clears.
func (d *Device) populate(p unsafe.Pointer, size uint64) {
	if err := populateWrite(p, size); err != nil && !d.noPopulate.Swap(true) {
		d.log.Debug("gpu: cannot prefault upload buffers; clearing them instead", "err", err)
	}
}

// hostAddrLocked is the address of an unmapped mappable buffer's memory,
// found by mapping its first 8 bytes and unmapping them again. It is nil
// when the map fails (with an error if the device is lost).
func (d *Device) hostAddrLocked(b *Buffer) (unsafe.Pointer, error) {
	if b.cell == nil {
		b.cell = newCell()
	}
	b.state = mapPending
	d.rawMapWriteHead(b)
	if err := d.waitMapLocked(context.Background(), b); err != nil {
		return nil, err
	}
	if b.state != mapped {
		b.state = unmapped
		return nil, d.checkLostLocked("upload")
	}
	p := rawMappedHead(b.b)
	d.rawUnmap(b)
	b.state = unmapped
	return p, nil
}

// PrepareUpload starts first-touching the memory of a buffer from
// BeginUpload, not yet finished, and returns without waiting, so that
// FinishUpload only copies. On a CPU adapter under Linux a goroutine
// prefaults the buffer's pages (MADV_POPULATE_WRITE, which costs about 60%
// of touching them one by one: 64 MiB in 20-23 ms instead of 34-37 ms
// here); on another device with direct uploads (or an older kernel) it
// submits a clear, which the driver runs on its own thread. It does
// nothing on a device without direct uploads.
func (d *Device) PrepareUpload(b *Buffer) error {
	if !b.mappable {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if b.released || b.state != unmapped {
		return &Error{Op: "prepare upload", Err: errors.New("buffer is released or mapped")}
	}
	if err := d.checkLostLocked("prepare upload"); err != nil {
		return err
	}
	if b.host != nil && !d.noPopulate.Load() {
		if b.prep == nil {
			ch := make(chan struct{})
			b.prep = ch
			d.prefaults.Add(1)
			go func(p unsafe.Pointer, size uint64) {
				defer d.prefaults.Done()
				defer close(ch)
				d.populate(p, size)
			}(b.host, b.size)
		}
		return nil
	}
	return d.clear(b)
}

// FinishUpload writes data (at most the buffer's size) at the start of a
// buffer from BeginUpload. On a device with direct uploads it maps the
// buffer (after PrepareUpload's prefault or clear, if any, and any other
// submitted work that uses the buffer; a buffer that PrepareUpload did not
// prepare is prefaulted here first, where it can be) and copies data in;
// elsewhere it is Write.
// The rest of the buffer keeps its contents (zeros after BeginUpload).
func (d *Device) FinishUpload(b *Buffer, data []byte) error {
	if !b.mappable {
		return d.Write(b, 0, data)
	}
	if uint64(len(data)) > b.size {
		return &Error{Op: "upload", Err: fmt.Errorf("%d bytes overflow a %d-byte buffer", len(data), b.size)}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if b.released {
		return &Error{Op: "upload", Err: errors.New("buffer was released")}
	}
	if err := d.checkLostLocked("upload"); err != nil {
		return err
	}
	if b.prep != nil {
		<-b.prep
		b.prep = nil
	} else if b.host != nil && !d.noPopulate.Load() {
		d.populate(b.host, b.size)
	}
	b.host = nil // populated now, whatever happens next
	if b.cell == nil {
		b.cell = newCell()
	}
	b.state = mapPending
	d.rawMapWrite(b)
	// No deadline: a buffer must never be left map-pending (a submit that
	// uses it would abort the process), and the wait is for a clear at
	// most. Mapping zero-fills the memory not yet written (WebGPU's
	// guarantee), so the padding is zero.
	if err := d.waitMapLocked(context.Background(), b); err != nil {
		return err
	}
	if b.state != mapped {
		b.state = unmapped
		if err := d.checkLostLocked("upload"); err != nil {
			return err
		}
		return &Error{Op: "upload", Err: ErrMapFailed}
	}
	m := rawMappedRange(b.b, b.size)
	if m == nil {
		d.rawUnmap(b)
		b.state = unmapped
		return &Error{Op: "upload", Err: errors.New("mapped buffer has no mapping")}
	}
	copy(m, data)
	d.rawUnmap(b)
	b.state = unmapped
	return nil
}

// Size is the allocated size in bytes.
func (b *Buffer) Size() uint64 { return b.size }

// Release frees the buffer. It is safe to call twice. A staging buffer with
// a pending map is settled first.
func (b *Buffer) Release() {
	if b == nil || b.released {
		return
	}
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.releaseLocked(b)
}

// releaseLocked is Release with d.mu held.
func (d *Device) releaseLocked(b *Buffer) {
	if b.released {
		return
	}
	if b.prep != nil {
		<-b.prep // not while a prefault touches the memory
		b.prep = nil
	}
	if !d.closed {
		d.settleLocked(b)
		if b.state == mapped {
			d.rawUnmap(b)
			b.state = unmapped
		}
	}
	b.released = true
	b.b.Release()
	// A map still pending (only possible on a closed device) may yet
	// write its cell: leak those 4 bytes rather than free them.
	if b.cell != nil && b.state != mapPending {
		freeCell(b.cell)
		b.cell = nil
	}
	d.live.buffers.Add(-1)
	d.live.bufferBytes.Add(-int64(b.size))
}

// Write copies data into b at offset with queue writes of at most
// MaxWriteChunk bytes. data may point into a memory-mapped file: the bytes go
// straight to the queue without a Go heap copy, except for a final partial
// word, which is padded to 4 bytes.
func (d *Device) Write(b *Buffer, offset uint64, data []byte) error {
	if offset%4 != 0 {
		return &Error{Op: "write buffer", Err: fmt.Errorf("offset %d is not a multiple of 4", offset)}
	}
	if offset+AlignedSize(uint64(len(data))) > b.size && len(data) > 0 {
		return &Error{Op: "write buffer", Err: fmt.Errorf("%d bytes at offset %d overflow a %d-byte buffer", len(data), offset, b.size)}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if b.released {
		return &Error{Op: "write buffer", Err: errors.New("buffer was released")}
	}
	if err := d.checkLostLocked("write buffer"); err != nil {
		return err
	}
	if b.kind == Staging {
		return &Error{Op: "write buffer", Err: errors.New("cannot write a staging buffer")}
	}
	whole := len(data) &^ 3
	for done := 0; done < whole; {
		n := min(whole-done, MaxWriteChunk)
		if err := d.write(b, offset+uint64(done), data[done:done+n]); err != nil {
			return err
		}
		done += n
	}
	if tail := len(data) - whole; tail > 0 {
		pad := d.pad[:]
		clear(pad)
		copy(pad, data[whole:])
		if err := d.write(b, offset+uint64(whole), pad); err != nil {
			return err
		}
	}
	return nil
}

// BindEntry is one buffer binding: a window [Offset, Offset+Size) of Buf.
// Size 0 means the whole buffer from Offset.
type BindEntry struct {
	Buf    *Buffer
	Offset uint64
	Size   uint64
}

// BindGroup is a bind group for one pipeline's layout.
type BindGroup struct {
	d *Device
	g *wgpu.BindGroup
}

// Release frees the bind group. It is safe to call twice.
func (g *BindGroup) Release() {
	if g != nil && g.g != nil {
		g.g.Release()
		g.g = nil
		g.d.live.bindGroups.Add(-1)
	}
}

// NewBindGroup binds entries (in binding order) to p's layout.
func (d *Device) NewBindGroup(p *Pipeline, entries []BindEntry, label string) (*BindGroup, error) {
	if len(entries) != len(p.Layout) {
		return nil, &Error{Op: "create bind group " + label, Err: fmt.Errorf("%d entries for a %d-binding layout", len(entries), len(p.Layout))}
	}
	es := make([]wgpu.BindGroupEntry, len(entries))
	for i, e := range entries {
		size := e.Size
		if size == 0 {
			size = e.Buf.size - e.Offset
		}
		if p.Layout[i] != shaders.Uniform && size > d.limits.MaxStorageBufferBindingSize {
			return nil, &Error{Op: "create bind group " + label, Err: fmt.Errorf("binding %d is %d bytes, over the device's %d-byte storage binding limit", i, size, d.limits.MaxStorageBufferBindingSize)}
		}
		es[i] = wgpu.BindGroupEntry{Binding: uint32(i), Buffer: e.Buf.b, Offset: e.Offset, Size: size}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	if err := d.checkLostLocked("create bind group " + label); err != nil {
		return nil, err
	}
	g, err := d.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Label: label, Layout: p.bgl, Entries: es})
	if err != nil {
		return nil, &Error{Op: "create bind group " + label, Err: err}
	}
	d.live.bindGroups.Add(1)
	return &BindGroup{d: d, g: g}, nil
}
