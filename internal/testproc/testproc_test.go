//go:build linux

package testproc_test

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testproc"
)

func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }

// gone reports whether pid no longer runs (gone, or a zombie).
func gone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return f[0] == "Z" || f[0] == "X"
}

func pids(cs []testproc.Child) []int {
	var out []int
	for _, c := range cs {
		out = append(out, c.Pid)
	}
	return out
}

// A child and what it started are killed when the test that started it
// ends, also when it ends early (here by Skip, which ends it as FailNow
// does).
func TestChildEndsWithItsTest(t *testing.T) {
	var p *testproc.Proc
	var grandchild int
	t.Run("starts", func(t *testing.T) {
		cmd := exec.Command("sh", "-c", "sleep 300 & echo $!; wait")
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		p = testproc.Start(t, cmd)
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err)
		grandchild, err = strconv.Atoi(strings.TrimSpace(line))
		require.NoError(t, err)
		require.Contains(t, pids(testproc.Leftovers()), cmd.Process.Pid)
		t.Skip("ends the test early")
	})
	select {
	case <-p.Done():
	default:
		t.Fatal("the child outlived its test")
	}
	require.NotContains(t, pids(testproc.Leftovers()), p.Cmd.Process.Pid)
	// The grandchild, now init's, is reaped by it: wait for that.
	require.Eventually(t, func() bool { return gone(grandchild) }, 10*time.Second, 10*time.Millisecond, "the grandchild survived")
}

// Leftovers names a child started without testproc until it is waited for.
func TestLeftovers(t *testing.T) {
	cmd := exec.Command("sleep", "300")
	require.NoError(t, cmd.Start())
	left := testproc.Leftovers()
	i := slices.IndexFunc(left, func(c testproc.Child) bool { return c.Pid == cmd.Process.Pid })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, "sleep 300", left[i].Cmd)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.NotContains(t, pids(testproc.Leftovers()), cmd.Process.Pid)
}

// Stop asks first and reports the exit status; a child that ignores the
// signal is killed after the grace period.
func TestStop(t *testing.T) {
	p := testproc.Start(t, exec.Command("sleep", "300"))
	var exit *exec.ExitError
	require.ErrorAs(t, p.Stop(syscall.SIGTERM, time.Minute), &exit)
	require.Equal(t, "signal: terminated", exit.Error())

	stubborn := exec.Command("sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done")
	out, err := stubborn.StdoutPipe()
	require.NoError(t, err)
	p = testproc.Start(t, stubborn)
	_, err = bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.ErrorContains(t, p.Stop(syscall.SIGTERM, 100*time.Millisecond), "did not exit")
	<-p.Done()
}
