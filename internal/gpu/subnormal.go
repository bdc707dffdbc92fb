package gpu

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// Subnormals is what an adapter's float32 arithmetic does with subnormal
// values (magnitudes below 2^-126), which WGSL lets it flush to zero.
// Open finds it with a tiny dispatch (probeSubnormals). The kernels'
// comparisons, selections, copies, abs and neg work on the bits, so they
// are exact either way; where an adapter flushes, arithmetic may treat a
// subnormal operand as ±0 and give ±0 for a result whose exact value is
// subnormal, and nothing else differs (README, "Numerics").
type Subnormals struct {
	// FlushInputs: a subnormal operand of a multiply or add acts as ±0.
	FlushInputs bool
	// FlushResults: a multiply whose exact result is subnormal gives ±0.
	FlushResults bool
}

// Flushes reports whether the adapter flushes subnormal operands or
// results.
func (s Subnormals) Flushes() bool { return s.FlushInputs || s.FlushResults }

// String describes s: "kept", or which of inputs and results are flushed.
func (s Subnormals) String() string {
	switch {
	case s.FlushInputs && s.FlushResults:
		return "flushed (operands and results)"
	case s.FlushInputs:
		return "flushed (operands)"
	case s.FlushResults:
		return "flushed (results)"
	}
	return "kept"
}

// subnormalProbeWGSL computes, from values it reads so that the compiler
// cannot fold them: out[0] = 2^-127·1 and out[1] = 2^-126·0.5 (subnormal
// results), out[2] = 2^-127·2^97 and out[3] = 2^-127 + 2^-127 (normal
// results of subnormal operands).
const subnormalProbeWGSL = `
@group(0) @binding(0) var<storage, read> v: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(1)
fn main() {
  out[0] = v[0] * v[1];
  out[1] = v[2] * v[3];
  out[2] = v[0] * v[4];
  out[3] = v[0] + v[0];
}`

// subnormalProbeInputs are the probe's v: 2^-127, 1, 2^-126, 0.5, 2^97.
var subnormalProbeInputs = []uint32{0x00400000, 0x3f800000, 0x00800000, 0x3f000000, 0x70000000}

// probeSubnormals runs subnormalProbeWGSL and reads what came out. Its
// pipeline and buffers are released again, so the caches and live-object
// counts start empty as before.
func (d *Device) probeSubnormals(ctx context.Context) (Subnormals, error) {
	layout := shaders.Layout(1, 1, false)
	p, err := d.createPipeline(PipelineKey(subnormalProbeWGSL, "main", layout),
		PipelineSpec{Label: "subnormal probe", Source: subnormalProbeWGSL, Entry: "main", Layout: layout})
	if err != nil {
		return Subnormals{}, err
	}
	defer p.release()
	in := make([]byte, 4*len(subnormalProbeInputs))
	for i, b := range subnormalProbeInputs {
		binary.LittleEndian.PutUint32(in[4*i:], b)
	}
	vb, err := d.NewBufferData(uint64(len(in)), in, "subnormal probe in")
	if err != nil {
		return Subnormals{}, err
	}
	defer vb.Release()
	ob, err := d.NewBuffer(Storage, 16, "subnormal probe out")
	if err != nil {
		return Subnormals{}, err
	}
	defer ob.Release()
	st, err := d.NewBuffer(Staging, 16, "subnormal probe staging")
	if err != nil {
		return Subnormals{}, err
	}
	defer st.Release()
	bg, err := d.NewBindGroup(p, []BindEntry{{Buf: vb, Size: uint64(len(in))}, {Buf: ob, Size: 16}}, "subnormal probe")
	if err != nil {
		return Subnormals{}, err
	}
	defer bg.Release()
	if err := d.Run(ctx, []Dispatch{{Pipeline: p, Group: bg, X: 1, Y: 1, Z: 1}}, []Readback{{Src: ob, Dst: st, Size: 16}}); err != nil {
		return Subnormals{}, err
	}
	m, err := st.Mapped()
	if err != nil {
		return Subnormals{}, err
	}
	var got [4]uint32
	for i := range got {
		got[i] = binary.LittleEndian.Uint32(m[4*i:])
	}
	if err := st.Unmap(); err != nil {
		return Subnormals{}, err
	}
	return subnormalsFrom(got)
}

// subnormalsFrom reads the probe's four results. Each is the exact one or
// ±0 (flushed); anything else means the probe itself is wrong. out[1] (a
// subnormal product of normal operands) tells whether results flush,
// out[2] and out[3] (normal results of a subnormal operand) whether
// operands do; out[0] flushes under either.
func subnormalsFrom(got [4]uint32) (Subnormals, error) {
	want := [4]uint32{0x00400000, 0x00400000, 0x30800000, 0x00800000}
	var zero [4]bool
	for i, g := range got {
		zero[i] = g&0x7fffffff == 0
		if g != want[i] && !zero[i] {
			return Subnormals{}, fmt.Errorf("gpu: subnormal probe: result %d is %#08x, want %#08x or ±0", i, g, want[i])
		}
	}
	s := Subnormals{FlushResults: zero[1], FlushInputs: zero[2] || zero[3]}
	if zero[0] != s.Flushes() {
		return Subnormals{}, fmt.Errorf("gpu: subnormal probe: results %#08x are inconsistent", got)
	}
	return s, nil
}
