package commands

// QUEUE.*: durable work queues with priorities, delays, visibility
// timeouts, receipts, deduplication and dead letters. The recipes are
// coord's; the handlers parse, call and reply.

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/model"
)

// registerQueues registers QUEUE.*; a queue is no Redis key, so it raises
// no keyspace event (see registerLocks).
func registerQueues(t *Table) {
	t.Register([]Row{
		{Name: "queue.push", Run: cmdQueuePush},
		{Name: "queue.pop", Run: cmdQueuePop},
		{Name: "queue.ack", Run: cmdQueueAck},
		{Name: "queue.nack", Run: cmdQueueNack},
		{Name: "queue.extend", Run: cmdQueueExtend},
		{Name: "queue.peek", Run: cmdQueuePeek},
		{Name: "queue.len", Run: cmdQueueLen},
		{Name: "queue.stats", Run: cmdQueueStats},
		{Name: "queue.config", Run: cmdQueueConfig},
		{Name: "queue.redrive", Run: cmdQueueRedrive},
		{Name: "queue.purge", Run: cmdQueuePurge},
	})
}

// Reply strings of the queue commands.
const (
	MsgBadReceipt   = "ERR invalid receipt"
	MsgQueueRange   = "ERR %s must be between %d and %d"
	MsgSameQueueDLQ = "ERR a queue cannot be its own dead-letter queue"
)

// queueOpts parses args as name/value options among allowed, each an
// integer in [lo, hi] unless it is DEDUP or DLQ (bytes).
type queueOpts struct {
	n     map[string]int64
	bytes map[string][]byte
}

var queueOptRange = map[string][2]int64{
	"PRIORITY":    {math.MinInt64, math.MaxInt64},
	"DELAY":       {0, maxLeaseMS},
	"VT":          {0, maxLeaseMS},
	"BLOCK":       {0, math.MaxInt64 / int64(time.Millisecond)},
	"COUNT":       {1, coord.MaxPopCount},
	"MAXRECEIVES": {0, math.MaxInt32},
	"DEDUPWINDOW": {1, maxLeaseMS},
	"SHARDS":      {1, coord.MaxShards},
}

func parseQueueOpts(args [][]byte, allowed ...string) (queueOpts, string) {
	o := queueOpts{n: map[string]int64{}, bytes: map[string][]byte{}}
	for i := 0; i < len(args); i++ {
		name := strings.ToUpper(string(args[i]))
		_, dupN := o.n[name]
		_, dupB := o.bytes[name]
		if !slices.Contains(allowed, name) || dupN || dupB || i+1 == len(args) {
			return o, MsgSyntax
		}
		i++
		if name == "DEDUP" || name == "DLQ" {
			o.bytes[name] = args[i]
			continue
		}
		n, ok := model.String2ll(args[i])
		if !ok {
			return o, MsgNotInt
		}
		r := queueOptRange[name]
		if n < r[0] || n > r[1] {
			return o, fmt.Sprintf(MsgQueueRange, name, r[0], r[1])
		}
		o.n[name] = n
	}
	return o, ""
}

func (o queueOpts) ms(name string, def time.Duration) time.Duration {
	if n, ok := o.n[name]; ok {
		return time.Duration(n) * time.Millisecond
	}
	return def
}

// QUEUE.PUSH queue payload [PRIORITY p] [DELAY ms] [DEDUP id]
func cmdQueuePush(c *Ctx) {
	o, msg := parseQueueOpts(c.Args[3:], "PRIORITY", "DELAY", "DEDUP")
	if msg != "" {
		c.W.Error(msg)
		return
	}
	po := coord.PushOptions{Priority: o.n["PRIORITY"], Delay: o.ms("DELAY", 0)}
	if d, ok := o.bytes["DEDUP"]; ok {
		po.Dedup = append([]byte{}, d...)
	}
	id, _, err := c.Srv.Coord.Push(c, c.Args[1], c.Args[2], po, c.Now())
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.BulkString(id)
}

// QUEUE.POP queue [COUNT n] [VT ms] [BLOCK ms]
func cmdQueuePop(c *Ctx) {
	o, msg := parseQueueOpts(c.Args[2:], "COUNT", "VT", "BLOCK")
	if msg != "" {
		c.W.Error(msg)
		return
	}
	count := 1
	if n, ok := o.n["COUNT"]; ok {
		count = int(n)
	}
	wait := time.Duration(0)
	if n, ok := o.n["BLOCK"]; ok && !c.InTx {
		wait = time.Duration(n) * time.Millisecond
		if n == 0 {
			wait = -1 // without limit, as BLPOP's 0
		}
	}
	msgs, err := c.Srv.Coord.Pop(c, c.Args[1], count, o.ms("VT", coord.QueueVT), wait, c.attemptClock())
	switch {
	case err != nil && len(msgs) == 0:
		c.Fail(err)
	case len(msgs) == 0:
		c.W.NilArray()
	default:
		c.W.Array(len(msgs))
		for _, m := range msgs {
			c.W.Map(4)
			c.W.BulkString("id")
			c.W.BulkString(m.ID)
			c.W.BulkString("receipt")
			if m.Receipt == "" {
				c.W.Nil() // VT 0: deleted as delivered, nothing to acknowledge
			} else {
				c.W.BulkString(m.Receipt)
			}
			c.W.BulkString("payload")
			c.W.Bulk(m.Payload)
			c.W.BulkString("deliveries")
			c.W.Int(m.Deliveries)
		}
	}
}

// QUEUE.ACK queue receipt [receipt ...]
func cmdQueueAck(c *Ctx) {
	n, err := c.Srv.Coord.Queues.Ack(c, c.Args[1], c.Args[2:])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}

// QUEUE.NACK queue receipt [DELAY ms]
func cmdQueueNack(c *Ctx) {
	o, msg := parseQueueOpts(c.Args[3:], "DELAY")
	if msg != "" {
		c.W.Error(msg)
		return
	}
	ok, err := c.Srv.Coord.Queues.Nack(c, c.Args[1], c.Args[2], o.ms("DELAY", 0), c.Now())
	if ok {
		c.Srv.Coord.Woken(c.Args[1])
	}
	c.replyBool(ok, err)
}

// QUEUE.EXTEND queue receipt VT ms
func cmdQueueExtend(c *Ctx) {
	o, msg := parseQueueOpts(c.Args[3:], "VT")
	if msg == "" && len(o.n) == 0 {
		msg = MsgSyntax
	}
	if msg != "" {
		c.W.Error(msg)
		return
	}
	ok, err := c.Srv.Coord.Queues.Extend(c, c.Args[1], c.Args[2], o.ms("VT", 0), c.Now())
	c.replyBool(ok, err)
}

// parseCount parses an optional COUNT n in [1, hi] (def when absent).
func parseCount(args [][]byte, def, hi int64) (int64, string) {
	switch {
	case len(args) == 0:
		return def, ""
	case len(args) != 2 || !strings.EqualFold(string(args[0]), "COUNT"):
		return 0, MsgSyntax
	}
	n, ok := model.String2ll(args[1])
	switch {
	case !ok:
		return 0, MsgNotInt
	case n < 1 || n > hi:
		return 0, fmt.Sprintf(MsgQueueRange, "COUNT", 1, hi)
	}
	return n, ""
}

// maxPeek bounds QUEUE.PEEK's COUNT: it reads that many from every shard.
const maxPeek = 1000

// QUEUE.PEEK queue [COUNT n]
func cmdQueuePeek(c *Ctx) {
	count, msg := parseCount(c.Args[2:], 1, maxPeek)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	msgs, err := c.Srv.Coord.Queues.Peek(c, c.Args[1], int(count), c.Now())
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Array(len(msgs))
	for _, m := range msgs {
		c.W.Map(3)
		c.W.BulkString("id")
		c.W.BulkString(m.ID)
		c.W.BulkString("payload")
		c.W.Bulk(m.Payload)
		c.W.BulkString("deliveries")
		c.W.Int(m.Deliveries)
	}
}

