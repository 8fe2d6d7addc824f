package commands

// CL.THROTTLE, the rate limiter of redis-cell (a Redis module): the
// handler parses and replies; the recipe, which decides the DynamoDB
// request that applies a call, is coord's (coord/throttle.go).

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/model"
)

// registerThrottle registers CL.THROTTLE. It raises no keyspace event for
// the string key it keeps the cell's state in, as redis-cell (a module
// writing the key without notifying) raises none.
func registerThrottle(t *Table) {
	t.Register([]Row{
		{Name: "cl.throttle", Run: cmdThrottle},
	})
}

// cmdThrottle is CL.THROTTLE key max_burst count_per_period period
// [quantity]. Its reply is redis-cell's: limited (0 or 1), limit, remaining,
// retry after (seconds, -1 when allowed), reset after (seconds).
func cmdThrottle(c *Ctx) {
	key, q, msg := parseThrottle(c.Args)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	if !model.KeyFits(key) {
		c.W.Error(MsgKeyTooLong)
		return
	}
	r, err := c.Srv.Coord.Throttle(c, key, q, coord.ThrottleClock{Now: c.Now, Again: c.readClockAgain})
	var bad *coord.BadTATError
	switch {
	case errors.As(err, &bad):
		c.W.Error(fmt.Sprintf(MsgCellBadTAT, bad.Msg))
		return
	case errors.Is(err, coord.ErrTATExpire):
		c.W.Error(MsgCellExpire)
		return
	case err != nil:
		c.Fail(err)
		return
	}
	c.W.Array(5)
	c.W.Int(boolInt(r.Limited))
	c.W.Int(r.Limit)
	c.W.Int(r.Remaining)
	c.W.Int(r.RetryAfter)
	c.W.Int(r.ResetAfter)
}

// parseThrottle checks the arguments as redis-cell does, in its order:
// their count (redis-cell checks it itself, hence the command's arity of
// -1), each number (Rust's i64 parser: an optional sign and digits, as
// strconv.ParseInt in base 10), then the rate.
func parseThrottle(args [][]byte) (key []byte, q coord.GCRAQuota, msg string) {
	if len(args) != 5 && len(args) != 6 {
		return nil, q, MsgCellUsage
	}
	n := [4]int64{3: 1} // max_burst, count, period, quantity (1 by default)
	for i, a := range args[2:] {
		v, err := strconv.ParseInt(string(a), 10, 64)
		if err != nil {
			return nil, q, fmt.Sprintf(MsgCellNotInt, a)
		}
		n[i] = v
	}
	q = coord.NewGCRAQuota(n[0], n[1], n[2], n[3])
	if q.ZeroRate() {
		return nil, q, MsgCellZeroRate
	}
	return args[1], q, ""
}
