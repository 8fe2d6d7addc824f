package commands

// LOCK.*: named locks with owner tokens, TTLs and fencing tokens, and
// LOCK.GUARD, which fences the next EXEC (or the running script) with a
// token. The recipes are coord's; the handlers parse, call and reply.

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/model"
)

// registerLocks registers LOCK.*. Like LEADER.* and QUEUE.*, it raises no
// keyspace event: a lock is no Redis key (its lease lives in a namespace of
// its own, beside the keys), so no notification names it.
func registerLocks(t *Table) {
	t.Register([]Row{
		{Name: "lock.acquire", Run: cmdLockAcquire},
		{Name: "lock.release", Run: cmdLockRelease},
		{Name: "lock.extend", Run: cmdLockExtend},
		{Name: "lock.check", Run: cmdLockCheck},
		{Name: "lock.guard", Run: cmdLockGuard, RunsInMulti: true},
	})
}

// Reply strings of the coordination commands.
const (
	MsgNotOwner     = "NOTOWNER held by another owner or with another token"
	MsgNameTooLong  = "ERR name exceeds the DynamoDB partition key limit (2047 bytes)"
	MsgEmptyHolder  = "ERR the %s must not be empty"
	MsgGuardInMulti = "ERR %s inside MULTI is not allowed"
	MsgTokenRange   = "ERR token is not an integer or out of range"
)

// maxLeaseMS bounds a TTL so that now + TTL stays far from overflowing.
const maxLeaseMS = 1 << 50

// leaseOpts are the options of the LOCK.* and LEADER.* commands.
type leaseOpts struct {
	ttl   time.Duration
	wait  time.Duration
	token int64
	value []byte
	// seen holds the options given, upper case ("PX", "WAIT").
	seen map[string]bool
}

