// Package wgdelegate runs ExecuTorch Vulkan-delegate graphs on the GPU
// through WebGPU.
//
// A model is a .pte program holding a "VulkanBackend" delegate (or the raw
// VH00 delegate blob itself), with its weights in the program's named data
// or in .ptd files. Load builds it on a Device: constants are written from
// the memory-mapped files straight into their GPU buffers, memory is planned
// from the exporter's mem_obj_ids, and every op becomes a recorded WGSL
// compute dispatch. Execute uploads inputs, replays the dispatches in one
// compute pass and one submit, and reads the outputs back.
//
//	dev, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{})
//	defer dev.Close()
//	m, err := dev.LoadFile(ctx, "model.pte", "weights.ptd")
//	defer m.Close()
//	outs, err := m.Execute(ctx, []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{1, 4}, x)})
//
// This package is a thin facade: the format lives in serialization, the
// build and execute phases in graph, the kernels in ops and shaders.
package wgdelegate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Tensor is a host tensor: dtype, shape and little-endian element bytes.
type Tensor = graph.Tensor

// MemoryStats reports what a loaded model allocated.
type MemoryStats = graph.MemoryStats

// DataType is a tensor element type.
type DataType = serialization.DataType

// Float32Tensor, Int32Tensor and Int64Tensor build host tensors.
var (
	Float32Tensor = graph.Float32Tensor
	Int32Tensor   = graph.Int32Tensor
	Int64Tensor   = graph.Int64Tensor
)

// ErrUnknownFormat is returned when a model file is neither a .pte program
// nor a VH00 delegate blob.
var ErrUnknownFormat = errors.New("wgdelegate: not a .pte program or a VH00 delegate blob")

// DeviceOptions configure OpenDevice.
type DeviceOptions struct {
	Logger *slog.Logger
	// WGPULogLevel enables wgpu-native's own stderr log (1 error .. 5 trace).
	WGPULogLevel int
}

// Device is a WebGPU device. Pipelines compiled for one model are shared by
// every model loaded on the same Device.
type Device struct {
	d   *gpu.Device
	log *slog.Logger
}

// OpenDevice opens the default adapter (Vulkan first).
func OpenDevice(ctx context.Context, opts DeviceOptions) (*Device, error) {
	d, err := gpu.Open(ctx, gpu.Options{Logger: opts.Logger, WGPULogLevel: opts.WGPULogLevel})
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Device{d: d, log: log}, nil
}

// AdapterName describes the adapter, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
func (d *Device) AdapterName() string {
	info := d.d.Info()
	if info.Name == "" || strings.HasPrefix(info.Name, "0x") {
		// lavapipe reports its name as "0x0"; the driver string says more.
		return info.Driver + " (" + info.Backend + ")"
	}
	if info.Driver != "" {
		return info.Name + " (" + info.Driver + ", " + info.Backend + ")"
	}
	return info.Name + " (" + info.Backend + ")"
}

// Close releases the device. Close every Model first.
func (d *Device) Close() error { return d.d.Close() }

// Model is a loaded graph.
type Model struct {
	*graph.WebGPUGraph
}

// LoadFile loads a .pte program (its VulkanBackend delegate) or a raw VH00
// blob, with named constants resolved from the program's named data and the
// given .ptd files. Files are memory-mapped and unmapped again once the
// constants are on the GPU.
func (d *Device) LoadFile(ctx context.Context, path string, dataFiles ...string) (*Model, error) {
	mf, err := serialization.MapFile(path)
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	var datas [][]byte
	for _, p := range dataFiles {
		df, err := serialization.MapFile(p)
		if err != nil {
			return nil, err
		}
		defer df.Close()
		datas = append(datas, df.Bytes())
	}
	m, err := d.Load(ctx, mf.Bytes(), datas...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Load loads a model from bytes: a .pte program or a raw VH00 blob, plus the
// bytes of any .ptd files. The bytes are only read during Load.
func (d *Device) Load(ctx context.Context, model []byte, ptds ...[]byte) (*Model, error) {
	named := serialization.NewNamedDataMap()
	var blob []byte
	var io []serialization.EValueInfo
	switch Detect(model) {
	case FormatBlob:
		blob = model
	case FormatProgram:
		p, err := serialization.ParseProgram(model)
		if err != nil {
			return nil, err
		}
		blob, err = p.DelegateBlob(serialization.VulkanBackendID)
		if err != nil {
			return nil, err
		}
		if err := named.Merge(p.NamedData); err != nil {
			return nil, err
		}
		// The program's delegate call says what the caller's tensors are:
		// outputs the exporter downcast to 32 bits are widened back.
		io, _ = p.DelegateIO(serialization.VulkanBackendID)
	default:
		return nil, ErrUnknownFormat
	}
	for i, pd := range ptds {
		m, err := serialization.ParseFlatTensor(pd)
		if err != nil {
			return nil, fmt.Errorf("data file %d: %w", i, err)
		}
		if err := named.Merge(m); err != nil {
			return nil, fmt.Errorf("data file %d: %w", i, err)
		}
	}
	b, err := serialization.DecodeBlob(blob)
	if err != nil {
		return nil, err
	}
	g, err := graph.Build(ctx, d.d, b, graph.Options{NamedData: named, Logger: d.log, OutputHostTypes: outputHostTypes(b.Graph, io)})
	if err != nil {
		return nil, err
	}
	return &Model{WebGPUGraph: g}, nil
}

// outputHostTypes maps the delegate call's output EValues (after the
// graph's inputs) to dtypes; nil when they do not line up with the graph.
func outputHostTypes(g *serialization.Graph, io []serialization.EValueInfo) []serialization.DataType {
	nIn, nOut := len(g.InputIDs), len(g.OutputIDs)
	if io == nil || len(io) != nIn+nOut {
		return nil
	}
	out := make([]serialization.DataType, nOut)
	for i := range out {
		a := io[nIn+i]
		dt, ok := serialization.ScalarTypeDataType(a.ScalarType)
		if a.Kind != "Tensor" || !ok {
			dt = serialization.Unset
		}
		out[i] = dt
	}
	return out
}

// Format is what Detect finds in a model file.
type Format int

// Formats.
const (
	FormatUnknown Format = iota
	FormatBlob           // a VH00 delegate blob
	FormatProgram        // an ExecuTorch .pte program
)

// Detect looks at the identifier bytes 4..8 of a model file.
func Detect(b []byte) Format {
	if len(b) < 8 {
		return FormatUnknown
	}
	id := string(b[4:8])
	switch {
	case id == "VH00":
		return FormatBlob
	case id[0] == 'E' && id[1] == 'T':
		return FormatProgram
	}
	return FormatUnknown
}
