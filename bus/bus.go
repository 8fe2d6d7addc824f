package bus

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/pubsub"
)

// Config is what cmd/redamo fills from its flags. The zero value of every
// duration takes the default beside it.
type Config struct {
	// Listen is the bus's TCP listen address. cmd/redamo's convention,
	// as Redis Cluster's: the RESP port + 10000 on the RESP listener's
	// host (ListenFor), unless a bus port is given (--bus-port).
	Listen string
	// Advertise is the host:port other instances dial (--bus-addr): what
	// they can reach when Listen is a wildcard or behind NAT. Empty: the
	// listener's address, with a wildcard host replaced by this host's
	// first non-loopback address.
	Advertise string
	// Secret keys the handshake: SecretFromPassword(requirepass), or a
	// dedicated --bus-secret. Every instance of a table needs the same.
	// Empty is a valid key everybody knows: an instance without
	// requirepass has an open bus, as its RESP port is open.
	Secret []byte
	// ServerTLS, when set, wraps the listener in TLS (from --tls-cert/
	// --tls-key; with ClientAuth and ClientCAs set, only holders of a
	// certificate get as far as the handshake). ClientTLS is what dials
	// peers (RootCAs and, for mutual TLS, Certificates). Set both or
	// neither: a TLS listener rejects a plain dialer.
	ServerTLS, ClientTLS *tls.Config
	// Heartbeat is how often an instance renews its item and reads the
	// members (default 10 s): two requests per period per instance, paid
	// for as long as the cluster runs.
	Heartbeat time.Duration
	// Expiry is how long a heartbeat lasts (default 3 Heartbeats): an
	// instance that stopped renewing is dropped at most this long after
	// its last renewal. Three periods ride out two failed renewals (a
	// throttled or slow request) without dropping a live member.
	Expiry time.Duration
	// PeerTimeout is how long a publisher waits for one peer's answer
	// (default 250 ms): far above a healthy round trip between instances
	// of one region, short enough that a hung peer is a hiccup.
	PeerTimeout time.Duration
	// HandshakeTimeout bounds a dial plus the handshake (default 2 s).
	HandshakeTimeout time.Duration
	// Events is where the others' key events and notify-keyspace-events
	// go (the process's events.Dispatcher); nil drops them. The table's
	// notify-keyspace-events, read with the members, is applied to it
	// from Start on, before the instance serves.
	Events Events
	// Now is the clock heartbeats are written and judged by (default:
	// time.Now, corrected by the store's offset when it has one, so that
	// every instance judges expiry by the same clock).
	Now func() time.Time
}

const (
	defaultHeartbeat   = 10 * time.Second
	defaultPeerTimeout = 250 * time.Millisecond
	defaultHandshake   = 2 * time.Second
)

// Label is the request label the bus's store requests are counted under.
const Label = "bus"

// Bus is one instance's membership and links to the other instances. It
// implements pubsub.Peers.
type Bus struct {
	cfg        Config
	store      dynastore.Store
	local      pubsub.Local
	id         ID
	started    time.Time
	ln         net.Listener
	advertised string

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	mu      sync.Mutex
	peers   map[ID]*peer
	inbound map[net.Conn]struct{}
	// from counts the authenticated inbound connections of each peer.
	from   map[ID]int
	closed bool
	// want and wantSeq are this instance's interest in every key event,
	// as last declared (events.go).
	want    bool
	wantSeq uint64

	// interested counts the peers that declared an interest, and listed
	// holds the peers, for the senders of key events, which must not
	// contend on mu (recountLocked keeps both up to date).
	interested atomic.Int32
	listed     atomic.Pointer[[]*peer]

	// rejected counts connections that failed the handshake.
	rejected atomic.Int64
	// manual (tests) leaves the heartbeats to the caller of beat.
	manual bool
}

var _ pubsub.Peers = (*Bus)(nil)

// New opens the bus's listener; Start joins the cluster.
func New(cfg Config, store dynastore.Store, local pubsub.Local) (*Bus, error) {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = defaultHeartbeat
	}
	if cfg.Expiry <= 0 {
		cfg.Expiry = 3 * cfg.Heartbeat
	}
	if cfg.Expiry <= cfg.Heartbeat {
		return nil, fmt.Errorf("bus: heartbeat expiry %v must exceed its period %v", cfg.Expiry, cfg.Heartbeat)
	}
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = defaultPeerTimeout
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = defaultHandshake
	}
	if cfg.Now == nil {
		cfg.Now = storeClock(store)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	adv := cfg.Advertise
	if adv == "" {
		adv = advertise(ln.Addr().(*net.TCPAddr))
	}
	if cfg.ServerTLS != nil {
		ln = tls.NewListener(ln, cfg.ServerTLS)
	}
	return &Bus{
		cfg: cfg, store: store, local: local, id: newID(), ln: ln, advertised: adv,
		stop: make(chan struct{}), peers: map[ID]*peer{}, inbound: map[net.Conn]struct{}{}, from: map[ID]int{},
	}, nil
}

