package compat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRenderReport renders a small synthetic run and checks the tables a
// reader relies on.
func TestRenderReport(t *testing.T) {
	get := &Case{File: "strings", Name: "get"}
	hash := &Case{File: "hashes", Name: "hset"}
	lock := &Case{File: "locks", Name: "acquire", RedamoOnly: "redamo's own"}
	queue := &Case{File: "queues", Name: "push", RedamoOnly: "redamo's own"}
	in := ReportInput{
		RedisVersion: "7.0.15",
		Docs: []CommandDoc{
			{Name: "get", Group: "string"}, {Name: "hset", Group: "hash"},
			{Name: "client", Group: "connection"}, {Name: "client|no-evict", Group: "connection"},
		},
		Supported:   map[string]bool{"get": true, "client": true, "lock.acquire": true},
		Unsupported: map[string]string{"hset": "-ERR unknown command 'HSET', with args beginning with: ", "client|no-evict": "-ERR unknown subcommand 'NO-EVICT'. Try CLIENT HELP."},
		Cases:       []*Case{get, hash, lock, queue},
		Required:    map[*Case][]string{get: {"get"}, hash: {"hset"}, lock: {"get", "lock.acquire"}, queue: {"queue.push"}},
		Results: []Result{
			{Case: get, Target: "memory", Variant: "resp2", Outcome: Identical},
			{Case: get, Target: "memory", Variant: "resp3", Outcome: Mismatch},
			{Case: hash, Target: "memory", Variant: "resp2", Outcome: NotRun, Detail: "unsupported: hset"},
			{Case: get, Target: "memory", Variant: "multi-resp2", Outcome: NotRun, Detail: "MULTI unsupported"},
			{Case: lock, Target: "memory", Variant: "resp2", Outcome: AsExpected},
			{Case: lock, Target: "memory", Variant: "resp3", Outcome: Mismatch},
			{Case: queue, Target: "memory", Variant: "resp2", Outcome: NotRun, Detail: "unsupported: queue.push"},
		},
		Targets: []string{"memory", "dynamodb"},
		Missing: map[string]string{"dynamodb": "REDAMO_TEST_DYNAMODB_ENDPOINT not set"},
		Known:   []string{"strings/get (memory): a reason"},
	}
	out := RenderReport(in)
	for _, want := range []string{
		"\n4 cases.\n2 of them redamo-only.\n",
		"| memory | resp2 | 1 | 1 | 1 | 1 | 2 |",
		"| memory | resp3 | 0 | 1 | 0 | 1 | 0 |",
		"| dynamodb | resp2 | – | – | – | – | not run: REDAMO_TEST_DYNAMODB_ENDPOINT not set |",
		"| uses a command redamo lacks (below) | 2 |",
		"Commands those cases need: HSET, QUEUE.PUSH.",
		"| MULTI unsupported | – | – | 1 |",
		"| GET | yes | 1 | 1/1 | 0/1 |",
		"| HSET | no | 1 | – |",
		"| CLIENT NO-EVICT | Connection | `-ERR unknown subcommand 'NO-EVICT'. Try CLIENT HELP.` |",
		"| HSET | Hashes | `-ERR unknown command 'HSET', with args beginning with: ` |",
		"(#commands-redamo-has-that-redis-7015-lacks)",
		"## Commands redamo has that Redis 7.0.15 lacks",
		"| LOCK.ACQUIRE | yes | 1 | 1/1 | 0/1 | – |",
		"| QUEUE.PUSH | no | 1 | – | – |",
		"- strings/get (memory): a reason",
		"| [Strings](#strings) | 1 | 1 | 1 | 1/1 | 0/1 |",
	} {
		require.True(t, strings.Contains(out, want), "report lacks %q:\n%s", want, out)
	}
}
