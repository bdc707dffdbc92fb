// Package memplan turns the exporter's mem_obj_id assignments into buffer
// allocations, in pure Go so it can be table-tested without a device.
//
// The rules follow the reference runtimes: every tensor with the same
// non-negative mem_obj_id shares one allocation sized to its largest user
// and bound at offset 0; a negative id, and every constant, gets a dedicated
// allocation; a constant whose only consumers are prepack ops is deferred
// and gets no allocation at all (its bytes go straight into each prepack
// output).
package memplan
