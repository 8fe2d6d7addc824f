package resp

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// watchHangup cancels ctx when the client hangs up while a blocking command
// (BLPOP ...) waits: nobody reads the connection meanwhile, so without this
// a vanished client would keep its command waiting, possibly until it
// consumes an element nobody will receive. It returns a stop function that
// must be called before the connection is read again.
//
// It waits for the socket to become readable and peeks (MSG_PEEK) without
// consuming: end of stream means the client is gone; pending data means it
// is alive (the next pipelined request), and the watch ends there, as Redis
// only notices a hang-up behind unread input once it reads it. Under TLS
// the peek is on the TCP stream: a bare close is seen, while a close_notify
// record counts as data. Connections without a socket are not watched.
func watchHangup(c net.Conn, cancel context.CancelFunc) (stop func()) {
	raw := socketOf(c)
	if raw == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf [1]byte
		var n int
		var perr error
		err := raw.Read(func(fd uintptr) bool {
			n, perr = sysPeek(fd, buf[:])
			// EAGAIN: nothing yet, wait for readability.
			return !errors.Is(perr, syscall.EAGAIN)
		})
		switch {
		case err != nil:
			// The stop deadline (or a closed connection).
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				cancel()
			}
		case perr != nil || n == 0:
			cancel()
		}
	}()
	return func() {
		// A past read deadline wakes the watcher; clear it afterwards so the
		// connection's reads are unaffected.
		_ = c.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = c.SetReadDeadline(time.Time{})
	}
}
