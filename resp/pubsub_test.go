package resp_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/compat"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/pubsub"
)

// psStep is one command of a pub/sub scenario: conn sends cmd, then the
// replies and messages each connection then has are read (reads: how
// many per connection).
type psStep struct {
	conn  int
	cmd   string
	reads map[int]int
	// reads2, when set, is reads over RESP2 (where subscribed mode
	// refuses the command: one error).
	reads2 map[int]int
}

// pubsubScenario: two connections, a subscriber (0) and a publisher (1).
// Messages reach the subscriber while it sends nothing.
var pubsubScenario = []psStep{
	{conn: 0, cmd: "SUBSCRIBE a b", reads: map[int]int{0: 2}},
	// Redis delivers to the patterns in its dict's order: one pattern
	// matches each message here.
	{conn: 0, cmd: "PSUBSCRIBE a* [xy]", reads: map[int]int{0: 2}},
	{conn: 0, cmd: "SSUBSCRIBE s", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "SUBSCRIBE a", reads: map[int]int{0: 1}},
	{conn: 1, cmd: "PUBLISH a hello", reads: map[int]int{1: 1, 0: 2}},
	{conn: 1, cmd: "PUBLISH ab y", reads: map[int]int{1: 1, 0: 1}},
	{conn: 1, cmd: "PUBLISH x y", reads: map[int]int{1: 1, 0: 1}},
	{conn: 1, cmd: "SPUBLISH s x", reads: map[int]int{1: 1, 0: 1}},
	{conn: 1, cmd: "SPUBLISH a x", reads: map[int]int{1: 1}},
	{conn: 0, cmd: "GET x", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "PING", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "PING hi", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "ECHO hi", reads: map[int]int{0: 1}},
	// RESP3 lets a subscriber block: messages reach it while it waits.
	{conn: 1, cmd: "FLUSHALL", reads: map[int]int{1: 1}},
	{conn: 0, cmd: "BLPOP k 0", reads: map[int]int{}, reads2: map[int]int{0: 1}},
	{conn: 1, cmd: waitBlocked, reads: map[int]int{1: 1}, reads2: map[int]int{}},
	{conn: 1, cmd: "PUBLISH b m", reads: map[int]int{1: 1, 0: 1}},
	{conn: 1, cmd: "RPUSH k v", reads: map[int]int{1: 1, 0: 1}, reads2: map[int]int{1: 1}},
	{conn: 1, cmd: "PUBSUB NUMSUB a b c", reads: map[int]int{1: 1}},
	{conn: 1, cmd: "PUBSUB NUMPAT", reads: map[int]int{1: 1}},
	{conn: 1, cmd: "PUBSUB SHARDNUMSUB s a", reads: map[int]int{1: 1}},
	{conn: 1, cmd: "PUBSUB CHANNELS a", reads: map[int]int{1: 1}},
	{conn: 1, cmd: "PUBSUB SHARDCHANNELS", reads: map[int]int{1: 1}},
	{conn: 0, cmd: "UNSUBSCRIBE a", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "PUNSUBSCRIBE [xy]", reads: map[int]int{0: 1}},
	{conn: 1, cmd: "PUBLISH a z", reads: map[int]int{1: 1, 0: 1}},
	{conn: 0, cmd: "PUNSUBSCRIBE", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "SUNSUBSCRIBE", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "UNSUBSCRIBE", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "UNSUBSCRIBE", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "GET x", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "SUBSCRIBE self", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "PUBLISH self me", reads: map[int]int{0: 2}, reads2: map[int]int{0: 1}},
	{conn: 0, cmd: "MULTI", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "SUBSCRIBE m", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "EXEC", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "RESET", reads: map[int]int{0: 1}},
	// EXEC's array then holds more replies than its length says, as
	// Redis sends it.
	{conn: 0, cmd: "MULTI", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "SUNSUBSCRIBE s1 s2", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "EXEC", reads: map[int]int{0: 2}},
	{conn: 1, cmd: "PUBLISH self gone", reads: map[int]int{1: 1}},
	{conn: 0, cmd: "SUBSCRIBE q", reads: map[int]int{0: 1}},
	{conn: 0, cmd: "QUIT", reads: map[int]int{0: 1}},
	{conn: 1, cmd: "PUBLISH q gone", reads: map[int]int{1: 1}},
}

