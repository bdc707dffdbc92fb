package ops

import "fmt"

// DeviceClass is the kind of adapter a load records for, as the adapter
// reports it (WebGPU's adapter type).
type DeviceClass uint8

// Device classes. The zero value, ClassNone, is a builder that describes
// no device (a test's fake builder): it gets the lavapipe-shaped kernels,
// as before there were device profiles.
const (
	ClassNone       DeviceClass = iota // no device described
	ClassCPU                           // a CPU adapter: lavapipe (llvmpipe), SwiftShader, WARP
	ClassIntegrated                    // an integrated GPU
	ClassDiscrete                      // a discrete GPU
	ClassOther                         // an adapter of unknown type
)

// String returns the class's short name.
func (c DeviceClass) String() string {
	switch c {
	case ClassNone:
		return "none"
	case ClassCPU:
		return "cpu"
	case ClassIntegrated:
		return "integrated-gpu"
	case ClassDiscrete:
		return "discrete-gpu"
	case ClassOther:
		return "other"
	}
	return fmt.Sprintf("DeviceClass(%d)", uint8(c))
}

// DeviceProfile is what the kernels may know of the device a load records
// for: the adapter's class, vendor and name, and the limits and features
// a kernel's shape depends on. The graph builds it from the GPU seam's
// adapter info once per device and hands it to every op of a load
// (Builder.DeviceProfile); the load's Config may override the choice it implies
// (Config.Family). It is plain data, so that kernel choice is a table
// lookup keyed by it (see Family and the linear family's table in
// linear_family.go), not a chain of conditions on adapter names.
type DeviceProfile struct {
	Class DeviceClass
	// VendorID and Name are the adapter's (for tuning notes and logs; no
	// kernel is chosen by vendor yet).
	VendorID uint32
	Name     string
	// MaxWorkgroupStorage is maxComputeWorkgroupStorageSize in bytes and
	// MaxInvocations maxComputeInvocationsPerWorkgroup; 0 when unknown
	// (a kernel then assumes WebGPU's defaults, 16 KiB and 256).
	MaxWorkgroupStorage uint32
	MaxInvocations      uint32
	// MaxStorageBinding is maxStorageBufferBindingSize; 0 when unknown.
	MaxStorageBinding uint64
	// MaxStorageBuffers is maxStorageBuffersPerShaderStage (the device
	// requests the adapter's); 0 when unknown (WebGPU's default 8).
	MaxStorageBuffers uint32
	// Timestamps reports timestamp queries (GPU kernel timing).
	Timestamps bool
}

// Family is a set of kernels shaped for one kind of device, the choice
// behind `--kernels auto|cpu|gpu`.
type Family uint8

// Kernel families.
const (
	// FamilyAuto picks by the device profile's class: FamilyCPU for a
	// CPU adapter (and for a builder that describes no device),
	// FamilyGPU for every other adapter.
	FamilyAuto Family = iota
	// FamilyCPU is the kernels shaped for lavapipe (llvmpipe): few lanes,
	// many output columns per invocation, no workgroup memory, K cut
	// into chunks under llvmpipe's loop cap.
	FamilyCPU
	// FamilyGPU is the kernels shaped for GPUs: many lanes along K with
	// coalesced vec4/u32 loads, workgroup-memory reductions and tiles.
	FamilyGPU
)

// String returns the family's name as the CLI spells it.
func (f Family) String() string {
	switch f {
	case FamilyAuto:
		return "auto"
	case FamilyCPU:
		return "cpu"
	case FamilyGPU:
		return "gpu"
	}
	return fmt.Sprintf("Family(%d)", uint8(f))
}

// ParseFamily parses "auto", "cpu" or "gpu" ("" is auto).
func ParseFamily(s string) (Family, error) {
	switch s {
	case "", "auto":
		return FamilyAuto, nil
	case "cpu":
		return FamilyCPU, nil
	case "gpu":
		return FamilyGPU, nil
	}
	return FamilyAuto, fmt.Errorf("ops: kernel family %q: want auto, cpu or gpu", s)
}

// Family returns the kernel family the profile implies (FamilyAuto's
// choice): FamilyCPU for a CPU adapter or no device, FamilyGPU otherwise.
func (p DeviceProfile) Family() Family {
	if p.Class == ClassNone || p.Class == ClassCPU {
		return FamilyCPU
	}
	return FamilyGPU
}

// Resolve returns the family a load with choices cfg records with on a
// device of profile p: cfg.Family unless it is FamilyAuto, else p's.
func Resolve(cfg Config, p DeviceProfile) Family {
	if cfg.Family != FamilyAuto {
		return cfg.Family
	}
	return p.Family()
}

// familyOf returns the kernel family b's load records with.
func familyOf(b Builder) Family {
	return Resolve(b.Config(), b.DeviceProfile())
}
