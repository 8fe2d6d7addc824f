package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestShutdownCommand runs redamo as the process does (realMain) and stops
// it with SHUTDOWN: the client that sent it gets the replies before it and
// then its connection closes without a reply, other clients' connections
// close, the listener closes, and the process's main returns 0, as after
// SIGTERM. SHUTDOWN ABORT and SHUTDOWN inside MULTI are refused and stop
// nothing.
func TestShutdownCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	var stdout, stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- realMain([]string{"--addr", addr}, func(string) string { return "" }, &stdout, &stderr)
	}()
	dial := func() net.Conn {
		var c net.Conn
		require.Eventually(t, func() bool {
			c, err = net.Dial("tcp", addr)
			return err == nil
		}, 30*time.Second, 10*time.Millisecond, "redamo never listened")
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	idle, c := dial(), dial()
	// A reply that never comes fails the test rather than hanging it.
	require.NoError(t, c.SetDeadline(time.Now().Add(time.Minute)))
	require.NoError(t, idle.SetDeadline(time.Now().Add(time.Minute)))
	r := bufio.NewReader(c)
	expect := func(req, reply string) {
		t.Helper()
		_, err := c.Write([]byte(req))
		require.NoError(t, err)
		got := make([]byte, len(reply))
		_, err = io.ReadFull(r, got)
		require.NoError(t, err)
		require.Equal(t, reply, string(got))
	}
	expect("SHUTDOWN ABORT\r\n", "-ERR No shutdown in progress.\r\n")
	expect("SHUTDOWN NOSAVE SAVE\r\n", "-ERR syntax error\r\n")
	expect("MULTI\r\nSHUTDOWN\r\nEXEC\r\n", "+OK\r\n-ERR Command not allowed inside a transaction\r\n-EXECABORT Transaction discarded because of previous errors.\r\n")
	_, err = c.Write([]byte("EVAL \"return redis.call('shutdown')\" 0\r\n"))
	require.NoError(t, err)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Regexp(t, `^-ERR This Redis command is not allowed from script script: [0-9a-f]{40}, on @user_script:1\.\r\n$`, line)

	// PING's reply comes, then the connection closes: nothing more.
	_, err = c.Write([]byte("PING\r\nSHUTDOWN NOSAVE NOW\r\nPING\r\n"))
	require.NoError(t, err)
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", string(rest))

	select {
	case code := <-exited:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(time.Minute):
		t.Fatal("redamo did not exit after SHUTDOWN")
	}
	require.Contains(t, stderr.String(), "shutting down")
	n, err := idle.Read(make([]byte, 1))
	require.Equal(t, 0, n)
	require.Error(t, err)
	_, err = net.Dial("tcp", addr)
	require.Error(t, err, "the listener is closed")
}
