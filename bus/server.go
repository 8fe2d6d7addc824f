package bus

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"net"
	"time"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/pubsub"
)

// serve accepts peers' connections until the listener closes.
func (b *Bus) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			select {
			case <-b.stop:
				return
			default:
			}
			// A transient accept error (too many open files) must not
			// end the bus; pausing keeps it from spinning.
			time.Sleep(50 * time.Millisecond)
			continue
		}
		b.wg.Add(1)
		go b.serveConn(c)
	}
}

// serveConn authenticates a peer and answers its requests in arrival
// order, which is what keeps a publisher's messages in order.
func (b *Bus) serveConn(c net.Conn) {
	defer b.wg.Done()
	if !b.track(c, true) {
		c.Close()
		return
	}
	defer b.track(c, false)
	defer c.Close()
	c.SetDeadline(time.Now().Add(b.cfg.HandshakeTimeout))
	if tc, ok := c.(*tls.Conn); ok {
		if err := tc.Handshake(); err != nil {
			return
		}
	}
	r := bufio.NewReaderSize(c, 64<<10)
	id, addr, err := acceptHandshake(c, r, b.cfg.Secret, b.id)
	if err != nil {
		b.rejected.Add(1)
		return
	}
	c.SetDeadline(time.Time{})
	b.learn(id, addr)
	b.authenticated(id, 1)
	defer b.authenticated(id, -1)
	l := newLink(c, r)
	defer l.close()
	// The dialer may have made a new entry for this instance, which knows
	// nothing of its interest yet (events.go).
	if !l.send(requestFrame(kindInterest, 0, b.myInterest()), nil) {
		return
	}
	for {
		f, err := readFrame(r)
		if err != nil {
			return
		}
		reply, ok := b.answer(id, f)
		if !ok {
			return
		}
		if reply != nil && !l.send(outFrame{body: reply}, nil) {
			return
		}
	}
}

// answer runs one request of peer from against the local instance; a nil
// reply is none (an event).
func (b *Bus) answer(from ID, f frame) ([]byte, bool) {
	d := decoder{b: f.body}
	var body func([]byte) []byte
	switch f.kind {
	case kindEvent:
		e, err := decodeEvent(f.body)
		if err != nil {
			return nil, false
		}
		if b.cfg.Events != nil {
			b.cfg.Events.Receive(e)
		}
		return nil, true
	case kindInterest:
		if !b.declared(b.peerFor(from), f.body) {
			return nil, false
		}
		body = func(dst []byte) []byte { return dst }
	case kindFlags:
		c := events.Class(d.uvarint())
		if d.done() != nil {
			return nil, false
		}
		if b.cfg.Events != nil {
			b.cfg.Events.ApplyFlags(c)
		}
		body = func(dst []byte) []byte { return dst }
	case kindPublish:
		flags := d.byte()
		m := pubsub.Message{Shard: flags&flagShard != 0, Channel: d.bytes(), Payload: d.bytes()}
		if d.done() != nil {
			return nil, false
		}
		n := b.local.Deliver(m)
		body = func(dst []byte) []byte { return binary.AppendVarint(dst, n) }
	case kindChannels:
		flags := d.byte()
		pattern := d.bytes()
		if d.done() != nil {
			return nil, false
		}
		if flags&flagPattern == 0 {
			pattern = nil
		}
		chs := b.local.LocalChannels(pattern, flags&flagShard != 0)
		body = func(dst []byte) []byte {
			dst = binary.AppendUvarint(dst, uint64(len(chs)))
			for _, ch := range chs {
				dst = appendBytes(dst, ch)
			}
			return dst
		}
	case kindNumSub:
		flags := d.byte()
		chs := make([][]byte, d.count())
		for i := range chs {
			chs[i] = d.bytes()
		}
		if d.done() != nil {
			return nil, false
		}
		ns := b.local.LocalNumSub(chs, flags&flagShard != 0)
		body = func(dst []byte) []byte {
			dst = binary.AppendUvarint(dst, uint64(len(ns)))
			for _, n := range ns {
				dst = binary.AppendVarint(dst, n)
			}
			return dst
		}
	case kindNumPat:
		if d.done() != nil {
			return nil, false
		}
		n := b.local.LocalNumPat()
		body = func(dst []byte) []byte { return binary.AppendVarint(dst, n) }
	default:
		return nil, false
	}
	return appendFrame(nil, f.kind|replyBit, f.id, body), true
}
