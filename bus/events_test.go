package bus

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// fakeEvents stands for an instance's Dispatcher: it records the events
// and the flags it is given.
type fakeEvents struct {
	mu     sync.Mutex
	got    []string
	flags  []events.Class
	notify chan struct{}
}

func newEvents() *fakeEvents { return &fakeEvents{notify: make(chan struct{}, 1)} }

func (f *fakeEvents) Receive(e events.Event) {
	f.mu.Lock()
	f.got = append(f.got, fmt.Sprintf("%d %s %s %s", e.DB, e.Class, e.Name, e.Key))
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

func (f *fakeEvents) ApplyFlags(c events.Class) {
	f.mu.Lock()
	f.flags = append(f.flags, c)
	f.mu.Unlock()
}

func (f *fakeEvents) FlagsGen() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return uint64(len(f.flags))
}

func (f *fakeEvents) ApplyFlagsSince(c events.Class, gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if uint64(len(f.flags)) == gen && (len(f.flags) == 0 || f.flags[len(f.flags)-1] != c) && !(len(f.flags) == 0 && c == 0) {
		f.flags = append(f.flags, c)
	}
}

func (f *fakeEvents) events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func (f *fakeEvents) applied() []events.Class {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]events.Class(nil), f.flags...)
}

// await waits until f received n events and returns them.
func (f *fakeEvents) await(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if got := f.events(); len(got) >= n {
			return got
		}
		select {
		case <-f.notify:
		case <-deadline:
			t.Fatalf("%d events expected, got %v", n, f.events())
		}
	}
}

func keyEvent(name, key string) events.Event {
	return events.Event{DB: 3, Class: events.String, Name: name, Key: []byte(key)}
}

// eventsBus starts a bus whose events go to a fresh fakeEvents.
func eventsBus(t *testing.T, clk *clock, st *memory.Store) (*Bus, *fakeEvents) {
	t.Helper()
	ev := newEvents()
	cfg := testConfig(clk)
	cfg.Events = ev
	return startBus(t, cfg, st, newLocal(nil)), ev
}

// mesh waits until every bus reaches every other.
func mesh(t *testing.T, bs ...*Bus) {
	t.Helper()
	for i, b := range bs {
		var others []ID
		for j, o := range bs {
			if j != i {
				others = append(others, o.id)
			}
		}
		connected(t, b, others...)
	}
}

// wantsFrom waits until b's entry for peer says whether it is interested.
func wantsFrom(t *testing.T, b *Bus, peer ID, want bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		p := b.peerFor(peer)
		return p != nil && p.wants.Load() == want
	}, 10*time.Second, 5*time.Millisecond, "%v should see %v's interest %v", b.id, peer, want)
}

// TestEventsToInterested: an event goes to the peers that declared an
// interest, or to every peer when all is set; a declaration is
// acknowledged before Interest returns, and Anyone reports it; the flags
// are applied by every connected peer before Flags returns.
func TestEventsToInterested(t *testing.T) {
	st := memory.New(memory.Options{})
	clk := newClock()
	b0, e0 := eventsBus(t, clk, st)
	b1, e1 := eventsBus(t, clk, st)
	b2, e2 := eventsBus(t, clk, st)
	beat(t, b0, b1, b2)
	mesh(t, b0, b1, b2)
	ctx := context.Background()

	// Nobody interested: an event not for all goes nowhere. The one for
	// all that follows it on the same links shows it would have arrived
	// by then.
	require.False(t, b0.Anyone())
	b0.Send(keyEvent("set", "nobody"), false)
	b0.Send(keyEvent("set", "all"), true)
	require.Equal(t, []string{"3 $ set all"}, e1.await(t, 1))
	require.Equal(t, []string{"3 $ set all"}, e2.await(t, 1))

	require.NoError(t, b1.Interest(ctx, true))
	for _, b := range []*Bus{b0, b2} {
		require.True(t, b.Anyone(), "acknowledged before Interest returned")
	}
	require.False(t, b1.Anyone(), "its own interest is not a peer's")
	b0.Send(keyEvent("del", "k1"), false)
	b2.Send(keyEvent("del", "k2"), false)
	b0.Send(keyEvent("set", "end"), true)
	// b2's event and b0's travel on two links: either may come first.
	require.ElementsMatch(t, []string{"3 $ set all", "3 $ del k1", "3 $ del k2", "3 $ set end"}, e1.await(t, 4))
	require.Equal(t, []string{"3 $ set all", "3 $ set end"}, e2.await(t, 2), "b2 declared nothing")
	require.Empty(t, e0.events())

	require.NoError(t, b1.Interest(ctx, false))
	require.False(t, b0.Anyone())
	require.False(t, b2.Anyone())

	kea, _ := events.ParseFlags("KEA")
	require.NoError(t, b0.Flags(ctx, kea))
	require.Equal(t, []events.Class{kea}, e1.applied(), "the peer's")
	require.Equal(t, []events.Class{kea}, e2.applied())
	require.Empty(t, e0.applied(), "the sender applies its own (events.Dispatcher.SetFlags)")
}

