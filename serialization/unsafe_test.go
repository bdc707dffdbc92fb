package serialization

import "unsafe"

// uintptrOf gives a byte's address, to check results are views of the input.
func uintptrOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }
