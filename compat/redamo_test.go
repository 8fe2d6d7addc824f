package compat

import (
	"context"
	"testing"
	"time"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/internal/testserver"
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
		if b.Name == "memory" {
			// FLUSHALL leaves the members of large collections to the
			// sweeper, after its grace period. SCAN's page budget counts
			// them, so after enough large collections a small database
			// would answer SCAN with a cursor where Redis ends: sweep
			// them between cases, two passes (mark, then delete), with no
			// grace since no command runs meanwhile. On DynamoDB Local,
			// whose scan order spreads them, a pass per case costs more
			// than it saves.
			sw := &commands.Sweeper{Store: b.Store, Grace: time.Nanosecond, Rate: 1 << 20}
			tg.Clean = func() error {
				for range 2 {
					if err := sw.SweepOnce(context.Background()); err != nil {
						return err
					}
				}
				return nil
			}
		}
		out = append(out, tg)
	}
	return out
}