// TestInterestAcrossLinks: the interest survives what makes links anew. A
// peer that dropped its entry for the interested instance and found it
// again learns its interest from the listener's first frame; an instance
// that declared before it linked up (a restart) tells each peer as the
// link opens; a newcomer learns the interest of those already there; and a
// member that is dropped takes its interest with it.
func TestInterestAcrossLinks(t *testing.T) {
	st := memory.New(memory.Options{})
	clk := newClock()
	ctx := context.Background()
	b0, _ := eventsBus(t, clk, st)
	b1, e1 := eventsBus(t, clk, st)
	beat(t, b0, b1)
	mesh(t, b0, b1)
	require.NoError(t, b1.Interest(ctx, true))
	require.True(t, b0.Anyone())

	// b0 forgets b1 (as when a heartbeat read missed it) and finds it again.
	b0.mu.Lock()
	b0.peers[b1.id].close()
	delete(b0.peers, b1.id)
	b0.recountLocked()
	b0.mu.Unlock()
	require.False(t, b0.Anyone(), "the dropped entry took its interest")
	beat(t, b0)
	reaches(t, b0, b1.id)
	wantsFrom(t, b0, b1.id, true)
	b0.Send(keyEvent("incr", "after-relink"), false)
	require.Equal(t, []string{"3 $ incr after-relink"}, e1.await(t, 1))

	// A newcomer learns b1's interest from its first links.
	b2, _ := eventsBus(t, clk, st)
	mesh(t, b0, b1, b2)
	wantsFrom(t, b2, b1.id, true)
	b2.Send(keyEvent("set", "from-newcomer"), false)
	require.Equal(t, []string{"3 $ incr after-relink", "3 $ set from-newcomer"}, e1.await(t, 2))

	// An instance that restarts declares before its links are up: each
	// peer learns it as the link opens.
	ev := newEvents()
	cfg := testConfig(clk)
	cfg.Events = ev
	b3, err := New(cfg, st, newLocal(nil))
	require.NoError(t, err)
	b3.manual = true
	t.Cleanup(func() { b3.Close() })
	require.NoError(t, b3.Interest(ctx, true), "no peer yet: nothing to wait for")
	require.NoError(t, b3.Start(ctx))
	mesh(t, b0, b1, b2, b3)
	for _, b := range []*Bus{b0, b1, b2} {
		wantsFrom(t, b, b3.id, true)
	}
	b0.Send(keyEvent("set", "to-restarted"), false)
	require.Equal(t, []string{"3 $ set to-restarted"}, ev.await(t, 1))

	// A member that dies is dropped once its heartbeat lapses, and its
	// interest with it.
	b1.Kill()
	b3.Kill()
	clk.advance(40 * time.Second)
	beat(t, b0, b2)
	require.False(t, b0.Anyone())
	require.False(t, b2.Anyone())
}

