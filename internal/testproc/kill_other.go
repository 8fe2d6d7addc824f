//go:build !unix

package testproc

import (
	"os"
	"os/exec"
)

func setAttrs(*exec.Cmd) {}

// killGroup kills p: no process groups here.
func killGroup(p *os.Process) error {
	if p == nil {
		return errNoProcess
	}
	return p.Kill()
}
