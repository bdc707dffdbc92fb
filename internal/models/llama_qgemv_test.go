package models

import (
	"fmt"
	"testing"
)

// TestLlamaQ4GSWOneRowKernel is TestLlamaQ4GSWDecode with Dim, Hidden and
// the group size multiples of 32, so that every decode step's linears run
// the one-row quantized kernel (shaders/qgemv.wgsl) with their residual
// adds and SwiGLU products fused, and the prefill's the tiled one.
func TestLlamaQ4GSWOneRowKernel(t *testing.T) {
	for _, plan := range Plans {
		t.Run(fmt.Sprintf("plan=%s", plan), func(t *testing.T) {
			cfg := testLlama
			cfg.Dim, cfg.Hidden, cfg.Q4Group = 64, 96, 32
			decodeAgainstReference(t, cfg, plan)
		})
	}
}
