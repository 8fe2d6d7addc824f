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
	in := ReportInput{
		RedisVersion: "7.0.15",
		Docs: []CommandDoc{
			{Name: "get", Group: "string"}, {Name: "hset", Group: "hash"},
			{Name: "client", Group: "connection"}, {Name: "client|no-evict", Group: "connection"},
		},
		Supported:   map[string]bool{"get": true, "client": true, "lock.acquire": true},
		Unsupported: map[string]string{"hset": "-ERR unknown command 'HSET', with args beginning with: ", "client|no-evict": "-ERR unknown subcommand 'NO-EVICT'. Try CLIENT HELP."},
		Cases:       []*Case{get, hash},
		Required:    map[*Case][]string{get: {"get"}, hash: {"hset"}},
		Results: []Result{
			{Case: get, Target: "memory", Variant: "resp2", Outcome: Identical},
			{Case: get, Target: "memory", Variant: "resp3", Outcome: Mismatch},
			{Case: hash, Target: "memory", Variant: "resp2", Outcome: NotRun, Detail: "unsupported: hset"},
			{Case: get, Target: "memory", Variant: "multi-resp2", Outcome: NotRun, Detail: "MULTI unsupported"},
		},
		Targets: []string{"memory", "dynamodb"},
		Missing: map[string]string{"dynamodb": "REDAMO_TEST_DYNAMODB_ENDPOINT not set"},
		Known:   []string{"strings/get (memory): a reason"},
	}
	out := RenderReport(in)
	for _, want := range []string{
		"\n2 cases.\n",
		"| memory | resp2 | 1 | 1 | 1 |",
		"| memory | resp3 | 0 | 1 | 0 |",
		"| dynamodb | resp2 | – | – | not run: REDAMO_TEST_DYNAMODB_ENDPOINT not set |",
		"| uses a command redamo lacks (below) | 1 |",
		"Commands those cases need: HSET.",
		"| MULTI unsupported | – | – | 1 |",
		"| GET | yes | 1 | 1/1 | 0/1 |",
		"| HSET | no | 1 | – |",
		"| CLIENT NO-EVICT | Connection | `-ERR unknown subcommand 'NO-EVICT'. Try CLIENT HELP.` |",
		"| HSET | Hashes | `-ERR unknown command 'HSET', with args beginning with: ` |",
		"LOCK.ACQUIRE",
		"- strings/get (memory): a reason",
		"| [Strings](#strings) | 1 | 1 | 1 | 1/1 | 0/1 |",
	} {
		require.True(t, strings.Contains(out, want), "report lacks %q:\n%s", want, out)
	}
}
