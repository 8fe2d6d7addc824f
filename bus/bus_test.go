package bus

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/pubsub"
)

// fakeLocal stands for an instance's Hub: subs[channel] clients receive
// a message on it; every delivered message is recorded in order.
type fakeLocal struct {
	mu        sync.Mutex
	subs      map[string]int64
	pats      int64
	delivered []pubsub.Message
	notify    chan struct{}
}

func newLocal(subs map[string]int64) *fakeLocal {
	return &fakeLocal{subs: subs, notify: make(chan struct{}, 1)}
}

func (l *fakeLocal) Deliver(m pubsub.Message) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.subs[string(m.Channel)]
	if n > 0 {
		l.delivered = append(l.delivered, m)
	}
	select {
	case l.notify <- struct{}{}:
	default:
	}
	return n
}

func (l *fakeLocal) LocalChannels(pattern []byte, shard bool) [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]byte
	for ch, n := range l.subs {
		if n > 0 && (pattern == nil || string(pattern) == ch) {
			out = append(out, []byte(ch))
		}
	}
	return out
}

func (l *fakeLocal) LocalNumSub(channels [][]byte, shard bool) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int64, len(channels))
	for i, ch := range channels {
		out[i] = l.subs[string(ch)]
	}
	return out
}

func (l *fakeLocal) LocalNumPat() int64 { return l.pats }

func (l *fakeLocal) payloads(channel string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.delivered {
		if string(m.Channel) == channel {
			out = append(out, string(m.Payload))
		}
	}
	return out
}

// clock is the test's clock: heartbeats lapse when the test says so. It
// starts at the real time, so that DynamoDB Local's TTL does not collect
// the members' items.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}
func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// stores are the stores the bus's tests run on.
func stores() map[string]func(t *testing.T) dynastore.Store {
	return map[string]func(t *testing.T) dynastore.Store{
		"memory":   func(*testing.T) dynastore.Store { return memory.New(memory.Options{}) },
		"dynamodb": func(t *testing.T) dynastore.Store { return dynamotest.NewStore(t, dynamo.Config{}) },
	}
}

var testSecret = SecretFromPassword("s3cret")

// testConfig is a bus on the test's clock; startBus leaves its heartbeats
// to the test (beat).
func testConfig(c *clock) Config {
	return Config{
		Listen:      "127.0.0.1:0",
		Secret:      testSecret,
		Heartbeat:   10 * time.Second,
		Expiry:      30 * time.Second,
		PeerTimeout: 2 * time.Second,
		Now:         c.now,
	}
}

func startBus(t *testing.T, cfg Config, st dynastore.Store, l pubsub.Local) *Bus {
	t.Helper()
	b, err := New(cfg, st, l)
	require.NoError(t, err)
	b.manual = true
	require.NoError(t, b.Start(context.Background()))
	t.Cleanup(func() { b.Close() })
	return b
}

// connected waits until b has a live connection to each of ids and to no
// one else.
func connected(t *testing.T, b *Bus, ids ...ID) {
	t.Helper()
	want := append([]ID(nil), ids...)
	sort.Slice(want, func(i, j int) bool { return string(want[i][:]) < string(want[j][:]) })
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		var got []ID
		for id, p := range b.peers {
			p.mu.Lock()
			up := p.l != nil
			p.mu.Unlock()
			if !up {
				return false
			}
			got = append(got, id)
		}
		sort.Slice(got, func(i, j int) bool { return string(got[i][:]) < string(got[j][:]) })
		return fmt.Sprint(got) == fmt.Sprint(want)
	}, 10*time.Second, 5*time.Millisecond, "%v should be connected to exactly %v", b.id, ids)
}

// reaches waits until b has a live connection to id.
func reaches(t *testing.T, b *Bus, id ID) {
	t.Helper()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		p := b.peers[id]
		b.mu.Unlock()
		if p == nil {
			return false
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.l != nil
	}, 10*time.Second, 5*time.Millisecond, "%v should reach %v", b.id, id)
}

func memberIDs(ms []Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID.String())
	}
	sort.Strings(out)
	return out
}

func ids(bs ...*Bus) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.id.String())
	}
	sort.Strings(out)
	return out
}

func beat(t *testing.T, bs ...*Bus) {
	t.Helper()
	for _, b := range bs {
		require.NoError(t, b.beat(context.Background()))
	}
}

func testMessage(channel, payload string) pubsub.Message {
	return pubsub.Message{Channel: []byte(channel), Payload: []byte(payload)}
}

