// Package events carries what write commands report about the keys they
// change — Redis's keyspace events — to everything in the cluster that
// consumes them: keyspace notifications (the __keyspace@<db>__ and
// __keyevent@<db>__ channels, as notify-keyspace-events selects), client
// tracking's invalidations, and the shell's watch.
//
// A command reports an event once its write has taken effect
// (commands.Ctx.Notify); the Dispatcher hands it to this instance's
// consumers and, through Peers, to the other instances that want it. An
// event costs no store request: it travels instance to instance.
package events

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
)

// Class is a set of Redis's notify-keyspace-events flags (server.h's
// NOTIFY_*): what kind of event, and how it is published.
type Class uint32

const (
	Keyspace Class = 1 << iota // K: published on __keyspace@<db>__:<key>
	Keyevent                   // E: published on __keyevent@<db>__:<event>
	Generic                    // g: DEL, EXPIRE, RENAME, ...
	String                     // $
	List                       // l
	Set                        // s
	Hash                       // h
	ZSet                       // z
	Expired                    // x: a key whose TTL passed was removed
	Evicted                    // e: never raised (redamo evicts nothing)
	Stream                     // t
	KeyMiss                    // m: a read found no key (not in A)
	Module                     // d: never raised (no modules)
	New                        // n: a key was created (not in A)

	// All is the A flag: every class but KeyMiss and New.
	All = Generic | String | List | Set | Hash | ZSet | Expired | Evicted | Stream | Module
)

// flagChars maps the flag characters to classes, in the order Redis
// prints them: the classes (n only when A is not printed), then K, E, m.
var flagChars = []struct {
	c     byte
	class Class
}{
	{'g', Generic}, {'$', String}, {'l', List}, {'s', Set}, {'h', Hash}, {'z', ZSet},
	{'x', Expired}, {'e', Evicted}, {'t', Stream}, {'d', Module}, {'n', New},
	{'K', Keyspace}, {'E', Keyevent}, {'m', KeyMiss},
}

