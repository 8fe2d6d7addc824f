package integration

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/compat"
	"github.com/redamo/redamo/internal/testserver"
)

// trackingConn is a RESP3 connection that tracks, and the cache it keeps
// by the invalidations it is pushed.
type trackingConn struct {
	t     *testing.T
	c     *compat.Conn
	cache map[string]string
	// pushes counts the invalidations read.
	pushes int
}

var bulkHeader = regexp.MustCompile(`\$(\d+)\r\n`)

func dialTracking(t *testing.T, addr string, opts ...string) *trackingConn {
	t.Helper()
	c, err := compat.Dial(addr, 20*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	tc := &trackingConn{t: t, c: c, cache: map[string]string{}}
	tc.do("HELLO", "3")
	require.Equal(t, "+OK\r\n", tc.do(append([]string{"CLIENT", "TRACKING", "on"}, opts...)...))
	return tc
}

// handle applies one push: an invalidation drops its keys (all of them
// for a null).
func (tc *trackingConn) handle(s string) {
	tc.t.Helper()
	const head = ">2\r\n$10\r\ninvalidate\r\n"
	require.True(tc.t, strings.HasPrefix(s, head), "push %q", s)
	tc.pushes++
	body := s[len(head):]
	if body == "_\r\n" {
		clear(tc.cache)
		return
	}
	for _, m := range bulkHeader.FindAllStringSubmatchIndex(body, -1) {
		n, _ := strconv.Atoi(body[m[2]:m[3]])
		delete(tc.cache, body[m[1]:m[1]+n])
	}
}

// do sends a command and returns its reply, applying the pushes that
// come before it.
func (tc *trackingConn) do(args ...string) string {
	tc.t.Helper()
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	require.NoError(tc.t, tc.c.Send(bs))
	for {
		got, err := tc.c.ReadRaw()
		require.NoError(tc.t, err)
		s := string(got)
		if !strings.HasPrefix(s, ">") {
			return s
		}
		tc.handle(s)
	}
}

// next reads the next push, which must come without a command.
func (tc *trackingConn) next() string {
	tc.t.Helper()
	got, err := tc.c.ReadRaw()
	require.NoError(tc.t, err)
	return string(got)
}

// TestTrackingAcrossBus: two instances on one table linked by their bus.
// A client of the first is told of the changes made through the second
// (a key it read; a flush; its BCAST prefixes), and a cache kept by
// those invalidations holds the stored values once the writes through the
// other instance are over and their invalidations arrived.
func TestTrackingAcrossBus(t *testing.T) {
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) {
			// Servers started on one backend are instances of one table,
			// linked by their bus.
			a, other := b.Start(t), b.Start(t)
			tracker := dialTracking(t, a.Addr)
			// The other instance hears of the interest once linked.
			require.Eventually(t, other.Bus.Anyone, 30*time.Second, 10*time.Millisecond,
				"the other instance never learned that this one tracks")
			writer, err := compat.Dial(other.Addr, 20*time.Second)
			require.NoError(t, err)
			t.Cleanup(func() { _ = writer.Close() })
			write := func(want string, args ...string) {
				t.Helper()
				got, err := writer.DoStrings(args...)
				require.NoError(t, err)
				require.Equal(t, want, string(got), "%v", args)
			}

			require.Equal(t, "_\r\n", tracker.do("GET", "k"))
			write("+OK\r\n", "SET", "k", "1")
			require.Equal(t, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n", tracker.next())
			// Read again once the invalidation is in: a change is told once
			// to a client that read the key since the change before it (a
			// change whose event is still on its way when the client reads
			// may be told after the read too: events travel after replies).
			require.Equal(t, "$1\r\n1\r\n", tracker.do("GET", "k"))
			write("+OK\r\n", "FLUSHALL")
			require.Equal(t, ">2\r\n$10\r\ninvalidate\r\n_\r\n", tracker.next())

			bcast := dialTracking(t, a.Addr, "BCAST", "PREFIX", "user:")
			write("+OK\r\n", "MSET", "user:1", "a", "other", "b")
			require.Equal(t, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\nuser:1\r\n", bcast.next())

			cacheAcross(t, tracker, other.Addr)
		})
	}
}

// cacheAcross reads keys through tracker, caching what it read, while
// writers of another instance overwrite them; then it waits for the
// invalidations in flight and checks every cached value.
func cacheAcross(t *testing.T, tracker *trackingConn, writerAddr string) {
	keys := []string{"c0", "c1", "c2", "c3"}
	clear(tracker.cache)
	stop := compat.Overwrite(t, writerAddr, keys, 2)
	for i := range 1000 {
		k := keys[i%len(keys)]
		if _, ok := tracker.cache[k]; ok {
			tracker.do("PING")
			continue
		}
		tracker.cache[k] = tracker.do("GET", k)
	}
	stop()
	// Invalidations travel after the writers' replies: a cached value
	// that is not the stored one must be dropped once they arrived.
	for _, k := range keys {
		stored := tracker.do("GET", k)
		require.Eventually(t, func() bool {
			tracker.do("PING")
			v, ok := tracker.cache[k]
			return !ok || v == stored
		}, 30*time.Second, 10*time.Millisecond, "%s cached stale while %s is stored", k, stored)
	}
	t.Logf("%d invalidations", tracker.pushes)
}

// TestClusterTracking: two redamo processes on one DynamoDB table. A
// client tracking through one is told of the writes made through the
// other, which the bus brings.
func TestClusterTracking(t *testing.T) {
	cs := cluster(t, 2)
	ctx := context.Background()
	// Linked once a subscriber of one instance is counted by the other.
	sub := cs[0].Subscribe(ctx, "link")
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n, err := cs[1].PubSubNumSub(ctx, "link").Result()
		return err == nil && n["link"] == 1
	}, 30*time.Second, 50*time.Millisecond, "the instances never linked")

	// The interest is acknowledged by the linked instance before the reply.
	tracker := dialTracking(t, cs[0].Options().Addr)
	require.Equal(t, "_\r\n", tracker.do("GET", "k"))
	require.NoError(t, cs[1].Set(ctx, "k", "1", 0).Err())
	require.Equal(t, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n", tracker.next())
	require.Equal(t, "$1\r\n1\r\n", tracker.do("GET", "k"))
	require.NoError(t, cs[1].FlushAll(ctx).Err())
	require.Equal(t, ">2\r\n$10\r\ninvalidate\r\n_\r\n", tracker.next())
}
