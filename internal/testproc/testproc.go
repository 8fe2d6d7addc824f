// Package testproc runs child processes for tests so that none outlives
// its test. Each child gets a process group of its own, and when the test
// ends (passed, failed or panicked) the whole group is killed and the child
// waited for: a shell script's own children go with it. On Linux the
// kernel also kills a child whose test binary dies first, as it does when
// go test's -timeout ends the binary without running any cleanup.
// Leftovers lists the children still running, so a TestMain can fail a run
// that leaks one.
package testproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Prepare sets what every child needs, before cmd starts: its own process
// group, death with the test binary where the system offers it, and, for
// a command made with exec.CommandContext, the group killed when the
// context ends rather than only the child.
func Prepare(cmd *exec.Cmd) {
	setAttrs(cmd)
	if cmd.Cancel != nil { // exec.CommandContext's
		cmd.Cancel = func() error { return killGroup(cmd.Process) }
	}
}

// Proc is a started child.
type Proc struct {
	Cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts cmd (Prepare done) and registers its end with t: the group
// is killed and the child waited for when t ends, unless it ended before.
func Start(t testing.TB, cmd *exec.Cmd) *Proc {
	t.Helper()
	Prepare(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("testproc: starting %s: %v", cmd.Path, err)
	}
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.Kill)
	return p
}

// Done is closed once the child has exited and been waited for.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the child's exit status, once Done is closed.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Kill ends the child and its group with SIGKILL (no shutdown, whatever it
// was doing) and waits for it. It may be called any number of times.
func (p *Proc) Kill() {
	select {
	case <-p.done:
	default:
		_ = killGroup(p.Cmd.Process)
		<-p.done
	}
}

// Stop asks the child to stop with sig and waits up to grace for it to
// exit, then kills the group. It returns the child's exit status, or an
// error saying it had to be killed.
func (p *Proc) Stop(sig os.Signal, grace time.Duration) error {
	_ = p.Cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("testproc: %s did not exit within %v of %v", p.Cmd.Path, grace, sig)
	}
}

// errNoProcess is killGroup's answer for a command never started.
var errNoProcess = errors.New("testproc: not started")

// Main runs m and then fails the run (exit status 1) when a test left a
// child process running, after killing it. A TestMain calls it as
// os.Exit(testproc.Main(m)), after any clean-up of its own.
func Main(m *testing.M, cleanup ...func()) int {
	code := m.Run()
	for _, f := range cleanup {
		f()
	}
	if left := Leftovers(); len(left) > 0 {
		for _, c := range left {
			fmt.Fprintf(os.Stderr, "testproc: a test left child process %d (%s) running\n", c.Pid, c.Cmd)
			if pr, err := os.FindProcess(c.Pid); err == nil {
				_ = killGroup(pr)
				_ = pr.Kill()
			}
		}
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Child is a running child process of this one.
type Child struct {
	Pid int
	Cmd string
}
