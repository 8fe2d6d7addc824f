package commands_test

import "github.com/redamo/redamo/internal/testserver"

// requestsSince is the requests per operation of label between two
// snapshots of a Stats.
var requestsSince = testserver.RequestsSince
