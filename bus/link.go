package bus

import (
	"bufio"
	"net"
	"sync"
)

// link is one authenticated bus connection, either side: frames queued by
// send are written by one goroutine in queue order, flushed when the queue
// runs dry, so a burst of messages shares system calls.
type link struct {
	c    net.Conn
	r    *bufio.Reader
	out  chan outFrame
	dead chan struct{}
	once sync.Once
}

// linkQueue is how many frames may wait to be written; a sender blocks
// beyond it (a publisher until its peer timeout).
const linkQueue = 1024

func newLink(c net.Conn, r *bufio.Reader) *link {
	l := &link{c: c, r: r, out: make(chan outFrame, linkQueue), dead: make(chan struct{})}
	go l.write()
	return l
}

func (l *link) write() {
	w := bufio.NewWriterSize(l.c, 64<<10)
	for {
		select {
		case f := <-l.out:
			if _, err := w.Write(f.head); err != nil {
				l.close()
				return
			}
			if _, err := w.Write(f.body); err != nil {
				l.close()
				return
			}
			if len(l.out) == 0 {
				if err := w.Flush(); err != nil {
					l.close()
					return
				}
			}
		case <-l.dead:
			return
		}
	}
}

// send queues a frame; done (nil: never) gives up waiting for room.
func (l *link) send(f outFrame, done <-chan struct{}) bool {
	select {
	case l.out <- f:
		return true
	case <-l.dead:
	case <-done:
	}
	return false
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.dead)
		l.c.Close()
	})
}
