package compat

import (
	"testing"

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
		out = append(out, redamoTarget(t, b.Name, srv.Addr))
	}
	return out
}