// ParseFlags reads a notify-keyspace-events value; ok is false when it
// holds a character that is not a flag.
func ParseFlags(s string) (c Class, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == 'A' {
			c |= All
			continue
		}
		found := false
		for _, f := range flagChars {
			if f.c == s[i] {
				c |= f.class
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	return c, true
}

// String is the value CONFIG GET notify-keyspace-events answers, as
// Redis's keyspaceEventsFlagsToString prints it.
func (c Class) String() string {
	var b []byte
	all := c&All == All
	if all {
		b = append(b, 'A')
	}
	for _, f := range flagChars {
		if c&f.class == 0 || (all && (All|New)&f.class != 0) {
			continue
		}
		b = append(b, f.c)
	}
	return string(b)
}

// Published reports whether an event of class ev is published as a
// keyspace notification under flags c: its class is selected, and so is
// at least one of K and E.
func (c Class) Published(ev Class) bool {
	return c&ev != 0 && c&(Keyspace|Keyevent) != 0
}

// Event is one change to one key, as Redis's notifyKeyspaceEvent reports
// it.
type Event struct {
	DB    int
	Class Class
	// Name is Redis's event name ("set", "del", "lpush", "expired", ...).
	Name string
	Key  []byte
	// Origin is the connection that made the change, on the instance it
	// was made through (client tracking's NOLOOP); nil elsewhere, and for
	// a change no client made (an expiry). It never leaves the process.
	Origin any
}

// Messages returns the pub/sub messages the event is published as under
// flags: channel and payload pairs, __keyspace first, as Redis sends them.
func (e Event) Messages(flags Class) (channels, payloads [][]byte) {
	if !flags.Published(e.Class) {
		return nil, nil
	}
	db := strconv.Itoa(e.DB)
	if flags&Keyspace != 0 {
		ch := make([]byte, 0, len("__keyspace@__:")+len(db)+len(e.Key))
		ch = append(append(append(append(ch, "__keyspace@"...), db...), "__:"...), e.Key...)
		channels, payloads = append(channels, ch), append(payloads, []byte(e.Name))
	}
	if flags&Keyevent != 0 {
		ch := make([]byte, 0, len("__keyevent@__:")+len(db)+len(e.Name))
		ch = append(append(append(append(ch, "__keyevent@"...), db...), "__:"...), e.Name...)
		channels, payloads = append(channels, ch), append(payloads, e.Key)
	}
	return channels, payloads
}

// Consumer is a local consumer of every key event (client tracking, a
// watch): it is told about the writes of every instance. KeyEvent must not
// block.
type Consumer interface {
	KeyEvent(e Event)
}

// Publisher delivers a keyspace notification to this instance's
// subscribers (pubsub.Hub's Deliver, whose peers are not involved: each
// instance publishes the events it receives itself).
type Publisher interface {
	DeliverLocal(channel, payload []byte)
}

// OriginPublisher is a Publisher that can tell the connection whose
// command raised an event (Event.Origin): a client subscribed on that same
// connection (RESP3) gets the notification before the command's reply, as
// Redis sends it.
type OriginPublisher interface {
	DeliverFrom(origin any, channel, payload []byte)
}

// Peers is how a Dispatcher reaches the other instances (package bus
// implements it).
type Peers interface {
	// Send hands e to the other instances that want it: every one when
	// all is set (keyspace notifications are on), else those that
	// declared an interest. It does not wait for them; delivery is at most
	// once, and in order per sending instance.
	Send(e Event, all bool)
	// Interest tells the other instances whether this one wants every key
	// event (it has consumers), and returns once the connected ones
	// acknowledged, so that no write they acknowledge after goes
	// unreported.
	Interest(ctx context.Context, on bool) error
	// Anyone reports whether some other instance declared an interest.
	Anyone() bool
	// Flags tells the other instances the table's new notify-keyspace-
	// events, and returns once the connected ones applied it.
	Flags(ctx context.Context, c Class) error
}

// Dispatcher is one process's end of the key events: the table's
// notify-keyspace-events as this instance knows it, its consumers, and its
// peers. The zero value serves this process alone, with notifications off.
type Dispatcher struct {
	flags atomic.Uint32
	// flagsMu orders the changes of flags; flagsGen counts them.
	flagsMu  sync.Mutex
	flagsGen uint64
	// consumers counts the registered consumers, read on every write.
	consumers atomic.Int32

	mu   sync.RWMutex
	cons []Consumer
	pub  Publisher
	peer Peers

	// declaring serializes interest declarations, each of which tells the
	// peers whether consumers exist as it is made: a removal's "off" and
	// an addition's "on" that cross cannot reach the peers in the wrong
	// order and leave a consumer unfed.
	declaring sync.Mutex
}

// SetPublisher plugs in where notifications go on this instance (the
// pub/sub hub); set it before serving clients.
func (d *Dispatcher) SetPublisher(p Publisher) {
	d.mu.Lock()
	d.pub = p
	d.mu.Unlock()
}

// SetPeers plugs in the other instances (nil: this process alone); set it
// before serving clients.
func (d *Dispatcher) SetPeers(p Peers) {
	d.mu.Lock()
	d.peer = p
	d.mu.Unlock()
}

func (d *Dispatcher) peers() Peers {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.peer
}

// Flags returns the notify-keyspace-events this instance applies.
func (d *Dispatcher) Flags() Class { return Class(d.flags.Load()) }

// ApplyFlags makes c this instance's notify-keyspace-events (the table's
// setting, as told by a peer or set here).
func (d *Dispatcher) ApplyFlags(c Class) {
	d.flagsMu.Lock()
	defer d.flagsMu.Unlock()
	d.flags.Store(uint32(c))
	d.flagsGen++
}

// FlagsGen returns a number that every change of the flags changes, for
// ApplyFlagsSince.
func (d *Dispatcher) FlagsGen() uint64 {
	d.flagsMu.Lock()
	defer d.flagsMu.Unlock()
	return d.flagsGen
}

// ApplyFlagsSince applies c, the table's setting as a read of the table
// found it, unless the flags changed since FlagsGen returned gen as the
// read began: a CONFIG SET here or a peer's word may be newer than what
// the read saw, even when the flags went back to the value they had then.
func (d *Dispatcher) ApplyFlagsSince(c Class, gen uint64) {
	d.flagsMu.Lock()
	defer d.flagsMu.Unlock()
	if d.flagsGen != gen || d.Flags() == c {
		return
	}
	d.flags.Store(uint32(c))
	d.flagsGen++
}

// SetFlags changes the table's notify-keyspace-events: this instance
// applies it, and the connected peers have when it returns. Storing the
// setting in the table is the caller's.
func (d *Dispatcher) SetFlags(ctx context.Context, c Class) error {
	d.ApplyFlags(c)
	if p := d.peers(); p != nil {
		return p.Flags(ctx, c)
	}
	return nil
}

// Wanted reports whether an event of class c goes anywhere: a command
// checks it before building an event, so that a write costs nothing more
// while nobody listens.
func (d *Dispatcher) Wanted(c Class) bool {
	if d == nil {
		return false
	}
	if d.Flags().Published(c) {
		return true
	}
	if c == KeyMiss || c == New {
		// Consumers are not told of misses, and "new" always comes with
		// another event of the same key: a write that would learn it only
		// for them need not.
		return false
	}
	if d.consumers.Load() > 0 {
		return true
	}
	p := d.peers()
	return p != nil && p.Anyone()
}

// Emit reports e, a change made through this instance: to this instance's
// subscribers and consumers, then to the other instances.
func (d *Dispatcher) Emit(e Event) {
	if d == nil {
		return
	}
	d.Receive(e)
	if p := d.peers(); p != nil {
		p.Send(e, d.Flags().Published(e.Class))
	}
}

// Receive reports e to this instance alone: an event from another
// instance, or this instance's own.
func (d *Dispatcher) Receive(e Event) {
	flags := d.Flags()
	d.mu.RLock()
	pub, cons := d.pub, d.cons
	d.mu.RUnlock()
	if pub != nil {
		chs, payloads := e.Messages(flags)
		op, byOrigin := pub.(OriginPublisher)
		for i := range chs {
			if byOrigin && e.Origin != nil {
				op.DeliverFrom(e.Origin, chs[i], payloads[i])
			} else {
				pub.DeliverLocal(chs[i], payloads[i])
			}
		}
	}
	if e.Class == KeyMiss {
		return
	}
	for _, c := range cons {
		c.KeyEvent(e)
	}
}

// declare tells the peers whether this instance has consumers now.
func (d *Dispatcher) declare(ctx context.Context) error {
	p := d.peers()
	if p == nil {
		return nil
	}
	d.declaring.Lock()
	defer d.declaring.Unlock()
	return p.Interest(ctx, d.consumers.Load() > 0)
}

// AddConsumer registers c for every key event of the cluster until the
// returned function is called. It declares this instance's interest to
// the peers and returns once they acknowledged it; the removal of the last
// consumer withdraws it.
func (d *Dispatcher) AddConsumer(ctx context.Context, c Consumer) (remove func(), err error) {
	d.mu.Lock()
	d.cons = append(d.cons[:len(d.cons):len(d.cons)], c)
	d.consumers.Add(1)
	d.mu.Unlock()
	// Every addition declares, not only the first: an addition that came
	// while the first one's declaration was under way must not return
	// before the peers acknowledged it either.
	err = d.declare(ctx)
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			for i, have := range d.cons {
				if have == c {
					d.cons = append(d.cons[:i:i], d.cons[i+1:]...)
					break
				}
			}
			last := d.consumers.Add(-1) == 0
			d.mu.Unlock()
			if last {
				_ = d.declare(context.Background()) // peers that miss it only send more than needed
			}
		})
	}, err
}
