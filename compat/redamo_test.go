package compat

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
	"github.com/redamo/redamo/model"
)

// redamoTargets starts redamo in-process on every backend available (memory
// always; DynamoDB Local on a fresh table when REDAMO_TEST_DYNAMODB_ENDPOINT
// is set, required under make test), each stopped when the test ends.
func redamoTargets(t *testing.T) []*Target {
	t.Helper()
	var out []*Target
	for _, b := range testserver.Stores(t) {
		srv := b.Start(t)
		tg := redamoTarget(t, b.Name, srv.Addr)
		// FLUSHALL leaves the members of large collections to the
		// sweeper, after its grace period. SCAN's page budget counts them,
		// so after enough large collections a small database would answer
		// SCAN with a cursor where Redis ends: before a case that iterates
		// the keyspace, sweep them, in two passes (mark, then delete) with
		// no grace, since no command runs meanwhile.
		// The chunks of big values go to the sweeper too: after a case
		// that wrote some, sweep, or every later FLUSHALL's scan would
		// read them all again.
		sw := &model.Sweeper{Store: b.Store, Grace: time.Nanosecond, Rate: 1 << 20}
		big := false
		tg.Clean = func(c *Case) error {
			sweep := big || iteratesKeyspace(c)
			big = writesBig(c)
			if !sweep {
				return nil
			}
			for range 2 {
				if err := sw.SweepOnce(context.Background()); err != nil {
					return err
				}
			}
			return nil
		}
		out = append(out, tg)
	}
	return out
}

// writesBig reports whether a case sends an argument past DynamoDB's
// item, which redamo keeps in chunks.
func writesBig(c *Case) bool {
	for _, st := range c.Steps {
		for _, a := range st.Args {
			if len(a.Lit) > dynastore.MaxItemSize {
				return true
			}
		}
	}
	return false
}

// iteratesKeyspace reports whether a case sends a command that reads
// through the whole keyspace.
func iteratesKeyspace(c *Case) bool {
	for _, st := range c.Steps {
		if len(st.Args) == 0 {
			continue
		}
		switch strings.ToLower(string(st.Args[0].Lit)) {
		case "scan", "keys", "randomkey", "dbsize":
			return true
		}
	}
	return false
}
