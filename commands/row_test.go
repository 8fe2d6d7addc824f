package commands

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRowFactsDriveMulti: whether a command runs at once inside MULTI or
// is queued is its row's RunsInMulti, whatever its name (here PING runs at
// once and EXEC is queued).
func TestRowFactsDriveMulti(t *testing.T) {
	tab := &Table{}
	tab.Register([]Row{
		{Name: "ping", Run: cmdPing, RunsInMulti: true},
		{Name: "echo", Run: cmdEcho},
		{Name: "exec", Run: cmdExec},
	})
	for _, tc := range []struct {
		name   string
		queued bool
	}{{"ping", false}, {"echo", true}, {"exec", true}} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &replyRecorder{proto: 2}
			c := &Ctx{Context: context.Background(), Args: [][]byte{[]byte(tc.name), []byte("x")}, W: rec, Conn: &Conn{}}
			c.Conn.tx.multi = true
			require.Equal(t, tc.queued, c.queue(tab.Lookup(tc.name)))
			if tc.queued {
				require.Equal(t, []Reply{{Kind: ReplySimple, Str: "QUEUED"}}, rec.top)
				require.Len(t, c.Conn.tx.queue, 1)
			} else {
				require.Empty(t, rec.top, "not queued: the caller runs it")
				require.Empty(t, c.Conn.tx.queue)
			}
		})
	}
}

// TestRowFacts: the table's commands carry the facts their rows set, and
// only those: the commands MULTI runs at once, the may_replicate ones,
// the writes Prefetch hints, and those whose keys a function finds.
func TestRowFacts(t *testing.T) {
	var inMulti, mayReplicate, keysProcs, inSubscribed, several []string
	for _, c := range NewTable().All() {
		for _, sub := range append([]*Command{c}, c.Subcommands...) {
			if sub.runsInMulti {
				inMulti = append(inMulti, sub.Name)
			}
			if sub.MayReplicate {
				mayReplicate = append(mayReplicate, sub.Name)
			}
			if sub.subscribedOK {
				inSubscribed = append(inSubscribed, sub.Name)
			}
			if sub.SeveralReplies {
				several = append(several, sub.Name)
			}
			if sub.keysProc != nil {
				keysProcs = append(keysProcs, sub.Name)
			}
		}
	}
	require.ElementsMatch(t, []string{"exec", "discard", "multi", "watch", "quit", "reset", "lock.guard", "leader.guard"}, inMulti)
	require.ElementsMatch(t, []string{"publish", "spublish", "pfcount"}, mayReplicate)
	subs := []string{"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe"}
	require.ElementsMatch(t, append([]string{"ping", "quit", "reset"}, subs...), inSubscribed)
	require.ElementsMatch(t, append([]string{"exec"}, subs...), several)
	require.ElementsMatch(t, []string{"sort", "sort_ro"}, keysProcs)

	// Register carries a row's Keys to COMMAND GETKEYS's search.
	tab := &Table{}
	tab.Register([]Row{{Name: "sort", Run: cmdPing, Keys: func([][]byte) []keyRef { return []keyRef{{pos: 2}} }}})
	keys, ok := tab.Lookup("sort").keysOf([][]byte{[]byte("sort"), []byte("a"), []byte("b")})
	require.True(t, ok)
	require.Equal(t, []keyRef{{pos: 2}}, keys)
}