// TestCluster: three buses on one store find each other, a publish through
// any of them reaches all three and the counts add up; one is killed while
// a publisher runs (the others keep delivering, in order) and restarted at
// the same address (reached at once; its old self is dropped once its
// heartbeat lapses); a graceful stop is seen at the next read.
func TestCluster(t *testing.T) {
	for name, mk := range stores() {
		t.Run(name, func(t *testing.T) {
			st := mk(t)
			clk := newClock()
			ls := []*fakeLocal{
				newLocal(map[string]int64{"news": 1}),
				newLocal(map[string]int64{"news": 2, "sport": 1}),
				newLocal(map[string]int64{"news": 3}),
			}
			var bs []*Bus
			for _, l := range ls {
				bs = append(bs, startBus(t, testConfig(clk), st, l))
			}
			beat(t, bs...)
			for i, b := range bs {
				var others []ID
				for j, o := range bs {
					if j != i {
						others = append(others, o.id)
					}
				}
				connected(t, b, others...)
			}
			ctx := context.Background()

			// Each instance adds its own clients: Peers cover the others.
			for i, b := range bs {
				n, err := b.Publish(ctx, pubsub.Message{Channel: []byte("news"), Payload: []byte(fmt.Sprint("from ", i))})
				require.NoError(t, err)
				require.Equal(t, int64(6)-ls[i].subs["news"], n, "publish through %d", i)
			}
			for i, l := range ls {
				var want []string
				for j := range bs {
					if j != i {
						want = append(want, fmt.Sprint("from ", j))
					}
				}
				require.Equal(t, want, l.payloads("news"), "instance %d", i)
			}
			n, err := bs[0].Publish(ctx, pubsub.Message{Channel: []byte("nobody"), Payload: []byte("x")})
			require.NoError(t, err)
			require.Zero(t, n)

			chs, err := bs[0].Channels(ctx, nil, false)
			require.NoError(t, err)
			require.ElementsMatch(t, [][]byte{[]byte("news"), []byte("sport")}, chs, "no duplicates")
			chs, err = bs[1].Channels(ctx, []byte("sport"), false)
			require.NoError(t, err)
			require.Empty(t, chs, "only the others' channels")
			subs, err := bs[0].NumSub(ctx, [][]byte{[]byte("news"), []byte("sport"), []byte("none")}, false)
			require.NoError(t, err)
			require.Equal(t, []int64{5, 1, 0}, subs)
			ls[1].pats, ls[2].pats = 2, 5
			pats, err := bs[0].NumPat(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(7), pats)

			// Kill the third while the first publishes: the second gets every
			// message, in order; the publisher never fails.
			stopPub := make(chan struct{})
			pubDone := make(chan int)
			go func() {
				sent := 0
				for {
					select {
					case <-stopPub:
						pubDone <- sent
						return
					default:
					}
					_, err := bs[0].Publish(ctx, pubsub.Message{Channel: []byte("sport"), Payload: []byte(fmt.Sprint(sent))})
					if err != nil {
						panic(err)
					}
					sent++
				}
			}()
			for len(ls[1].payloads("sport")) < 10 {
				<-ls[1].notify
			}
			bs[2].shutdown(false)
			for len(ls[1].payloads("sport")) < 20 {
				<-ls[1].notify
			}
			close(stopPub)
			sent := <-pubDone
			var want []string
			for i := 0; i < sent; i++ {
				want = append(want, fmt.Sprint(i))
			}
			require.Equal(t, want, ls[1].payloads("sport"))

			// Its item is still there until its heartbeat lapses.
			beat(t, bs[0], bs[1])
			require.Equal(t, ids(bs[1], bs[2]), memberIDs(bs[0].Members()))
			n, err = bs[0].Publish(ctx, pubsub.Message{Channel: []byte("news"), Payload: []byte("after kill")})
			require.NoError(t, err)
			require.Equal(t, int64(2), n, "the dead one counts 0")
			// It restarts at the same address, a new member: reached at once,
			// while its old self stays listed (and unreachable: the listener
			// there is not the member the old entry names) until it lapses.
			restart := testConfig(clk)
			restart.Listen = bs[2].Addr()
			l4 := newLocal(map[string]int64{"news": 4})
			b4 := startBus(t, restart, st, l4)
			reaches(t, b4, bs[0].id)
			reaches(t, b4, bs[1].id)
			reaches(t, bs[0], b4.id)
			n, err = bs[0].Publish(ctx, pubsub.Message{Channel: []byte("news"), Payload: []byte("welcome")})
			require.NoError(t, err)
			require.Equal(t, int64(6), n)
			require.Equal(t, []string{"welcome"}, l4.payloads("news"))
			require.Equal(t, ids(bs[1], bs[2], b4), memberIDs(bs[0].Members()))

			// Renewed twice over the expiry, the live ones outlive it.
			all := []*Bus{bs[0], bs[1], b4}
			clk.advance(20 * time.Second)
			beat(t, all...)
			require.Equal(t, ids(bs[1], bs[2], b4), memberIDs(bs[0].Members()))
			clk.advance(20 * time.Second)
			beat(t, all...)
			require.Equal(t, ids(bs[1], b4), memberIDs(bs[0].Members()))
			require.Equal(t, ids(bs[0], b4), memberIDs(bs[1].Members()))
			require.Equal(t, ids(bs[0], bs[1]), memberIDs(b4.Members()))

			// A graceful stop deletes the item: gone at the next read.
			require.NoError(t, b4.Close())
			beat(t, bs[0])
			require.Equal(t, ids(bs[1]), memberIDs(bs[0].Members()))
		})
	}
}

