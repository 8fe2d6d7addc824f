package commands

// LEADER.*: leader election with terms. The recipes are coord's; the
// handlers parse, call and reply.

import (
	"fmt"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/model"
)

// registerLeaders registers LEADER.*; an election is no Redis key, so it
// raises no keyspace event (see registerLocks).
func registerLeaders(t *Table) {
	t.Register([]Row{
		{Name: "leader.elect", Run: cmdLeaderElect},
		{Name: "leader.heartbeat", Run: cmdLeaderHeartbeat},
		{Name: "leader.resign", Run: cmdLeaderResign},
		{Name: "leader.check", Run: cmdLeaderCheck},
		{Name: "leader.watch", Run: cmdLeaderWatch},
		{Name: "leader.guard", Run: cmdLeaderGuard, RunsInMulti: true},
	})
}

// LEADER.ELECT election candidate [PX ms] [WAIT ms] [VALUE v]
func cmdLeaderElect(c *Ctx) {
	o, msg := parseLeaseOpts("leader.elect", c.Args[3:], "PX", "WAIT", "VALUE")
	if msg == "" && len(c.Args[2]) == 0 {
		msg = fmt.Sprintf(MsgEmptyHolder, "candidate")
	}
	if msg != "" {
		c.W.Error(msg)
		return
	}
	var val []byte
	if o.seen["VALUE"] {
		val = append([]byte{}, o.value...)
	}
	l, ok, err := c.Srv.Coord.Elect(c, c.Args[1], c.Args[2], val, o.ttl, c.waitFor(o.wait), c.leaseClocks())
	c.replyGrant(l, ok, err)
}

// LEADER.HEARTBEAT election candidate [PX ms]
func cmdLeaderHeartbeat(c *Ctx) {
	o, msg := parseLeaseOpts("leader.heartbeat", c.Args[3:], "PX")
	if msg != "" {
		c.W.Error(msg)
		return
	}
	ok, err := c.Srv.Coord.Heartbeat(c, c.Args[1], c.Args[2], o.ttl, c.leaseClock())
	c.replyBool(ok, err)
}

// LEADER.RESIGN election candidate
func cmdLeaderResign(c *Ctx) {
	ok, err := c.Srv.Coord.Resign(c, c.Args[1], c.Args[2], c.leaseClock())
	c.replyBool(ok, err)
}

// LEADER.CHECK election
func cmdLeaderCheck(c *Ctx) {
	clk := c.leaseClock()
	l, led, err := c.Srv.Coord.Leadership(c, c.Args[1], clk)
	switch {
	case err != nil:
		c.Fail(err)
	case !led:
		c.W.Nil()
	default:
		c.W.Map(6)
		writeLeadership(c.W, l, true, clk)
		c.W.BulkString("elected_at")
		c.W.Int(l.GrantedMS)
		c.W.BulkString("heartbeat_at")
		c.W.Int(l.RenewedMS)
	}
}

// writeLeadership writes leader, term, value and pttl: the leader's when
// led, null, the last term, null and -2 while vacant.
func writeLeadership(w Writer, l coord.Lease, led bool, clk coord.Clock) {
	w.BulkString("leader")
	if led {
		w.Bulk(l.Holder)
	} else {
		w.Nil()
	}
	w.BulkString("term")
	w.Int(l.Token)
	w.BulkString("value")
	if led && l.HasValue {
		w.Bulk(l.Value)
	} else {
		w.Nil()
	}
	w.BulkString("pttl")
	if led {
		w.Int(l.PTTL(clk))
	} else {
		w.Int(-2)
	}
}

// LEADER.WATCH election term [BLOCK ms]
func cmdLeaderWatch(c *Ctx) {
	term, ok := model.String2ll(c.Args[2])
	if !ok || term < 0 {
		c.W.Error(MsgTokenRange)
		return
	}
	o, msg := parseLeaseOpts("leader.watch", c.Args[3:], "BLOCK")
	if msg != "" {
		c.W.Error(msg)
		return
	}
	wait := o.wait
	if c.InTx {
		wait = -1 // look once
	}
	clocks := c.leaseClocks()
	l, changed, err := c.Srv.Coord.Watch(c, c.Args[1], term, wait, clocks)
	switch {
	case err != nil:
		c.Fail(err)
	case !changed:
		c.W.Nil()
	default:
		clk := c.leaseClock()
		c.W.Map(4)
		writeLeadership(c.W, l, l.Held(clk), clk)
	}
}

// LEADER.GUARD election term
func cmdLeaderGuard(c *Ctx) { guard(c, coord.LeaderFence) }
