package compat

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func argv(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// TestWorkloadWait checks the expiry model: a command touching a key near a
// deadline some earlier command may have set waits until past it.
func TestWorkloadWait(t *testing.T) {
	const t0 = int64(1_700_000_000_000) // the earlier command's send time, ms
	sent := time.UnixMilli(t0)
	tests := []struct {
		name   string
		before string // the command that may set a deadline, sent at t0
		cmd    string // the command about to be sent
		at     int64  // ms after t0
		want   int64  // ms to wait
	}{
		{"px near", "SET k v PX 20", "GET k", 5, 20 + 30 - 5 + 1},
		{"px far past", "SET k v PX 20", "GET k", 100, 0},
		{"px other key", "SET k v PX 20", "GET j", 5, 0},
		{"ex far", "SET k v EX 100", "GET k", 5, 0},
		{"pexpire", "PEXPIRE k 10", "TTL k", 0, 10 + 30 + 1},
		{"psetex", "PSETEX k 10 v", "EXISTS j k", 0, 41},
		{"getex px", "GETEX k PX 10", "GET k", 0, 41},
		{"pexpireat absolute", "PEXPIREAT k 1700000000010", "GET k", 0, 41},
		{"expireat absolute", "EXPIREAT k 1700000000", "GET k", 0, 31},
		{"invalid value sets nothing", "PEXPIRE k x", "GET k", 0, 0},
		{"whole keyspace", "SET k v PX 20", "KEYS *", 0, 51},
		{"scan", "SET k v PX 20", "SCAN 0", 0, 51},
		{"mset keys", "SET k v PX 20", "MSET a 1 k 2", 0, 51},
		{"mset value is no key", "SET k v PX 20", "MSET a k", 0, 0},
		{"rename carries the deadline", "SET k v PX 20\nRENAME k j", "GET j", 0, 51},
		{"copy carries the deadline", "SET k v PX 20\nCOPY k j", "GET j", 0, 51},
		{"select touches nothing", "SET k v PX 20", "SELECT 1", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWorkload(1, nil, 30*time.Millisecond)
			for _, line := range strings.Split(tc.before, "\n") {
				w.After(argv(line), sent)
			}
			require.Equal(t, tc.want, w.wait(argv(tc.cmd), t0+tc.at))
		})
	}
}

// TestWorkloadDraws checks that every generator makes a command the case-file
// syntax reads back, named as its generator.
func TestWorkloadDraws(t *testing.T) {
	var names []string
	for name := range generators {
		names = append(names, name)
	}
	w := NewWorkload(7, names, 30*time.Millisecond)
	require.Len(t, w.Commands(), len(generators))
	seen := map[string]bool{}
	for i := 0; i < 5000; i++ {
		st := w.Next()
		seen[strings.ToLower(string(st.Args[0].Lit))] = true
		cases, err := ParseCases("w", []byte("case c\n"+FormatStep(st)+"\n"))
		require.NoError(t, err, FormatStep(st))
		require.Equal(t, FormatStep(st), FormatStep(cases[0].Steps[0]))
	}
	for _, name := range names {
		require.True(t, seen[name], "generator %s never drawn", name)
	}
}