// storeClock is the local clock corrected by the store's measured offset.
func storeClock(st dynastore.Store) func() time.Time {
	c, ok := st.(dynastore.Clocked)
	if !ok {
		return time.Now
	}
	return func() time.Time {
		off, _, _ := c.ClockOffset()
		return time.Now().Add(off)
	}
}

// advertise names a listener's address as peers should dial it.
func advertise(a *net.TCPAddr) string {
	if !a.IP.IsUnspecified() {
		return a.String()
	}
	host := "127.0.0.1"
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, ia := range addrs {
			if n, ok := ia.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				host = n.IP.String()
				break
			}
		}
	}
	return net.JoinHostPort(host, fmt.Sprint(a.Port))
}

// ID is this instance's id; Addr the address it advertises.
func (b *Bus) ID() ID       { return b.id }
func (b *Bus) Addr() string { return b.advertised }

// Start announces this instance, reads the members and keeps both up to
// date until Close. A failure to announce is returned (the store is
// unreachable); later failures are retried at the next period.
func (b *Bus) Start(ctx context.Context) error {
	b.started = b.cfg.Now()
	ctx = dynastore.WithLabel(ctx, Label)
	if err := b.beat(ctx); err != nil {
		_ = b.shutdown(true) // best effort: the store just failed
		return err
	}
	b.wg.Add(1)
	go b.serve()
	if !b.manual {
		b.wg.Add(1)
		go b.loop()
	}
	return nil
}

func (b *Bus) loop() {
	defer b.wg.Done()
	t := time.NewTicker(b.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(dynastore.WithLabel(context.Background(), Label), b.cfg.Heartbeat)
			_ = b.beat(ctx) // retried at the next period; the expiry spans several
			cancel()
		}
	}
}

// beat renews this instance's item and refreshes the members from the
// table: two requests.
func (b *Bus) beat(ctx context.Context) error {
	now := b.cfg.Now()
	me := Member{ID: b.id, Addr: b.advertised, Started: b.started, Expiry: now.Add(b.cfg.Expiry)}
	if err := announce(ctx, b.store, me); err != nil {
		return fmt.Errorf("bus: announcing this instance: %w", err)
	}
	return b.refresh(ctx)
}

// refresh reads the members and makes the peer set match: new members are
// dialed, lapsed ones dropped. A peer learned from its own connection after
// the read began is kept: the read may predate its item.
func (b *Bus) refresh(ctx context.Context) error {
	began := time.Now()
	gen := b.flagsGen()
	ms, settings, err := members(ctx, b.store, b.cfg.Now())
	if err != nil {
		return fmt.Errorf("bus: reading the members: %w", err)
	}
	b.applySettings(settings, gen)
	live := make(map[ID]Member, len(ms))
	for _, m := range ms {
		if m.ID != b.id {
			live[m.ID] = m
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	for id, p := range b.peers {
		m, ok := live[id]
		if (!ok && p.added.Before(began)) || (ok && m.Addr != p.m.Addr) {
			p.close()
			delete(b.peers, id)
		}
	}
	for id, m := range live {
		if b.peers[id] == nil {
			b.peers[id] = b.newPeer(m)
		}
	}
	b.recountLocked()
	return nil
}

// learn adds a member that authenticated on its own connection.
func (b *Bus) learn(id ID, addr string) {
	if id == b.id || addr == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.peers[id] != nil {
		return
	}
	b.peers[id] = b.newPeer(Member{ID: id, Addr: addr})
	b.recountLocked()
}

// track registers an inbound connection (so Close can end it), or forgets it.
func (b *Bus) track(c net.Conn, add bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !add {
		delete(b.inbound, c)
		return true
	}
	if b.closed {
		return false
	}
	b.inbound[c] = struct{}{}
	return true
}

// authenticated counts an inbound connection of peer id (n = 1) or its
// end (n = -1).
func (b *Bus) authenticated(id ID, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.from[id] += n; b.from[id] <= 0 {
		delete(b.from, id)
	}
}

// Linked reports whether this instance has a live connection to every
// member it knows and one from each, but for the members it could not
// reach at its last try (one that died is listed until its heartbeat
// lapses): tests wait for it before they send.
func (b *Bus) Linked() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, p := range b.peers {
		if p.unreachable.Load() {
			continue
		}
		p.mu.Lock()
		up := p.l != nil
		p.mu.Unlock()
		if !up || b.from[id] == 0 {
			return false
		}
	}
	return true
}

// Members returns the peers this instance currently reaches out to.
func (b *Bus) Members() []Member {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Member, 0, len(b.peers))
	for _, p := range b.peers {
		out = append(out, p.m)
	}
	return out
}

