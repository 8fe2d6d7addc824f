//go:build unix

package testproc

import (
	"os"
	"syscall"
)

// killGroup kills p's process group (p leads it: Setpgid), and p itself
// should the group be gone already.
func killGroup(p *os.Process) error {
	if p == nil {
		return errNoProcess
	}
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if kerr := p.Kill(); err != nil && kerr != nil && kerr != os.ErrProcessDone {
		return kerr
	}
	return nil
}
