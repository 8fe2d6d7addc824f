package integration

import (
	"bufio"
	"context"
	enc "encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testproc"
	"github.com/redamo/redamo/internal/testserver"
)

// keyspaceSub subscribes through c to the keyspace notifications of db 0's
// keys under prefix.
func keyspaceSub(t *testing.T, c *redis.Client, prefix string) *redis.PubSub {
	t.Helper()
	ps := c.PSubscribe(context.Background(), "__keyspace@0__:"+prefix+"*")
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(context.Background())
	require.NoError(t, err)
	return ps
}

// linked waits until a pattern subscription on each of n instances is
// counted through every client: each instance then reaches every other.
func linked(t *testing.T, cs []*redis.Client, n int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, c := range cs {
			if got, err := c.PubSubNumPat(context.Background()).Result(); err != nil || got != n {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "the instances never saw each other's subscribers")
}

// nextEvent returns the next keyspace notification ps receives, as
// "key event".
func nextEvent(t *testing.T, ps *redis.PubSub, who string) string {
	t.Helper()
	select {
	case m := <-ps.Channel():
		return m.Channel[len("__keyspace@0__:"):] + " " + m.Payload
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no keyspace notification came", who)
		return ""
	}
}

// flowResult is what a flowWriter did: how many keys it set, and the
// error that stopped it early.
type flowResult struct {
	n   int
	err error
}

// flowWriter sets kflow0, kflow1, ... through c, one at a time, until stop
// is closed or a write fails.
func flowWriter(c *redis.Client, stop <-chan struct{}) <-chan flowResult {
	out := make(chan flowResult, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				out <- flowResult{n: i}
				return
			default:
			}
			if err := c.Set(context.Background(), fmt.Sprint("kflow", i), "v", 0).Err(); err != nil {
				out <- flowResult{n: i, err: err}
				return
			}
		}
	}()
	return out
}

// TestClusterKeyEvents: three redamo processes on one table. CONFIG SET
// notify-keyspace-events through one holds on the others before it
// replies; a subscriber on each instance receives the keyspace events of
// the writes made through every instance, each instance's in order. An
// instance killed while events flow does not stop them reaching the
// others, in order, and one started in its place applies the table's
// setting at start and receives them again.
func TestClusterKeyEvents(t *testing.T) {
	ep := endpoint(t)
	table := fmt.Sprintf("it_%d_%d", time.Now().UnixNano(), rand.IntN(1e6))
	ctx := context.Background()
	nodes := make([]*instance, 3)
	cs := make([]*redis.Client, 3)
	for i := range nodes {
		nodes[i] = &instance{t: t, args: []string{"--store", "dynamodb", "--endpoint", ep,
			"--region", "us-east-1", "--table", table, "--create-table"}}
		cs[i] = nodes[i].start()
	}
	subs := make([]*redis.PubSub, 3)
	for i, c := range cs {
		subs[i] = keyspaceSub(t, c, "k")
	}
	linked(t, cs, 3)

	require.NoError(t, cs[0].ConfigSet(ctx, "notify-keyspace-events", "KEA").Err())
	for i, c := range cs {
		require.Equal(t, map[string]string{"notify-keyspace-events": "AKE"}, c.ConfigGet(ctx, "notify-keyspace-events").Val(), "instance %d", i)
	}

	// Writes through each instance in turn: every subscriber gets each
	// once; the ones made through one instance arrive in their order.
	const n = 30
	for i := range n {
		c := cs[i%3]
		key := fmt.Sprint("k", i)
		require.NoError(t, c.Set(ctx, key, "v", 0).Err())
		if i%5 == 0 {
			require.NoError(t, c.Del(ctx, key).Err())
		}
	}
	for si, ps := range subs {
		got := map[int][]string{}
		total := n + (n+4)/5
		for range total {
			ev := nextEvent(t, ps, fmt.Sprint("subscriber ", si))
			var i int
			_, err := fmt.Sscanf(ev, "k%d", &i)
			require.NoError(t, err, ev)
			got[i%3] = append(got[i%3], ev)
		}
		for via := range 3 {
			var want []string
			for i := via; i < n; i += 3 {
				want = append(want, fmt.Sprintf("k%d set", i))
				if i%5 == 0 {
					want = append(want, fmt.Sprintf("k%d del", i))
				}
			}
			require.Equal(t, want, got[via], "subscriber %d, writes through %d", si, via)
		}
	}

	// Kill instance 1 while instance 0 writes: the subscribers of 0 and 2
	// get every event of the writer, in order.
	writer := redis.NewClient(&redis.Options{Addr: cs[0].Options().Addr, MaxRetries: -1, ReadTimeout: testserver.ClientReadTimeout})
	t.Cleanup(func() { _ = writer.Close() })
	stop := make(chan struct{})
	wrote := flowWriter(writer, stop)
	expectFlow := func(ps *redis.PubSub, who string, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			require.Equal(t, fmt.Sprintf("kflow%d set", i), nextEvent(t, ps, who))
		}
	}
	expectFlow(subs[2], "subscriber 2", 0, 10)
	nodes[1].kill()
	expectFlow(subs[2], "subscriber 2", 10, 30)
	close(stop)
	res := <-wrote
	require.NoError(t, res.err)
	sent := res.n
	expectFlow(subs[2], "subscriber 2", 30, sent)
	expectFlow(subs[0], "subscriber 0", 0, sent)

	// A new instance in its place has the table's setting before it
	// serves, and its subscriber gets the others' writes.
	cs[1] = nodes[1].start()
	require.Equal(t, map[string]string{"notify-keyspace-events": "AKE"}, cs[1].ConfigGet(ctx, "notify-keyspace-events").Val())
	subs[1] = keyspaceSub(t, cs[1], "k")
	linked(t, cs, 3)
	require.NoError(t, cs[2].Set(ctx, "kback", "v", 0).Err())
	require.NoError(t, cs[0].Del(ctx, "kback").Err())
	got := []string{nextEvent(t, subs[1], "restarted subscriber"), nextEvent(t, subs[1], "restarted subscriber")}
	require.ElementsMatch(t, []string{"kback set", "kback del"}, got)
}