// Close leaves the cluster: the item is deleted (so the others drop this
// instance at their next read rather than at its expiry), the listener and
// every connection are closed.
func (b *Bus) Close() error {
	return b.shutdown(true)
}

// Kill stops the bus as a process that dies does (tests): its connections
// close, and its item stays until its heartbeat lapses.
func (b *Bus) Kill() {
	_ = b.shutdown(false)
}

func (b *Bus) shutdown(withdrawItem bool) error {
	var err error
	b.stopOnce.Do(func() {
		close(b.stop)
		b.mu.Lock()
		b.closed = true
		for id, p := range b.peers {
			p.close()
			delete(b.peers, id)
		}
		b.recountLocked()
		for c := range b.inbound {
			c.Close()
		}
		b.mu.Unlock()
		b.ln.Close()
		if withdrawItem {
			ctx, cancel := context.WithTimeout(dynastore.WithLabel(context.Background(), Label), b.cfg.HandshakeTimeout)
			err = withdraw(ctx, b.store, b.id)
			cancel()
		}
		b.wg.Wait()
	})
	return err
}

// fanout sends one request to every connected peer and returns the replies
// that came back within the peer timeout (or before ctx ended).
func (b *Bus) fanout(ctx context.Context, kind byte, body func([]byte) []byte) []frame {
	b.mu.Lock()
	peers := make([]*peer, 0, len(b.peers))
	for _, p := range b.peers {
		peers = append(peers, p)
	}
	b.mu.Unlock()
	if len(peers) == 0 {
		return nil
	}
	payload := body(nil)
	expired := make(chan struct{})
	t := time.AfterFunc(b.cfg.PeerTimeout, func() { close(expired) })
	defer t.Stop()
	calls := make([]call, 0, len(peers))
	for _, p := range peers {
		if c, ok := p.send(kind, payload, expired); ok {
			calls = append(calls, c)
		}
	}
	replies := make([]frame, 0, len(calls))
	for _, c := range calls {
		if f, ok := c.wait(expired, ctx.Done()); ok && f.kind == kind|replyBit {
			replies = append(replies, f)
		}
	}
	return replies
}

// Publish implements pubsub.Peers: the sum of the receivers the peers that
// answered in time report.
func (b *Bus) Publish(ctx context.Context, m pubsub.Message) (int64, error) {
	var flags byte
	if m.Shard {
		flags = flagShard
	}
	var sum int64
	for _, f := range b.fanout(ctx, kindPublish, func(dst []byte) []byte {
		dst = append(dst, flags)
		dst = appendBytes(dst, m.Channel)
		return appendBytes(dst, m.Payload)
	}) {
		d := decoder{b: f.body}
		n := d.varint()
		if d.done() == nil {
			sum += n
		}
	}
	return sum, ctx.Err()
}

// Channels implements pubsub.Peers.
func (b *Bus) Channels(ctx context.Context, pattern []byte, shard bool) ([][]byte, error) {
	var flags byte
	if shard {
		flags |= flagShard
	}
	if pattern != nil {
		flags |= flagPattern
	}
	seen := map[string]bool{}
	var out [][]byte
	for _, f := range b.fanout(ctx, kindChannels, func(dst []byte) []byte {
		return appendBytes(append(dst, flags), pattern)
	}) {
		d := decoder{b: f.body}
		chs := make([][]byte, d.count())
		for i := range chs {
			chs[i] = d.bytes()
		}
		if d.done() != nil {
			continue
		}
		for _, ch := range chs {
			if !seen[string(ch)] {
				seen[string(ch)] = true
				out = append(out, ch)
			}
		}
	}
	return out, ctx.Err()
}

// NumSub implements pubsub.Peers.
func (b *Bus) NumSub(ctx context.Context, channels [][]byte, shard bool) ([]int64, error) {
	var flags byte
	if shard {
		flags = flagShard
	}
	out := make([]int64, len(channels))
	for _, f := range b.fanout(ctx, kindNumSub, func(dst []byte) []byte {
		dst = append(dst, flags)
		dst = binary.AppendUvarint(dst, uint64(len(channels)))
		for _, ch := range channels {
			dst = appendBytes(dst, ch)
		}
		return dst
	}) {
		d := decoder{b: f.body}
		ns := make([]int64, d.count())
		for i := range ns {
			ns[i] = d.varint()
		}
		if d.done() != nil || len(ns) != len(out) {
			continue
		}
		for i, n := range ns {
			out[i] += n
		}
	}
	return out, ctx.Err()
}

// NumPat implements pubsub.Peers.
func (b *Bus) NumPat(ctx context.Context) (int64, error) {
	var sum int64
	for _, f := range b.fanout(ctx, kindNumPat, func(dst []byte) []byte { return dst }) {
		d := decoder{b: f.body}
		n := d.varint()
		if d.done() == nil {
			sum += n
		}
	}
	return sum, ctx.Err()
}
