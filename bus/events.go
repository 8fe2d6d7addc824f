package bus

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// Key events between instances: the bus implements events.Peers.
//
// An event is a frame of its own (kindEvent) that nobody answers: a write
// command never waits for a peer. It goes on the sender's connection to
// each peer that wants it, in the order sent, and the receiver hands it to
// its Dispatcher in arrival order.
//
// Who wants what. Every instance wants every event while keyspace
// notifications are on (the sender's notify-keyspace-events selects the
// event: the flags are the table's, the same everywhere), and an instance
// with consumers (client tracking, a watch) wants every event always. The
// latter is declared (kindInterest, on or off, acknowledged) and the
// receiver keeps it on its peer entry for the declarer: it goes when the
// entry goes (the member was dropped), and a restarted instance is a new
// member that declares afresh. A declaration carries a sequence number, so
// that one overtaken by an older one on another connection is not undone.
// Whenever a connection is established, each side sends its current
// interest first (the dialer as its first request, the listener unasked),
// so a peer that reconnected, restarted or just joined knows the other's
// interest before it can miss an event.

// Events is where the bus hands what other instances report: the
// process's events.Dispatcher.
type Events interface {
	// Receive reports another instance's key event to this one.
	Receive(e events.Event)
	// ApplyFlags makes c this instance's notify-keyspace-events (a
	// peer's word). ApplyFlagsSince applies the value a read of the table
	// found, unless they changed since FlagsGen returned gen as the read
	// began.
	ApplyFlags(c events.Class)
	FlagsGen() uint64
	ApplyFlagsSince(c events.Class, gen uint64)
}

var _ events.Peers = (*Bus)(nil)

// appendEvent encodes e's body: db, class, name, key.
func appendEvent(dst []byte, e events.Event) []byte {
	dst = binary.AppendVarint(dst, int64(e.DB))
	dst = binary.AppendUvarint(dst, uint64(e.Class))
	dst = appendBytes(dst, []byte(e.Name))
	return appendBytes(dst, e.Key)
}

func decodeEvent(body []byte) (events.Event, error) {
	d := decoder{b: body}
	e := events.Event{DB: int(d.varint()), Class: events.Class(d.uvarint())}
	e.Name = string(d.bytes())
	e.Key = d.bytes()
	return e, d.done()
}

// interestBody is a declaration: on or off, and its sequence number.
func interestBody(on bool, seq uint64) []byte {
	var b byte
	if on {
		b = 1
	}
	return binary.AppendUvarint([]byte{b}, seq)
}

func decodeInterest(body []byte) (on bool, seq uint64, err error) {
	d := decoder{b: body}
	on = d.byte() == 1
	seq = d.uvarint()
	return on, seq, d.done()
}

// myInterest is this instance's current declaration.
func (b *Bus) myInterest() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return interestBody(b.want, b.wantSeq)
}

// Send implements events.Peers: e goes to every connected peer when all is
// set, else to those that declared an interest. A peer whose connection's
// queue is full holds the sender at most PeerTimeout; past it the event is
// dropped for that peer (delivery is at most once) and the connection
// with it, as a publish drops a peer that does not answer: a hung
// instance holds writers once, not at every event.
func (b *Bus) Send(e events.Event, all bool) {
	if !all && b.interested.Load() == 0 {
		return
	}
	listed := b.listed.Load()
	if listed == nil {
		return
	}
	var body []byte
	for _, p := range *listed {
		if all || p.wants.Load() {
			if body == nil {
				body = appendEvent(nil, e)
			}
			p.post(requestFrame(kindEvent, 0, body), b.cfg.PeerTimeout)
		}
	}
}

// Interest implements events.Peers.
func (b *Bus) Interest(ctx context.Context, on bool) error {
	b.mu.Lock()
	b.want = on
	b.wantSeq++
	body := interestBody(on, b.wantSeq)
	b.mu.Unlock()
	b.fanout(ctx, kindInterest, func(dst []byte) []byte { return append(dst, body...) })
	return ctx.Err()
}

// Anyone implements events.Peers: one atomic load, as it is asked on every
// write while this instance has no consumer.
func (b *Bus) Anyone() bool { return b.interested.Load() > 0 }

// Flags implements events.Peers: the connected peers have applied c when
// it returns. One that missed it applies the table's value at its next
// heartbeat, which also settles two CONFIG SETs that crossed.
func (b *Bus) Flags(ctx context.Context, c events.Class) error {
	b.fanout(ctx, kindFlags, func(dst []byte) []byte { return binary.AppendUvarint(dst, uint64(c)) })
	return ctx.Err()
}

// declared records the declaration body of peer p (nil: a peer this
// instance no longer lists); false when the body is malformed.
func (b *Bus) declared(p *peer, body []byte) bool {
	on, seq, err := decodeInterest(body)
	if err != nil {
		return false
	}
	if p != nil && p.declare(on, seq) {
		b.recount()
	}
	return true
}

// recount refreshes the count Anyone reads and the peers Send reads,
// after a declaration or a change of the peers.
func (b *Bus) recount() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recountLocked()
}

func (b *Bus) recountLocked() {
	var n int32
	listed := make([]*peer, 0, len(b.peers))
	for _, p := range b.peers {
		listed = append(listed, p)
		if p.wants.Load() {
			n++
		}
	}
	b.interested.Store(n)
	b.listed.Store(&listed)
}

// peerFor returns the peer entry of id (nil when there is none).
func (b *Bus) peerFor(id ID) *peer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peers[id]
}

// flagsGen returns the generation of the flags as a read of the table
// begins.
func (b *Bus) flagsGen() uint64 {
	if b.cfg.Events == nil {
		return 0
	}
	return b.cfg.Events.FlagsGen()
}

// applySettings makes the table's settings, as a read found them, this
// instance's, unless its flags changed while the read ran (gen was their
// generation when it began): a CONFIG SET here or a peer's kindFlags may
// then be newer than what the read saw. The read is strongly consistent,
// so one that begins after a CONFIG SET's write sees it; whatever two
// crossing CONFIG SETs left, the next read settles it on the table's
// value. A table without the item has Redis's defaults.
func (b *Bus) applySettings(s *model.Settings, gen uint64) {
	if b.cfg.Events == nil {
		return
	}
	v := ""
	if s != nil {
		v = s.KeyspaceEvents
	}
	if c, ok := events.ParseFlags(v); ok {
		b.cfg.Events.ApplyFlagsSince(c, gen)
	}
}

// post queues a frame nobody answers; it waits for room at most timeout,
// then closes the connection.
func (p *peer) post(f outFrame, timeout time.Duration) bool {
	p.mu.Lock()
	l := p.l
	p.mu.Unlock()
	if l == nil {
		return false
	}
	select {
	case l.out <- f:
		return true
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case l.out <- f:
		return true
	case <-l.dead:
	case <-t.C:
		l.close()
	}
	return false
}

// declare records the peer's interest unless an earlier declaration
// overtook a later one; it reports whether the interest changed.
func (p *peer) declare(on bool, seq uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if seq < p.wantSeq {
		return false
	}
	p.wantSeq = seq
	return p.wants.Swap(on) != on
}
