//go:build linux

package testproc

import (
	"os/exec"
	"syscall"
)

func setAttrs(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// Sent when the thread that started the child exits: Go's threads
	// live as long as the process, bar one locked by a goroutine that
	// ended, which tests here do not do.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
