package graph

import (
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
)

// DeviceProfile is the ops.DeviceProfile of dev: its adapter's class
// (the WebGPU adapter type), vendor and name, and the limits and features
// kernels are shaped by. Build hands it to every op of a load.
func DeviceProfile(dev *gpu.Device) ops.DeviceProfile {
	info, lim := dev.Info(), dev.Limits()
	p := ops.DeviceProfile{Class: deviceClass(info.AdapterType), VendorID: info.VendorID, Name: info.Name,
		MaxWorkgroupStorage: lim.MaxComputeWorkgroupStorageSize, MaxInvocations: lim.MaxComputeInvocationsPerWorkgroup,
		MaxStorageBinding: lim.MaxStorageBufferBindingSize, MaxStorageBuffers: lim.MaxStorageBuffersPerShaderStage,
		Timestamps: dev.HasTimestamps()}
	if p.Name == "" || p.Name == "0x0" {
		p.Name = info.Driver
	}
	return p
}

// deviceClass maps gpu.AdapterInfo.AdapterType (the binding's names) to a
// device class.
func deviceClass(adapterType string) ops.DeviceClass {
	switch adapterType {
	case "cpu":
		return ops.ClassCPU
	case "integrated-gpu":
		return ops.ClassIntegrated
	case "discrete-gpu":
		return ops.ClassDiscrete
	}
	return ops.ClassOther
}
