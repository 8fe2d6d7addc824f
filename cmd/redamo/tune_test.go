package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTuneRuntime: redamo's GC target and Ps apply when their variables are
// unset, twice in a row gives the same, and a set variable is left alone.
func TestTuneRuntime(t *testing.T) {
	procs, gc := runtime.GOMAXPROCS(0), debug.SetGCPercent(100)
	t.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(gc)
	})
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	for range 2 {
		tuneRuntime(env(nil))
		require.Equal(t, procsPerCPU*startProcs, runtime.GOMAXPROCS(0))
		require.Equal(t, gcPercent, debug.SetGCPercent(gcPercent))
	}
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(50)
	tuneRuntime(env(map[string]string{"GOGC": "50", "GOMAXPROCS": "1"}))
	require.Equal(t, 1, runtime.GOMAXPROCS(0))
	require.Equal(t, 50, debug.SetGCPercent(50))
}
