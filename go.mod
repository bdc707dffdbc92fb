module github.com/wgdelegate/wgdelegate

go 1.26.8

require (
	github.com/ardanlabs/jinja v1.8.0
	github.com/cogentcore/webgpu v0.23.0
	github.com/eliben/go-sentencepiece v0.6.0
	github.com/google/flatbuffers v2.0.8+incompatible
	golang.org/x/text v0.23.0
	google.golang.org/protobuf v1.34.2
)

require gonum.org/v1/gonum v0.17.0 // indirect