// waitBlocked is a step that asks INFO until a client is blocked (so a
// message published next reaches a client that waits).
const waitBlocked = "wait-blocked"

// runPubsubScenario returns every reply read, in order, each prefixed by
// the connection that read it.
func runPubsubScenario(t *testing.T, addr string, proto int) []string {
	t.Helper()
	var conns [2]*compat.Conn
	for i := range conns {
		c, err := compat.Dial(addr, 5*time.Second)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		if proto == 3 {
			_, err := c.DoStrings("HELLO", "3")
			require.NoError(t, err)
		}
		conns[i] = c
	}
	var out []string
	for _, st := range pubsubScenario {
		reads := st.reads
		if proto == 2 && st.reads2 != nil {
			reads = st.reads2
		}
		if st.cmd == waitBlocked {
			if len(reads) > 0 {
				for {
					info, err := conns[st.conn].DoStrings("INFO", "clients")
					require.NoError(t, err)
					if strings.Contains(string(info), "blocked_clients:1\r\n") {
						break
					}
				}
			}
			continue
		}
		args := strings.Fields(st.cmd)
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		require.NoError(t, conns[st.conn].Send(bs))
		// The sender's replies first: the others' messages went out
		// before them.
		for _, c := range []int{st.conn, 1 - st.conn} {
			for range reads[c] {
				r, err := conns[c].ReadRaw()
				require.NoError(t, err, "%s: reading conn %d", st.cmd, c)
				out = append(out, st.cmd+" -> "+string(rune('0'+c))+": "+string(r))
			}
		}
	}
	return out
}

// TestPubSubLikeRedis runs the scenario on redis-server and on redamo, over
// RESP2 and RESP3, and compares every byte read.
func TestPubSubLikeRedis(t *testing.T) {
	ref := compat.ReferenceRedis(t, "REDAMO_COMPAT_REDIS_ADDR")
	for _, proto := range []int{2, 3} {
		t.Run("resp"+string(rune('0'+proto)), func(t *testing.T) {
			ts := serve(t, &commands.Server{Table: commands.NewTable(), Store: model.On(memory.New(memory.Options{}))})
			want := runPubsubScenario(t, ref, proto)
			got := runPubsubScenario(t, ts.addr, proto)
			require.Equal(t, want, got)
		})
	}
}

// fakePeers stands for two other instances with fixed subscriber counts.
type fakePeers struct{}

func (fakePeers) Publish(_ context.Context, _ pubsub.Message) (int64, error) { return 2, nil }
func (fakePeers) Channels(context.Context, []byte, bool) ([][]byte, error) {
	return [][]byte{[]byte("far")}, nil
}
func (fakePeers) NumSub(_ context.Context, chans [][]byte, _ bool) ([]int64, error) {
	out := make([]int64, len(chans))
	for i := range out {
		out[i] = 3
	}
	return out, nil
}
func (fakePeers) NumPat(context.Context) (int64, error) { return 4, nil }

