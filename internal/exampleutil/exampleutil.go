// Package exampleutil holds the plumbing the commands under examples/
// share, so that each example's main.go shows only its own steps: where
// the files go, writing them, opening the device, and reporting a
// failure.
package exampleutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wgdelegate/wgdelegate"
)

// Exit reports err, prefixed with the example's name, on standard error
// and exits with status 1; it returns when err is nil.
func Exit(name string, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// OutDir returns the directory an example writes its files to: dir,
// created if missing, or, when dir is empty, a new temporary directory
// named after the example. cleanup removes a temporary directory and
// does nothing otherwise; call it when done.
func OutDir(dir, name string) (_ string, cleanup func(), err error) {
	if dir == "" {
		if dir, err = os.MkdirTemp("", "wgdelegate-"+name+"-"); err != nil {
			return "", nil, err
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	return dir, func() {}, nil
}

// File is one file an example writes: its name inside the output
// directory and its bytes.
type File struct {
	Name string
	Data []byte
}

// WriteFiles writes files into dir, prints one line naming each with its
// size, and returns their paths in order.
func WriteFiles(dir string, files ...File) ([]string, error) {
	paths := make([]string, len(files))
	written := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join(dir, f.Name)
		if err := os.WriteFile(paths[i], f.Data, 0o644); err != nil {
			return nil, err
		}
		written[i] = fmt.Sprintf("%s (%d bytes)", paths[i], len(f.Data))
	}
	fmt.Println("wrote", strings.Join(written, " and "))
	return paths, nil
}

// OpenDevice opens the default WebGPU device and prints its adapter's
// name. The caller closes the device.
func OpenDevice(ctx context.Context) (*wgdelegate.Device, error) {
	dev, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{})
	if err != nil {
		return nil, fmt.Errorf("opening the device: %w", err)
	}
	fmt.Println("adapter:", dev.AdapterName())
	return dev, nil
}
