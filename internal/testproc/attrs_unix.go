//go:build unix && !linux

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
}
