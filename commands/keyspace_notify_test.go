package commands_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/internal/testserver"
)

// keyspaceSub subscribes a dedicated connection (RESP proto) to every
// keyspace and keyevent channel of db 0 and returns a function that reads
// the messages up to a PUBLISH to "end" (sent on pub): each as
// "channel payload".
func keyspaceSub(t *testing.T, ctx context.Context, addr string, proto int, pub *redis.Client) func() []string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto})
	t.Cleanup(func() { _ = rdb.Close() })
	ps := rdb.PSubscribe(ctx, "__key*@0__:*")
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, ps.Subscribe(ctx, "end"))
	_, err = ps.Receive(ctx)
	require.NoError(t, err)
	return func() []string {
		require.NoError(t, pub.Publish(ctx, "end", "").Err())
		var got []string
		for {
			m, err := ps.ReceiveMessage(ctx)
			require.NoError(t, err)
			if m.Channel == "end" {
				return got
			}
			got = append(got, m.Channel+" "+m.Payload)
		}
	}
}

// TestKeyspaceNotificationsRESP2: a subscriber on another connection, in
// RESP2 and RESP3, gets every write's notifications in Redis's order:
// __keyspace before __keyevent, "new" before the command's event, the
// "del" of an emptied list after its pop.
func TestKeyspaceNotificationsRESP2(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/resp%d", b.Name, proto), func(t *testing.T) {
				srv := b.Start(t)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				w := srv.Client(t)
				require.NoError(t, w.ConfigSet(ctx, "notify-keyspace-events", "KEA$n").Err())
				read := keyspaceSub(t, ctx, srv.Addr, proto, w)
				require.NoError(t, w.Set(ctx, "k", "v", 0).Err())
				require.NoError(t, w.RPush(ctx, "l", "a").Err())
				require.NoError(t, w.LPop(ctx, "l").Err())
				require.NoError(t, w.Del(ctx, "k", "nokey").Err())
				require.Equal(t, []string{
					"__keyspace@0__:k new", "__keyevent@0__:new k",
					"__keyspace@0__:k set", "__keyevent@0__:set k",
					"__keyspace@0__:l new", "__keyevent@0__:new l",
					"__keyspace@0__:l rpush", "__keyevent@0__:rpush l",
					"__keyspace@0__:l lpop", "__keyevent@0__:lpop l",
					"__keyspace@0__:l del", "__keyevent@0__:del l",
					"__keyspace@0__:k del", "__keyevent@0__:del k",
				}, read())
			})
		}
	}
}

// TestKeyspaceNotificationsExecOnce: an EXEC whose commit loses a race
// runs its commands again, and reports their events once, for the attempt
// that committed; a WATCH-aborted EXEC and a DISCARD report none.
func TestKeyspaceNotificationsExecOnce(t *testing.T) {
	canceled := &dynastore.TxCanceledError{Reasons: []dynastore.TxReason{
		{Code: dynastore.ReasonConditionalFailed}, {Code: dynastore.ReasonNone},
	}}
	mem := memory.New(memory.Options{})
	srv := testserver.Start(t, mem)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := srv.Client(t)
	require.NoError(t, w.ConfigSet(ctx, "notify-keyspace-events", "E$").Err())
	require.NoError(t, w.Set(ctx, "a", "1", 0).Err())
	read := keyspaceSub(t, ctx, srv.Addr, 2, w)

	c := txConn(t, srv.Addr, 2)
	mem.FailNext(dynastore.OpTransactWriteItems, canceled)
	txQueue(t, c, txCmd("INCR", "a"), txCmd("SET", "b", "x"))
	_, err := txDo(c, "EXEC")
	require.NoError(t, err)
	require.Equal(t, "x", txGet(t, c, "b"), "the EXEC ran again and committed")
	require.Equal(t, []string{"__keyevent@0__:incrby a", "__keyevent@0__:set b"}, read())

	txQueue(t, c, txCmd("SET", "b", "y"))
	require.Equal(t, "OK", txMust(t, c, "DISCARD"))
	txRun(t, c, "WATCH", "a")
	require.NoError(t, w.Set(ctx, "a", "2", 0).Err())
	txQueue(t, c, txCmd("SET", "b", "z"))
	txRequireAborted(t, c)
	require.Equal(t, []string{"__keyevent@0__:set a"}, read(), "only the other client's SET")
}