// QUEUE.LEN queue
func cmdQueueLen(c *Ctx) {
	s, err := c.Srv.Coord.Queues.State(c, c.Args[1], c.Now())
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(s.Ready)
}

// QUEUE.STATS queue
func cmdQueueStats(c *Ctx) {
	s, err := c.Srv.Coord.Queues.State(c, c.Args[1], c.Now())
	if err != nil {
		c.Fail(err)
		return
	}
	fields := []struct {
		name string
		n    int64
	}{
		{"ready", s.Ready}, {"delayed", s.Delayed}, {"inflight", s.InFlight}, {"dead", s.Dead},
		{"pushed", s.Counters["pushed"]}, {"acked", s.Counters["acked"]}, {"nacked", s.Counters["nacked"]},
		{"deadlettered", s.Counters["deadlettered"]}, {"deduplicated", s.Counters["deduplicated"]},
		{"oldest_ready_ms", s.OldestReadyMS},
	}
	c.W.Map(len(fields))
	for _, f := range fields {
		c.W.BulkString(f.name)
		c.W.Int(f.n)
	}
}

// QUEUE.CONFIG queue SET [VT ms] [MAXRECEIVES n] [DLQ name] [DEDUPWINDOW ms] [SHARDS n] | GET
func cmdQueueConfig(c *Ctx) {
	name := c.Args[1]
	var cfg coord.QueueConfig
	var err error
	switch op := strings.ToUpper(string(c.Args[2])); {
	case op == "GET" && len(c.Args) == 3:
		cfg, err = c.Srv.Coord.Queues.Config(c, name)
	case op == "SET" && len(c.Args) > 3:
		o, msg := parseQueueOpts(c.Args[3:], "VT", "MAXRECEIVES", "DLQ", "DEDUPWINDOW", "SHARDS")
		if msg != "" {
			c.W.Error(msg)
			return
		}
		var s coord.QueueSettings
		if _, ok := o.n["VT"]; ok {
			vt := o.ms("VT", 0)
			s.VT = &vt
		}
		if n, ok := o.n["MAXRECEIVES"]; ok {
			s.MaxReceives = &n
		}
		if _, ok := o.n["DEDUPWINDOW"]; ok {
			w := o.ms("DEDUPWINDOW", 0)
			s.DedupWindow = &w
		}
		if n, ok := o.n["SHARDS"]; ok {
			sh := int(n)
			s.Shards = &sh
		}
		if d, ok := o.bytes["DLQ"]; ok {
			s.DLQ = append([]byte{}, d...)
		}
		cfg, err = c.Srv.Coord.Queues.Configure(c, name, s)
		if err == nil {
			c.W.Simple("OK")
			return
		}
	default:
		c.W.Error(MsgSyntax)
		return
	}
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Map(5)
	c.W.BulkString("vt")
	c.W.Int(cfg.VT.Milliseconds())
	c.W.BulkString("maxreceives")
	c.W.Int(cfg.MaxReceives)
	c.W.BulkString("dlq")
	if cfg.DLQ == nil {
		c.W.Nil()
	} else {
		c.W.Bulk(cfg.DLQ)
	}
	c.W.BulkString("dedupwindow")
	c.W.Int(cfg.DedupWindow.Milliseconds())
	c.W.BulkString("shards")
	c.W.Int(int64(cfg.Shards))
}

// QUEUE.REDRIVE source destination [COUNT n]
func cmdQueueRedrive(c *Ctx) {
	count, msg := parseCount(c.Args[3:], 0, math.MaxInt64)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	n, err := c.Srv.Coord.Queues.Redrive(c, c.Args[1], c.Args[2], count, c.Now())
	if err != nil {
		c.Fail(err)
		return
	}
	if n > 0 {
		c.Srv.Coord.Woken(c.Args[2])
	}
	c.W.Int(n)
}

// QUEUE.PURGE queue
func cmdQueuePurge(c *Ctx) {
	n, err := c.Srv.Coord.Queues.Purge(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}
