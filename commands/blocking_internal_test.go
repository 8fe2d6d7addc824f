package commands

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/wait"
)

// TestLocalWritesWakeBlockedClients: every write through the server that
// may serve a blocked client wakes it through the server's wait registry.
// The registry here never polls within the test, so a client that were
// not woken would wait out its minute and reply the null array.
func TestLocalWritesWakeBlockedClients(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		setup  [][]string
		block  []string
		writes [][]string
		want   Reply
	}{
		{"blpop/rpush", nil, []string{"BLPOP", "l", "60"}, [][]string{{"RPUSH", "l", "x"}},
			Reply{Kind: ReplyArray, Elems: []Reply{{Kind: ReplyBulk, Str: "l"}, {Kind: ReplyBulk, Str: "x"}}}},
		{"brpop/lmove", [][]string{{"RPUSH", "src", "x"}}, []string{"BRPOP", "l", "60"}, [][]string{{"LMOVE", "src", "l", "LEFT", "RIGHT"}},
			Reply{Kind: ReplyArray, Elems: []Reply{{Kind: ReplyBulk, Str: "l"}, {Kind: ReplyBulk, Str: "x"}}}},
		{"blmove/sort store", [][]string{{"RPUSH", "src", "7"}}, []string{"BLMOVE", "l", "d", "LEFT", "LEFT", "60"}, [][]string{{"SORT", "src", "STORE", "l"}},
			Reply{Kind: ReplyBulk, Str: "7"}},
		{"bzpopmin/zadd", nil, []string{"BZPOPMIN", "z", "60"}, [][]string{{"ZADD", "z", "1", "m"}},
			Reply{Kind: ReplyArray, Elems: []Reply{{Kind: ReplyBulk, Str: "z"}, {Kind: ReplyBulk, Str: "m"}, {Kind: ReplyDouble, Float: 1}}}},
		{"xread/xadd", [][]string{{"XADD", "s", "1-1", "f", "v"}}, []string{"XREAD", "BLOCK", "60000", "STREAMS", "s", "$"}, [][]string{{"XADD", "s", "2-1", "f", "w"}},
			Reply{Kind: ReplyMap, Elems: []Reply{{Kind: ReplyBulk, Str: "s"}, {Kind: ReplyArray, Elems: []Reply{{Kind: ReplyArray, Elems: []Reply{
				{Kind: ReplyBulk, Str: "2-1"}, {Kind: ReplyArray, Elems: []Reply{{Kind: ReplyBulk, Str: "f"}, {Kind: ReplyBulk, Str: "w"}}}}}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stats := dynastore.NewStats()
			s := &Server{Store: model.On(memory.New(memory.Options{Observer: stats})), Stats: stats, Table: NewTable(), Commands: NewCommandStats()}
			s.listRT().waits.Backoff = wait.Backoff{Min: time.Hour, Max: time.Hour}
			do := func(args []string) Reply {
				b := make([][]byte, len(args))
				for i, a := range args {
					b[i] = []byte(a)
				}
				return s.Do(ctx, b...)
			}
			for _, args := range tc.setup {
				require.NotEqual(t, ReplyError, do(args).Kind, "%v", args)
			}
			got := make(chan Reply, 1)
			go func() { got <- do(tc.block) }()
			require.Eventually(t, func() bool { return s.BlockedClients() == 1 }, 5*time.Second, time.Millisecond)
			for _, args := range tc.writes {
				require.NotEqual(t, ReplyError, do(args).Kind, "%v", args)
			}
			require.Equal(t, tc.want, <-got)
			require.Zero(t, s.BlockedClients())
		})
	}
}
