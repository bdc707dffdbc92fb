package wgdelegate_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// module is this module's path.
const module = "github.com/wgdelegate/wgdelegate"

// TestPurePackages checks that the plain-Go packages link neither the cgo
// WebGPU binding nor the GPU seam, so they build and test without cgo or a
// device, and that some package edges stay cut: npy does not import
// graph, prepack does not import ops, ops imports neither graph nor lower
// (a fused op reads its group, never the graph), lower does not import
// graph, and the op conformance suite (ops/opstest) does not import graph
// (its GPU backend is ops/opstest/gpubackend, which its tests import). It asks the go tool for each
// package's dependencies (not counting tests) and is skipped when the go
// tool is not on PATH.
func TestPurePackages(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH:", err)
	}
	// Only the GPU seam and the packages that drive a device (graph, the
	// facade) may link these.
	gpuBinding := []string{"github.com/cogentcore/webgpu", module + "/internal/gpu"}
	for _, tc := range []struct {
		pkg    string
		banned []string // besides the GPU binding
	}{
		{"./shaders", nil},
		{"./serialization", nil},
		{"./memplan", nil},
		{"./internal/tensor", nil},
		{"./internal/numguard", nil},
		{"./npy", []string{module + "/graph"}},
		{"./prepack", []string{module + "/ops"}},
		{"./ops", []string{module + "/graph", module + "/lower"}},
		{"./lower", []string{module + "/graph"}},
		{"./ops/reference", nil},
		// The conformance suite's cases, runner and comparison; its GPU
		// backend is ops/opstest/gpubackend, which its tests import.
		{"./ops/opstest", []string{module + "/graph"}},
	} {
		t.Run(strings.TrimPrefix(tc.pkg, "./"), func(t *testing.T) {
			imports := listDeps(t, goTool, tc.pkg)
			root := module + strings.TrimPrefix(tc.pkg, ".")
			if _, ok := imports[root]; !ok {
				t.Fatalf("go list did not list %s itself", root)
			}
			for _, banned := range append(append([]string(nil), gpuBinding...), tc.banned...) {
				if chain := importChain(imports, root, banned); chain != nil {
					t.Errorf("%s links %s or a package under it: %s", tc.pkg, banned, strings.Join(chain, " -> "))
				}
			}
		})
	}
}

// listDeps returns the import lists of pkg and of every package it depends
// on, by import path, as `go list -deps` reports them.
func listDeps(t *testing.T, goTool, pkg string) map[string][]string {
	t.Helper()
	cmd := exec.Command(goTool, "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.Bytes())
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	return imports
}

// importChain returns a shortest import path from root to a package that
// is banned or lies under it (banned + "/..."), or nil when there is none.
func importChain(imports map[string][]string, root, banned string) []string {
	under := func(p string) bool { return p == banned || strings.HasPrefix(p, banned+"/") }
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if under(p) {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, q := range imports[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}
