package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testproc"
	"github.com/redamo/redamo/internal/testserver"
)

// socketioRun is one adapter's part of what
// compat/clients/socketio/socketio.js prints.
type socketioRun struct {
	Steps struct {
		ServerCount int     `json:"serverCount"`
		Emit        [][]int `json:"emit"`
		RoomEmit    struct {
			B []int    `json:"b"`
			C []string `json:"c"`
		} `json:"roomEmit"`
		FetchSockets struct {
			All    []string `json:"all"`
			InRoom []string `json:"inRoom"`
			Rooms  []bool   `json:"rooms"`
		} `json:"fetchSockets"`
		ServerSideEmit struct {
			Received []string `json:"received"`
			Replies  []string `json:"replies"`
		} `json:"serverSideEmit"`
		SocketsJoin []string `json:"socketsJoin"`
		EmitWithAck []string `json:"emitWithAck"`
	} `json:"steps"`
	Errors []string `json:"errors"`
}

// TestSocketIORedisAdapter runs socket.io's Redis adapter, unchanged, over
// two redamo instances on one DynamoDB Local table, both its classic form
// (PUBLISH, PSUBSCRIBE, PUBSUB NUMSUB) and its sharded one (SPUBLISH,
// SSUBSCRIBE, PUBSUB SHARDNUMSUB): socket.io server 1 talks to instance 1,
// server 2 to instance 2, and what server 1 broadcasts, asks or joins
// reaches server 2's clients only through redamo's bus.
func TestSocketIORedisAdapter(t *testing.T) {
	dir, err := filepath.Abs("../compat/clients/socketio")
	require.NoError(t, err)
	node := testserver.NodeModules(t, dir)
	cs := cluster(t, 2)
	ports := make([]string, len(cs))
	for i, c := range cs {
		_, ports[i], _ = strings.Cut(c.Options().Addr, ":")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "socketio.js", ports[0], ports[1])
	cmd.Dir = dir
	testproc.Prepare(cmd)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node socketio.js:\n%s%s", out, stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var s struct {
		SocketIO string                 `json:"socketio"`
		Client   string                 `json:"client"`
		Adapter  string                 `json:"adapter"`
		IORedis  string                 `json:"ioredis"`
		Adapters map[string]socketioRun `json:"adapters"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &s), "%s", out)
	require.Equal(t, "4.8.4", s.SocketIO)
	require.Equal(t, "8.3.0", s.Adapter)
	require.Len(t, s.Adapters, 2)

	for kind, r := range s.Adapters {
		t.Run(kind, func(t *testing.T) {
			require.Empty(t, r.Errors)
			st := r.Steps
			require.Equal(t, 2, st.ServerCount, "each server counts both through PUBSUB across instances")
			require.Equal(t, [][]int{{1}, {1}, {1}}, st.Emit, "io.emit reaches a (server 1) and b, c (server 2)")
			require.Equal(t, []int{2}, st.RoomEmit.B, "the room emit reaches b on server 2")
			require.Equal(t, []string{"hello", "fence"}, st.RoomEmit.C, "c, outside the room, gets only the broadcasts")
			require.Equal(t, []string{"a", "b", "c"}, st.FetchSockets.All, "fetchSockets: server 2 answers the request")
			require.Equal(t, []string{"b"}, st.FetchSockets.InRoom)
			require.Equal(t, []bool{true}, st.FetchSockets.Rooms)
			require.Equal(t, []string{"x"}, st.ServerSideEmit.Received)
			require.Equal(t, []string{"server 2 got y"}, st.ServerSideEmit.Replies)
			require.Equal(t, []string{"b"}, st.SocketsJoin, "a remote socketsJoin")
			require.Equal(t, []string{"ack from a", "ack from b", "ack from c"}, st.EmitWithAck,
				"acknowledgements come back from server 2's clients")
		})
	}
	t.Logf("socket.io %s, client %s, @socket.io/redis-adapter %s, ioredis %s: classic and sharded adapters across 2 instances",
		s.SocketIO, s.Client, s.Adapter, s.IORedis)
}
