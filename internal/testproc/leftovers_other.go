//go:build !linux

package testproc

// Leftovers returns nil: only Linux's /proc is read.
func Leftovers() []Child { return nil }
