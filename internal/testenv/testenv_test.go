package testenv

import "testing"

func TestLong(t *testing.T) {
	for _, tc := range []struct {
		val  string
		want bool
	}{{"", false}, {"0", false}, {"1", true}, {"yes", true}} {
		t.Setenv(LongEnv, tc.val)
		if got := Long(); got != tc.want {
			t.Errorf("%s=%q: Long() = %v, want %v", LongEnv, tc.val, got, tc.want)
		}
	}
}

func TestRunC(t *testing.T) {
	t.Setenv(RunCEnv, "/some/run.c")
	if got := RunC(); got != "/some/run.c" {
		t.Errorf("RunC() with %s set = %q", RunCEnv, got)
	}
}

func TestRunCSource(t *testing.T) {
	t.Setenv(RunCEnv, "/some/run.c")
	if got := RunCSource(t); got != "/some/run.c" {
		t.Errorf("RunCSource() with %s set = %q", RunCEnv, got)
	}
}

func TestCCompilerSkipsWithoutOne(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ran := false
	t.Run("empty PATH", func(t *testing.T) {
		CCompiler(t)
		ran = true
	})
	if ran {
		t.Error("CCompiler returned with no compiler on PATH")
	}
}