// TestKeyspaceNotificationsBlockedPop: a client subscribed on its own
// connection (RESP3) and blocked in BLPOP or BZPOPMIN gets, as Redis sends
// them (bytes taken from redis-server 7.0.15): the push's event of the
// client that fed the key, then its own reply with its pop's event (inside
// the reply for BZPOPMIN) and the "del" of the emptied key after it. The
// pushing client wakes it once it reported its event; a poll could serve
// it in between (as it serves pushes through other instances, whose events
// travel apart), so the server polls slowly, and the push waits until the
// poller is at its long interval.
func TestKeyspaceNotificationsBlockedPop(t *testing.T) {
	msg := func(event, key string) string {
		ch := "__keyevent@0__:" + event
		return fmt.Sprintf(">3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(ch), ch, len(key), key)
	}
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			srv := b.Start(t, testserver.WithConfig(func(cfg *commands.Config) { cfg.BlockingPoll = 10 * time.Second }))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			w := srv.Client(t)
			require.NoError(t, w.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err())
			nc, err := net.Dial("tcp", srv.Addr)
			require.NoError(t, err)
			defer nc.Close()
			require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
			r := bufio.NewReader(nc)
			send := func(args ...string) {
				var sb strings.Builder
				fmt.Fprintf(&sb, "*%d\r\n", len(args))
				for _, a := range args {
					fmt.Fprintf(&sb, "$%d\r\n%s\r\n", len(a), a)
				}
				_, err := nc.Write([]byte(sb.String()))
				require.NoError(t, err)
			}
			expect := func(want string) {
				got := make([]byte, len(want))
				_, err := io.ReadFull(r, got)
				require.NoError(t, err)
				require.Equal(t, want, string(got))
			}
			send("HELLO", "3")
			skipReply(t, r)
			send("SUBSCRIBE", "__keyevent@0__:rpush", "__keyevent@0__:lpop", "__keyevent@0__:del", "__keyevent@0__:zadd", "__keyevent@0__:zpopmin")
			for _, ch := range []string{"rpush", "lpop", "del", "zadd", "zpopmin"} {
				name := "__keyevent@0__:" + ch
				expect(fmt.Sprintf(">3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:%d\r\n", len(name), name, map[string]int{"rpush": 1, "lpop": 2, "del": 3, "zadd": 4, "zpopmin": 5}[ch]))
			}

			blocked := func() {
				waitBlocked(t, srv, 1)
				time.Sleep(50 * time.Millisecond) // the poller's first reads come at 10 ms, 15 ms, ...
			}
			send("BLPOP", "l", "0")
			blocked()
			require.NoError(t, w.RPush(ctx, "l", "x").Err())
			expect(msg("rpush", "l") + "*2\r\n$1\r\nl\r\n$1\r\nx\r\n" + msg("lpop", "l") + msg("del", "l"))

			send("BZPOPMIN", "z", "0")
			blocked()
			require.NoError(t, w.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "m"}).Err())
			expect(msg("zadd", "z") + "*3\r\n$1\r\nz\r\n" + msg("zpopmin", "z") + "$1\r\nm\r\n,1\r\n" + msg("del", "z"))
		})
	}
}

// skipReply reads one whole RESP3 reply.
func skipReply(t *testing.T, r *bufio.Reader) {
	t.Helper()
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	switch line[0] {
	case '$', '=', '!':
		_, err = io.ReadFull(r, make([]byte, n+2))
		require.NoError(t, err)
	case '*', '~', '>':
		for range n {
			skipReply(t, r)
		}
	case '%':
		for range 2 * n {
			skipReply(t, r)
		}
	}
}
