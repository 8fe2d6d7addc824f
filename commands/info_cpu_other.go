//go:build !unix

package commands

// cpuTimes reports no CPU time where getrusage(2) is not available: INFO
// cpu then shows zeros.
func cpuTimes() (sys, user float64) { return 0, 0 }
