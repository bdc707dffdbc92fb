package wgdelegate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

// TestCPUThreadsInline runs the CNN on a device opened with inline
// dispatches, beside the shared default device, against the reference.
func TestCPUThreadsInline(t *testing.T) {
	dev, err := wgdelegate.OpenDevice(context.Background(), wgdelegate.DeviceOptions{CPUThreads: wgdelegate.CPUThreadsInline})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if got := dev.CPUThreads(); got != wgdelegate.CPUThreadsInline && got != 0 {
		t.Errorf("CPUThreads() = %d, want %d (or 0 on an adapter other than llvmpipe)", got, wgdelegate.CPUThreadsInline)
	}
	m := models.NewCNN(models.DefaultCNN)
	model, err := load(t, m.B, wgdelegate.WithDevice(dev))
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	x := m.BatchInput(1, 7)
	got, err := model.Execute(context.Background(), wgdelegate.FromFloat32(m.BatchShape(1), x))
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Reference(x)
	if err != nil {
		t.Fatal(err)
	}
	compareOutputs(t, "inline", got, want)
}

func TestCPUThreadsOutOfRange(t *testing.T) {
	for _, n := range []int{-2, wgdelegate.MaxCPUThreads + 1} {
		dev, err := wgdelegate.OpenDevice(context.Background(), wgdelegate.DeviceOptions{CPUThreads: n})
		if err == nil {
			dev.Close()
			t.Fatalf("CPUThreads %d: OpenDevice succeeded", n)
		}
		var oe *wgdelegate.OptionError
		if !errors.As(err, &oe) || oe.Field != "CPUThreads" || oe.Value != n {
			t.Errorf("CPUThreads %d: got %v, want an *OptionError", n, err)
		}
	}
}
