package commands

import "github.com/redamo/redamo/internal/glob"

// Redis's glob lives below commands, since pub/sub patterns match with it
// too.
var (
	globMatch  = glob.Match
	globPrefix = glob.Prefix
)