// TestClusterBusRejectsStrangers: with requirepass set, a connection to an
// instance's bus that cannot prove the password is closed without a word,
// and what it sent reaches nobody: a key event frame sent in place of the
// handshake is not published to the instance's subscribers.
func TestClusterBusRejectsStrangers(t *testing.T) {
	ep := endpoint(t)
	table := fmt.Sprintf("it_%d_%d", time.Now().UnixNano(), rand.IntN(1e6))
	ctx := context.Background()
	busAddr, addr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(binary, "--store", "dynamodb", "--endpoint", ep, "--region", "us-east-1", "--table", table,
		"--create-table", "--requirepass", "s3cret", "--bus", busAddr, "--addr", addr)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=redamotest", "AWS_SECRET_ACCESS_KEY=redamotest")
	testproc.Start(t, cmd)
	c := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret", MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "KA").Err())
	ps := keyspaceSub(t, c, "")

	// A key event frame (bus/wire.go: length, kind 5, id 0, db, class,
	// name, key) with no handshake before it.
	body := enc.AppendVarint(nil, 0)
	body = enc.AppendUvarint(body, 1<<3) // String
	body = append(enc.AppendUvarint(body, 3), "set"...)
	body = append(enc.AppendUvarint(body, 8), "injected"...)
	frame := enc.BigEndian.AppendUint32(nil, uint32(1+8+len(body)))
	frame = append(append(frame, 5), make([]byte, 8)...)
	frame = append(frame, body...)

	conn, err := net.DialTimeout("tcp", busAddr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	hello := make([]byte, len("RDMB\x02")+32)
	_, err = io.ReadFull(r, hello)
	require.NoError(t, err, "the bus greets with its magic and a nonce")
	require.Equal(t, "RDMB", string(hello[:4]))
	_, _ = conn.Write(frame)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err = r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the bus closes the connection")

	// The next notification the subscriber gets is a real write's.
	require.NoError(t, c.Set(ctx, "real", "v", 0).Err())
	require.Equal(t, "real set", nextEvent(t, ps, "subscriber"))
}

// TestKeyEventsInProcess: the same across three servers in the test's
// process on one store, on each backend a multi-instance test runs on
// (memory, DynamoDB Local, the AWS-faithful embedded mode): every
// subscriber gets every instance's writes, one killed while a writer runs
// does not stop the others getting its events in order, and one started in
// its place has the setting and the events.
func TestKeyEventsInProcess(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) {
			srvs := []*testserver.Server{b.Start(t), b.Start(t), b.Start(t)}
			cs := make([]*redis.Client, 3)
			subs := make([]*redis.PubSub, 3)
			for i, s := range srvs {
				cs[i] = s.Client(t)
				subs[i] = keyspaceSub(t, cs[i], "k")
			}
			require.NoError(t, cs[1].ConfigSet(ctx, "notify-keyspace-events", "K$g").Err())
			for i := range 9 {
				require.NoError(t, cs[i%3].Set(ctx, fmt.Sprint("k", i), "v", 0).Err())
			}
			for si, ps := range subs {
				var got []string
				for range 9 {
					got = append(got, nextEvent(t, ps, fmt.Sprint("subscriber ", si)))
				}
				var want []string
				for i := range 9 {
					want = append(want, fmt.Sprintf("k%d set", i))
				}
				require.ElementsMatch(t, want, got, "subscriber %d", si)
			}

			stop := make(chan struct{})
			wrote := flowWriter(cs[0], stop)
			flow := func(ps *redis.PubSub, who string, from, to int) {
				t.Helper()
				for i := from; i < to; i++ {
					require.Equal(t, fmt.Sprintf("kflow%d set", i), nextEvent(t, ps, who))
				}
			}
			flow(subs[2], "subscriber 2", 0, 5)
			srvs[1].Kill()
			flow(subs[2], "subscriber 2", 5, 15)
			close(stop)
			res := <-wrote
			require.NoError(t, res.err)
			sent := res.n
			flow(subs[2], "subscriber 2", 15, sent)
			flow(subs[0], "subscriber 0", 0, sent)

			again := b.Start(t).Client(t)
			require.Equal(t, map[string]string{"notify-keyspace-events": "g$K"}, again.ConfigGet(ctx, "notify-keyspace-events").Val())
			sub := keyspaceSub(t, again, "k")
			require.NoError(t, cs[2].Del(ctx, "k2").Err())
			require.Equal(t, "k2 del", nextEvent(t, sub, "restarted subscriber"))
		})
	}
}
