package serialization

// The Go flatbuffer code under internal/fb is generated from the schemas in
// schema/ by flatc 2.0.8, the version matching the github.com/google/flatbuffers
// runtime in go.mod. --go-namespace gives each schema its own Go package so
// same-named tables (DataSegment, NamedData, Null, ...) do not collide.
// TestGeneratedCodeFresh fails when the checked-in code differs from what
// these lines produce; to regenerate from scratch:
//
//	rm -rf internal/fb && go generate ./serialization/

//go:generate flatc --go --go-namespace vkgraph -o internal/fb schema/vkgraph.fbs
//go:generate flatc --go --go-namespace executorch -o internal/fb schema/program.fbs
//go:generate flatc --go --go-namespace flattensor -o internal/fb schema/flat_tensor.fbs
