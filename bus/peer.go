package bus

import (
	"bufio"
	"context"
	"crypto/tls"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Reconnection backoff: from minBackoff, doubling to maxBackoff, jittered,
// so a member that is gone but still listed costs a dial now and then.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// peer is another member and this instance's connection to it.
type peer struct {
	b     *Bus
	m     Member
	added time.Time
	ctx   context.Context
	stop  context.CancelFunc

	mu      sync.Mutex
	l       *link
	pending map[uint64]chan frame
	nextID  uint64
	// wantSeq is the sequence number of the peer's latest declaration of
	// interest, wants what it declared (events.go).
	wantSeq uint64
	wants   atomic.Bool
	// unreachable is set while the last dial failed (Linked).
	unreachable atomic.Bool
}

func (b *Bus) newPeer(m Member) *peer {
	ctx, cancel := context.WithCancel(context.Background())
	p := &peer{b: b, m: m, added: time.Now(), ctx: ctx, stop: cancel, pending: map[uint64]chan frame{}}
	b.wg.Add(1)
	go p.run()
	return p
}

// run keeps a connection open until the peer is dropped.
func (p *peer) run() {
	defer p.b.wg.Done()
	backoff := minBackoff
	for {
		l, err := p.dial()
		p.unreachable.Store(err != nil)
		if err == nil {
			backoff = minBackoff
			p.mu.Lock()
			p.l = l
			p.mu.Unlock()
			// After the link is visible: a declaration made since went
			// out on it, or this one reads it (events.go).
			l.send(requestFrame(kindInterest, 0, p.b.myInterest()), nil)
			p.read(l)
			p.mu.Lock()
			p.l = nil
			p.pending = map[uint64]chan frame{}
			p.mu.Unlock()
		}
		wait := backoff/2 + rand.N(backoff)
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func (p *peer) dial() (*link, error) {
	d := net.Dialer{Timeout: p.b.cfg.HandshakeTimeout}
	c, err := d.DialContext(p.ctx, "tcp", p.m.Addr)
	if err != nil {
		return nil, err
	}
	if p.b.cfg.ClientTLS != nil {
		c = tls.Client(c, p.b.cfg.ClientTLS)
	}
	// Close on stop while the handshake waits.
	unwatch := context.AfterFunc(p.ctx, func() { c.Close() })
	defer unwatch()
	c.SetDeadline(time.Now().Add(p.b.cfg.HandshakeTimeout))
	r := bufio.NewReaderSize(c, 64<<10)
	if err := dialHandshake(c, r, p.b.cfg.Secret, p.b.id, p.b.advertised, p.m.ID); err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	if p.ctx.Err() != nil {
		c.Close()
		return nil, p.ctx.Err()
	}
	return newLink(c, r), nil
}

// read hands replies to their callers until the connection ends; the
// only frame the listener sends unasked is its interest.
func (p *peer) read(l *link) {
	defer l.close()
	unwatch := context.AfterFunc(p.ctx, l.close)
	defer unwatch()
	for {
		f, err := readFrame(l.r)
		if err != nil {
			return
		}
		if f.kind == kindInterest {
			if !p.b.declared(p, f.body) {
				return
			}
			continue
		}
		if f.kind&replyBit == 0 {
			return
		}
		p.mu.Lock()
		ch := p.pending[f.id]
		delete(p.pending, f.id)
		p.mu.Unlock()
		if ch != nil {
			ch <- f
		}
	}
}

// call is one request in flight.
type call struct {
	p  *peer
	l  *link
	id uint64
	ch chan frame
}

// send queues a request; ok is false when the peer is not connected (or
// its queue stayed full until done).
func (p *peer) send(kind byte, body []byte, done <-chan struct{}) (call, bool) {
	p.mu.Lock()
	l := p.l
	if l == nil {
		p.mu.Unlock()
		return call{}, false
	}
	p.nextID++
	c := call{p: p, l: l, id: p.nextID, ch: make(chan frame, 1)}
	p.pending[c.id] = c.ch
	p.mu.Unlock()
	if !l.send(requestFrame(kind, c.id, body), done) {
		c.forget()
		return call{}, false
	}
	return c, true
}

func (c call) forget() {
	c.p.mu.Lock()
	delete(c.p.pending, c.id)
	c.p.mu.Unlock()
}

// wait waits for the reply until expired (the peer timeout) or canceled
// (the caller left). A peer that does not answer in time loses its
// connection: its later requests count 0 at once until it is reachable
// again, instead of each waiting out the timeout.
func (c call) wait(expired, canceled <-chan struct{}) (frame, bool) {
	// A reply that came while the caller waited for another peer counts,
	// even though the deadline has passed since.
	select {
	case f := <-c.ch:
		return f, true
	default:
	}
	select {
	case f := <-c.ch:
		return f, true
	case <-c.l.dead:
	case <-expired:
		c.forget()
		c.l.close()
	case <-canceled:
		c.forget()
	}
	return frame{}, false
}

func (p *peer) close() {
	p.stop()
}