// parseLeaseOpts parses args as the options in allowed (PX, EX, WAIT,
// BLOCK, FENCE, VALUE), for command cmd (lower case, for its errors). The
// TTL defaults to coord.DefaultTTL.
func parseLeaseOpts(cmd string, args [][]byte, allowed ...string) (leaseOpts, string) {
	o := leaseOpts{ttl: coord.DefaultTTL, seen: map[string]bool{}}
	for i := 0; i < len(args); i++ {
		name := strings.ToUpper(string(args[i]))
		if !slices.Contains(allowed, name) || o.seen[name] || i+1 == len(args) ||
			(name == "PX" && o.seen["EX"]) || (name == "EX" && o.seen["PX"]) {
			return o, MsgSyntax
		}
		o.seen[name] = true
		i++
		arg := args[i]
		if name == "VALUE" {
			o.value = arg
			continue
		}
		n, ok := model.String2ll(arg)
		switch name {
		case "PX", "EX":
			if !ok {
				return o, MsgNotInt
			}
			if name == "EX" && n <= maxLeaseMS/1000 {
				n *= 1000
			}
			if n <= 0 || n > maxLeaseMS {
				return o, fmt.Sprintf(MsgInvalidExpire, cmd)
			}
			o.ttl = time.Duration(n) * time.Millisecond
		case "WAIT", "BLOCK":
			switch {
			case !ok:
				return o, MsgTimeoutNotInt
			case n < 0:
				return o, MsgNegativeTimeout
			}
			o.wait = time.Duration(min(n, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
		case "FENCE":
			if o.token, ok = parseToken(arg); !ok {
				return o, MsgTokenRange
			}
		}
	}
	return o, ""
}

// parseToken parses a fencing token or term: a positive integer.
func parseToken(arg []byte) (int64, bool) {
	n, ok := model.String2ll(arg)
	return n, ok && n > 0
}

// leaseClock is the clock the coordination recipes decide expiry with:
// the command's reading, corrected to the store's clock, and its
// uncertainty.
func (c *Ctx) leaseClock() coord.Clock {
	return coord.NewClock(c.Now(), c.Srv.ClockUncertainty())
}

// leaseClocks is attemptClock for the coordination recipes.
func (c *Ctx) leaseClocks() func() coord.Clock {
	now := c.attemptClock()
	return func() coord.Clock { return coord.NewClock(now(), c.Srv.ClockUncertainty()) }
}

// attemptClock reads the clock for each attempt of a waiting command: the
// command's own reading first, a fresh one for every later attempt (inside
// EXEC or a script, the unit's one reading throughout).
func (c *Ctx) attemptClock() func() time.Time {
	first := true
	return func() time.Time {
		if !first && !c.InTx {
			c.now = c.Srv.Now()
		}
		first = false
		return c.Now()
	}
}

// waitFor is how long a command may wait: not at all inside EXEC or a
// script.
func (c *Ctx) waitFor(d time.Duration) time.Duration {
	if c.InTx {
		return 0
	}
	return d
}

// LOCK.ACQUIRE name owner [PX ms | EX s] [WAIT ms]
func cmdLockAcquire(c *Ctx) {
	o, msg := parseLeaseOpts("lock.acquire", c.Args[3:], "PX", "EX", "WAIT")
	if msg == "" && len(c.Args[2]) == 0 {
		msg = fmt.Sprintf(MsgEmptyHolder, "owner")
	}
	if msg != "" {
		c.W.Error(msg)
		return
	}
	l, ok, err := c.Srv.Coord.Acquire(c, c.Args[1], c.Args[2], o.ttl, c.waitFor(o.wait), c.leaseClocks())
	c.replyGrant(l, ok, err)
}

// replyGrant replies to an acquisition or election: the token (term)
// granted, or null.
func (c *Ctx) replyGrant(l coord.Lease, ok bool, err error) {
	switch {
	case err != nil:
		c.Fail(err)
	case !ok:
		c.W.Nil()
	default:
		c.W.Int(l.Token)
	}
}

// LOCK.RELEASE name owner [FENCE token]
func cmdLockRelease(c *Ctx) {
	o, msg := parseLeaseOpts("lock.release", c.Args[3:], "FENCE")
	if msg != "" {
		c.W.Error(msg)
		return
	}
	ok, err := c.Srv.Coord.Release(c, c.Args[1], c.Args[2], o.token, c.leaseClock())
	c.replyBool(ok, err)
}

// LOCK.EXTEND name owner PX ms|EX s [FENCE token]
func cmdLockExtend(c *Ctx) {
	o, msg := parseLeaseOpts("lock.extend", c.Args[3:], "PX", "EX", "FENCE")
	if msg == "" && !o.seen["PX"] && !o.seen["EX"] {
		msg = MsgSyntax
	}
	if msg != "" {
		c.W.Error(msg)
		return
	}
	ok, err := c.Srv.Coord.Extend(c, c.Args[1], c.Args[2], o.token, o.ttl, c.leaseClock())
	c.replyBool(ok, err)
}

func (c *Ctx) replyBool(ok bool, err error) {
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(boolInt(ok))
}

// LOCK.CHECK name
func cmdLockCheck(c *Ctx) {
	clk := c.leaseClock()
	l, held, err := c.Srv.Coord.Check(c, c.Args[1], clk)
	switch {
	case err != nil:
		c.Fail(err)
	case !held:
		c.W.Nil()
	default:
		c.W.Map(4)
		c.W.BulkString("owner")
		c.W.Bulk(l.Holder)
		c.W.BulkString("token")
		c.W.Int(l.Token)
		c.W.BulkString("pttl")
		c.W.Int(l.PTTL(clk))
		c.W.BulkString("acquired_at")
		c.W.Int(l.GrantedMS)
	}
}

// LOCK.GUARD name token
func cmdLockGuard(c *Ctx) { guard(c, coord.LockFence) }

// guard fences writes with a lease's token. Outside MULTI it is kept with
// the connection, as WATCH keeps its keys, and the next EXEC commits only
// if the lease is still held with that token as it commits (otherwise its
// reply is null and nothing is written). Inside a script (or EXEC) it
// checks the lease at once (NOTOWNER) and conditions that commit the same
// way (coord.Service.Guard).
func guard(c *Ctx, fence func(name []byte, token int64) (coord.Fence, error)) {
	token, ok := parseToken(c.Args[2])
	if !ok {
		c.W.Error(MsgTokenRange)
		return
	}
	if c.Conn != nil && c.Conn.tx.multi {
		c.W.Error(fmt.Sprintf(MsgGuardInMulti, strings.ToUpper(string(c.Args[0]))))
		return
	}
	clk := c.leaseClock()
	f, err := fence(c.Args[1], token)
	if err != nil {
		c.Fail(err)
		return
	}
	inUnit, err := c.Srv.Coord.Guard(c, f, clk)
	switch {
	case err != nil:
		c.Fail(err)
	case !inUnit:
		c.Conn.tx.guards = append(c.Conn.tx.guards, f)
		c.W.Simple("OK")
	default:
		c.W.Simple("OK")
	}
}