// TestHungPeer: a member that accepts connections but never answers costs
// a publisher one peer timeout, counted 0, and not the next publish.
func TestHungPeer(t *testing.T) {
	st := memory.New(memory.Options{})
	clk := newClock()
	cfg := testConfig(clk)
	// Long enough that a live peer on a loaded test machine answers in time.
	cfg.PeerTimeout = time.Second
	la, lb := newLocal(map[string]int64{"c": 1}), newLocal(map[string]int64{"c": 2})
	a := startBus(t, cfg, st, la)
	b := startBus(t, cfg, st, lb)

	// The hung member completes the handshake, then reads and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	hung := newID()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				if _, _, err := acceptHandshake(c, r, testSecret, hung); err != nil {
					return
				}
				for {
					if _, err := readFrame(r); err != nil {
						return
					}
				}
			}()
		}
	}()
	require.NoError(t, announce(context.Background(), st, Member{ID: hung, Addr: ln.Addr().String(), Started: clk.now(), Expiry: clk.now().Add(time.Minute)}))
	beat(t, a, b)
	connected(t, a, b.id, hung)

	a.mu.Lock()
	p := a.peers[hung]
	a.mu.Unlock()
	p.mu.Lock()
	l := p.l
	p.mu.Unlock()

	n, err := a.Publish(context.Background(), pubsub.Message{Channel: []byte("c"), Payload: []byte("1")})
	require.NoError(t, err)
	require.Equal(t, int64(2), n, "the hung peer counts 0")
	// Its connection was dropped: it is not waited for again until it is back.
	select {
	case <-l.dead:
	default:
		t.Fatal("the hung peer's connection should be closed")
	}
	require.Equal(t, []string{"1"}, lb.payloads("c"))
}

// TestRejectsWithoutSecret: a connection that fails the handshake is closed
// before any frame is read, so nothing it sends is delivered; a bus with
// another secret neither reaches nor is reached by the others.
func TestRejectsWithoutSecret(t *testing.T) {
	st := memory.New(memory.Options{})
	clk := newClock()
	la := newLocal(map[string]int64{"c": 1})
	a := startBus(t, testConfig(clk), st, la)

	publish := appendFrame(nil, kindPublish, 1, func(dst []byte) []byte {
		dst = append(dst, 0)
		dst = appendBytes(dst, []byte("c"))
		return appendBytes(dst, []byte("injected"))
	})
	cases := []struct {
		name string
		// hello is what the intruder answers the listener's hello with.
		hello func(ns []byte) []byte
	}{
		{"no handshake, a frame at once", func([]byte) []byte { return publish }},
		{"a handshake with the wrong secret", func(ns []byte) []byte {
			nc, id, addr := nonce(), newID(), []byte("127.0.0.1:1")
			msg := append(append(nc, id[:]...), appendBytes(nil, addr)...)
			msg = append(msg, handshakeMAC(SecretFromPassword("guess"), "c", ns, nc, id[:], addr)...)
			return append(msg, publish...)
		}},
		{"a replayed MAC for another nonce", func(ns []byte) []byte {
			nc, id, addr := nonce(), newID(), []byte("127.0.0.1:1")
			msg := append(append(nc, id[:]...), appendBytes(nil, addr)...)
			msg = append(msg, handshakeMAC(testSecret, "c", nonce(), nc, id[:], addr)...)
			return append(msg, publish...)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := a.rejected.Load()
			c, err := net.Dial("tcp", a.Addr())
			require.NoError(t, err)
			defer c.Close()
			r := bufio.NewReader(c)
			hello := make([]byte, len(magic)+nonceSize)
			_, err = io.ReadFull(r, hello)
			require.NoError(t, err)
			_, _ = c.Write(tc.hello(hello[len(magic):]))
			require.NoError(t, c.(*net.TCPConn).CloseWrite())
			// The listener closes without a word.
			_, err = r.ReadByte()
			require.Error(t, err)
			require.Equal(t, before+1, a.rejected.Load())
			require.Empty(t, la.payloads("c"))
			require.Empty(t, a.Members(), "an intruder is not learned")
		})
	}

	t.Run("a bus with another secret", func(t *testing.T) {
		cfg := testConfig(clk)
		cfg.Secret = SecretFromPassword("other")
		lx := newLocal(map[string]int64{"c": 5})
		x := startBus(t, cfg, st, lx)
		beat(t, a, x)
		n, err := x.Publish(context.Background(), pubsub.Message{Channel: []byte("c"), Payload: []byte("injected")})
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = a.Publish(context.Background(), pubsub.Message{Channel: []byte("c"), Payload: []byte("secret")})
		require.NoError(t, err)
		require.Zero(t, n, "nothing sent to a listener that cannot prove the secret")
		require.Empty(t, la.payloads("c"))
		require.Empty(t, lx.payloads("c"))
	})
}