// TestPubSubPeersCounted: PUBLISH counts the other instances' receivers,
// PUBSUB sums their subscriptions.
func TestPubSubPeersCounted(t *testing.T) {
	hub := pubsub.NewHub()
	hub.SetPeers(fakePeers{})
	ts := serve(t, &commands.Server{Table: commands.NewTable(), PubSub: hub})
	sub, pub := ts.dial(t), ts.dial(t)
	sub.send(cmd("SUBSCRIBE", "near"))
	sub.expect("*3\r\n$9\r\nsubscribe\r\n$4\r\nnear\r\n:1\r\n")
	pub.send(cmd("PUBLISH", "near", "m"))
	pub.expect(":3\r\n")
	sub.expect("*3\r\n$7\r\nmessage\r\n$4\r\nnear\r\n$1\r\nm\r\n")
	pub.send(cmd("PUBSUB", "NUMSUB", "near", "other"))
	pub.expect("*4\r\n$4\r\nnear\r\n:4\r\n$5\r\nother\r\n:3\r\n")
	pub.send(cmd("PUBSUB", "CHANNELS"))
	pub.expect("*2\r\n$3\r\nfar\r\n$4\r\nnear\r\n")
	pub.send(cmd("PUBSUB", "NUMPAT"))
	pub.expect(":4\r\n")
}

// TestSlowSubscriberDisconnected: a subscriber that reads nothing while
// messages pile up past client-output-buffer-limit pubsub's hard limit
// (32 MB) is closed and counted; the publisher is never held up.
func TestSlowSubscriberDisconnected(t *testing.T) {
	ts := serve(t, &commands.Server{Table: commands.NewTable()})
	sub, pub := ts.dial(t), ts.dial(t)
	sub.send(cmd("SUBSCRIBE", "c"))
	sub.expect("*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n")
	// Far more than the socket buffers can hold on top of the limit.
	payload := strings.Repeat("x", 1<<20)
	for range 64 {
		pub.send(cmd("PUBLISH", "c", payload))
		got := pub.read(4)
		require.Contains(t, []string{":1\r\n", ":0\r\n"}, got)
	}
	// What reached the socket before the close, then the end.
	require.NoError(t, sub.c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := io.Copy(io.Discard, sub.r)
	require.NoError(t, err, "the server closed the subscriber")
	pub.send(cmd("PUBSUB", "NUMSUB", "c"))
	pub.expect("*2\r\n$1\r\nc\r\n:0\r\n")
	require.Equal(t, int64(1), ts.srv.Net.OutputLimitDisconnections.Load())
}

// TestClientListShowsSubscriptions: CLIENT LIST's sub, psub, ssub and flag
// P, as Redis shows them.
func TestClientListShowsSubscriptions(t *testing.T) {
	ts := serve(t, &commands.Server{Table: commands.NewTable()})
	sub, other := ts.dial(t), ts.dial(t)
	sub.send(cmd("HELLO", "3") + cmd("CLIENT", "SETNAME", "sub"))
	sub.send(cmd("SUBSCRIBE", "a", "b") + cmd("PSUBSCRIBE", "p*") + cmd("SSUBSCRIBE", "s") + cmd("PING"))
	_, err := sub.r.ReadString('G') // up to PING's +PONG
	require.NoError(t, err)
	sub.expect("\r\n")
	other.send(cmd("INFO", "stats"))
	info := readBulk(t, other)
	for _, f := range []string{"pubsub_channels:2", "pubsub_patterns:1", "pubsubshard_channels:1"} {
		require.Contains(t, info, f+"\r\n")
	}
	other.send(cmd("CLIENT", "LIST"))
	var line string
	for _, l := range strings.Split(readBulk(t, other), "\n") {
		if strings.Contains(l, " name=sub ") {
			line = l
		}
	}
	for _, f := range []string{"flags=P", "sub=2", "psub=1", "ssub=1"} {
		require.Contains(t, strings.Fields(line), f)
	}
	sub.send(cmd("RESET"))
	sub.expect("+RESET\r\n")
	other.send(cmd("CLIENT", "LIST"))
	list := readBulk(t, other)
	require.NotContains(t, list, "flags=P")
	require.Equal(t, 2, strings.Count(list, " sub=0 psub=0 ssub=0 "))
	other.send(cmd("INFO", "stats"))
	info = readBulk(t, other)
	for _, f := range []string{"pubsub_channels:0", "pubsub_patterns:0", "pubsubshard_channels:0"} {
		require.Contains(t, info, f+"\r\n")
	}
}