// TestTableSettings: the table's notify-keyspace-events, read with the
// members, is applied at Start (before the instance serves) and by a
// heartbeat that finds this instance's differ, unless they changed while
// the read ran: then the read may predate the CONFIG SET that changed them.
func TestTableSettings(t *testing.T) {
	st := memory.New(memory.Options{})
	clk := newClock()
	scope := model.StoreScope(context.Background(), st)
	require.NoError(t, model.SetKeyspaceEvents(scope, "Kx"))
	kx, _ := events.ParseFlags("Kx")
	b0, e0 := eventsBus(t, clk, st)
	require.Equal(t, []events.Class{kx}, e0.applied(), "applied at Start")

	beat(t, b0)
	require.Equal(t, []events.Class{kx}, e0.applied(), "the same: not applied again")
	// As two crossing CONFIG SETs may leave it: settled on the table's.
	e0.ApplyFlags(0)
	beat(t, b0)
	require.Equal(t, []events.Class{kx, 0, kx}, e0.applied())

	require.NoError(t, model.SetKeyspaceEvents(scope, "Eg"))
	eg, _ := events.ParseFlags("Eg")
	beat(t, b0)
	require.Equal(t, []events.Class{kx, 0, kx, eg}, e0.applied(), "changed in the table")

	// A read during which the flags changed leaves them alone.
	b0.applySettings(&model.Settings{KeyspaceEvents: "Kx"}, 0)
	require.Equal(t, []events.Class{kx, 0, kx, eg}, e0.applied())

	ms, settings, err := members(context.Background(), st, clk.now())
	require.NoError(t, err)
	require.Len(t, ms, 1, "the settings item is no member")
	require.Equal(t, &model.Settings{KeyspaceEvents: "Eg"}, settings)
}

// TestRefusesOtherVersion: a peer speaking version 1 of the protocol
// (without key events) is refused at the handshake, not linked and then
// dropped over the first frame it does not know.
func TestRefusesOtherVersion(t *testing.T) {
	st := memory.New(memory.Options{})
	clk := newClock()
	b0, _ := eventsBus(t, clk, st)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	old := newID()
	accepted := make(chan struct{}, 16)
	// A version 1 listener: the handshake as it was, under its magic.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			go func() {
				defer c.Close()
				ns := nonce()
				_, _ = c.Write(append([]byte("RDMB\x01"), ns...))
				r := bufio.NewReader(c)
				nc, id := make([]byte, nonceSize), make([]byte, len(ID{}))
				if _, err := io.ReadFull(r, nc); err != nil {
					return
				}
				if _, err := io.ReadFull(r, id); err != nil {
					return
				}
				n, err := binary.ReadUvarint(r)
				if err != nil || n > 1024 {
					return
				}
				if _, err := io.ReadFull(r, make([]byte, int(n)+macSize)); err != nil {
					return
				}
				_, _ = c.Write(append(old[:], handshakeMAC(testSecret, "s", ns, nc, old[:])...))
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	require.NoError(t, announce(context.Background(), st, Member{ID: old, Addr: ln.Addr().String(), Started: clk.now(), Expiry: clk.now().Add(time.Minute)}))
	beat(t, b0)
	<-accepted
	require.Eventually(t, func() bool {
		p := b0.peerFor(old)
		return p != nil && p.unreachable.Load()
	}, 10*time.Second, time.Millisecond, "the old version's listener is refused")
	require.True(t, b0.Linked(), "a refused member is not waited for")
}

// TestHungPeerEvents: a peer that stops reading holds an event's sender at
// most one peer timeout, once: its connection is dropped, so the next
// events go nowhere at once instead of each waiting.
func TestHungPeerEvents(t *testing.T) {
	st := memory.New(memory.Options{})
	clk := newClock()
	cfg := testConfig(clk)
	cfg.PeerTimeout = 10 * time.Millisecond
	a := startBus(t, cfg, st, newLocal(nil))

	// The hung member completes the handshake, then reads nothing.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	hung := newID()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, _, err := acceptHandshake(c, bufio.NewReader(c), testSecret, hung); err != nil {
					return
				}
				<-stop
			}()
		}
	}()
	require.NoError(t, announce(context.Background(), st, Member{ID: hung, Addr: ln.Addr().String(), Started: clk.now(), Expiry: clk.now().Add(time.Minute)}))
	beat(t, a)
	reaches(t, a, hung)
	p := a.peerFor(hung)
	p.mu.Lock()
	l := p.l
	p.mu.Unlock()

	// Far more than the socket buffers and the queue hold.
	e := events.Event{Class: events.String, Name: "set", Key: make([]byte, 256<<10)}
	for i := 0; i < 4096; i++ {
		a.Send(e, true)
		select {
		case <-l.dead:
			return
		default:
		}
	}
	t.Fatal("the hung peer's connection should be closed")
}
