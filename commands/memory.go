package commands

// MEMORY USAGE reports what a key occupies in the table, by DynamoDB's own
// accounting of item sizes (what capacity units and the 400 KB limit are
// counted on): its key item, and for a large collection its member items
// (model.KeyUsage). Redis's other MEMORY subcommands (DOCTOR, STATS,
// MALLOC-STATS, PURGE) describe one process's allocator, where redamo's
// data does not live: they get Redis's unknown-subcommand error.

import (
	"math"
	"strings"

	"github.com/redamo/redamo/model"
)

// defaultMemorySamples is Redis's OBJ_COMPUTE_SIZE_DEF_SAMPLES.
const defaultMemorySamples = 5

func cmdMemoryHelp(c *Ctx) {
	writeHelp(c, "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).",
	)
}

// cmdMemoryUsage is MEMORY USAGE key [SAMPLES count], with Redis's errors:
// a syntax error for anything but SAMPLES and for a negative count (the
// last SAMPLES given counts). A missing key is the null reply.
func cmdMemoryUsage(c *Ctx) {
	samples := int64(defaultMemorySamples)
	for i := 3; i < len(c.Args); i += 2 {
		if !strings.EqualFold(string(c.Args[i]), "samples") || i+1 == len(c.Args) {
			c.W.Error(MsgSyntax)
			return
		}
		n, ok := model.String2ll(c.Args[i+1])
		switch {
		case !ok:
			c.W.Error(MsgNotInt)
			return
		case n < 0:
			c.W.Error(MsgSyntax)
			return
		case n == 0:
			n = math.MaxInt64
		}
		samples = n
	}
	size, found, err := model.KeyUsage(c, c.Args[2], samples)
	switch {
	case err != nil:
		c.Fail(err)
	case !found:
		c.W.Nil()
	default:
		c.W.Int(size)
	}
}
