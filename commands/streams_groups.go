package commands

// Stream consumer group commands (XGROUP, XREADGROUP, XACK, XPENDING,
// XCLAIM, XAUTOCLAIM, XINFO GROUPS|CONSUMERS|HELP, XSETID): they parse as
// Redis 7.0.15's t_stream.c does (some arguments only once the key or group
// is found, as Redis), call the group operations of the model
// (model/stream_groups.go, which describes where groups live), and reply.

import (
	"errors"
	"fmt"
	"math"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// Replies of the consumer group commands (checked against redis-server
// 7.0.15).
const (
	msgGroupNeedsKey       = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	msgBusyGroup           = "BUSYGROUP Consumer Group name already exists"
	msgEntriesReadNeg      = "ERR value for ENTRIESREAD must be positive or -1"
	msgXreadgroupNoGroup   = "ERR Missing GROUP option for XREADGROUP"
	msgXreadgroupDollar    = "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."
	msgGroupGone           = "NOGROUP the consumer group this client was blocked on no longer exists"
	msgGroupKeyGone        = "UNBLOCKED the stream key no longer exists"
	msgXSetIDAddedNeg      = "ERR entries_added must be positive"
	msgXSetIDMaxDel        = "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
	msgXSetIDSmall         = "ERR The ID specified in XSETID is smaller than the target stream top item"
	msgXSetIDAdded         = "ERR The entries_added specified in XSETID is smaller than the target stream length"
	msgXclaimMinIdle       = "ERR Invalid min-idle-time argument for XCLAIM"
	msgXclaimIdle          = "ERR Invalid IDLE option argument for XCLAIM"
	msgXclaimTime          = "ERR Invalid TIME option argument for XCLAIM"
	msgXclaimRetry         = "ERR Invalid RETRYCOUNT option argument for XCLAIM"
	msgXautoclaimMinIdle   = "ERR Invalid min-idle-time argument for XAUTOCLAIM"
	msgXautoclaimCount     = "ERR COUNT must be > 0"
	msgStreamGroupsTooBig  = "ERR the consumer groups of this stream outgrow what redamo keeps with a key (delete consumers or groups)"
	xinfoFullDefaultCount  = 10
	xautoclaimDefaultCount = 100
)

func registerStreamGroups(t *Table) {
	t.Register([]Row{
		{Name: "xgroup|create", Run: cmdXgroup},
		{Name: "xgroup|setid", Run: cmdXgroup},
		{Name: "xgroup|destroy", Run: cmdXgroup},
		{Name: "xgroup|createconsumer", Run: cmdXgroup},
		{Name: "xgroup|delconsumer", Run: cmdXgroup},
		{Name: "xgroup|help", Run: cmdXgroupHelp},
		{Name: "xreadgroup", Run: cmdXreadgroup},
		{Name: "xack", Run: cmdXack},
		{Name: "xpending", Run: cmdXpending},
		{Name: "xclaim", Run: cmdXclaim},
		{Name: "xautoclaim", Run: cmdXautoclaim},
		{Name: "xsetid", Run: cmdXsetid},
		{Name: "xinfo|groups", Run: cmdXinfoGroups},
		{Name: "xinfo|consumers", Run: cmdXinfoConsumers},
		{Name: "xinfo|help", Run: cmdXinfoHelp},
	})
}

// streamNodeLimits are stream-node-max-bytes and -entries, as CONFIG SET
// left them.
func (s *Server) streamNodeLimits() (maxBytes, maxEntries int64) {
	p := s.encoding().params
	return p.streamNodeBytes, p.streamNodeEntries
}

// errName is a key or group name as Redis prints it with %s: up to its
// first NUL byte.
func errName(b []byte) string { return string(cPrefix(b, len(b))) }

// groupErr maps the group operations' errors; noGroup is the command's
// NOGROUP reply.
func groupErr(err error, noGroup string) error {
	switch {
	case errors.Is(err, model.ErrNoGroup):
		return redisError(noGroup)
	case errors.Is(err, model.ErrGroupNeedsKey):
		return redisError(msgGroupNeedsKey)
	case errors.Is(err, model.ErrBusyGroup):
		return redisError(msgBusyGroup)
	case errors.Is(err, model.ErrGroupDollarID):
		return redisError(msgXreadgroupDollar)
	case errors.Is(err, model.ErrGroupGone):
		return redisError(msgGroupGone)
	case errors.Is(err, model.ErrGroupKeyGone):
		return redisError(msgGroupKeyGone)
	case errors.Is(err, model.ErrXSetIDSmall):
		return redisError(msgXSetIDSmall)
	case errors.Is(err, model.ErrXSetIDAdded):
		return redisError(msgXSetIDAdded)
	case errors.Is(err, model.ErrStreamGroupsTooBig):
		return redisError(msgStreamGroupsTooBig)
	}
	return collErr(err)
}

// noGroupFor is the NOGROUP reply naming key and group ("No such key ...
// or consumer group ...").
func noGroupFor(key, group []byte) string {
	return fmt.Sprintf("NOGROUP No such key '%s' or consumer group '%s'", errName(key), errName(group))
}

// noGroupOfKey is the NOGROUP reply of XGROUP and XINFO CONSUMERS.
func noGroupOfKey(key, group []byte) string {
	return fmt.Sprintf("NOGROUP No such consumer group '%s' for key name '%s'", errName(group), errName(key))
}

// ---- XGROUP ----------------------------------------------------------------------------------

func cmdXgroupHelp(c *Ctx) {
	writeHelp(c, "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CREATE <key> <groupname> <id|$> [option]",
		"    Create a new consumer group. Options are:",
		"    * MKSTREAM",
		"      Create the empty stream if it does not exist.",
		"    * ENTRIESREAD entries_read",
		"      Set the group's entries_read counter (internal use).",
		"CREATECONSUMER <key> <groupname> <consumer>",
		"    Create a new consumer in the specified group.",
		"DELCONSUMER <key> <groupname> <consumer>",
		"    Remove the specified consumer.",
		"DESTROY <key> <groupname>",
		"    Remove the specified group.",
		"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
		"    Set the current group ID and entries_read counter.",
	)
}

// cmdXgroup is xgroupCommand: the options, then the key and group, then
// the subcommand's own argument count, then its work.
func cmdXgroup(c *Ctx) {
	sub := string(c.Args[1])
	create, setid := argIs(c.Args[1], "create"), argIs(c.Args[1], "setid")
	a := model.XGroupArgs{EntriesRead: model.InvalidEntriesRead}
	syntax := ErrSubcommandSyntax(string(c.Args[0]), sub)
	for i := 5; i < len(c.Args); {
		switch {
		case create && argIs(c.Args[i], "mkstream"):
			a.MkStream = true
			i++
		case (create || setid) && argIs(c.Args[i], "entriesread") && i+1 < len(c.Args):
			n, ok := model.String2ll(c.Args[i+1])
			if !ok {
				c.W.Error(MsgNotInt)
				return
			}
			if n < 0 && n != model.InvalidEntriesRead {
				c.W.Error(msgEntriesReadNeg)
				return
			}
			a.EntriesRead = n
			i += 2
		default:
			c.W.Error(syntax)
			return
		}
	}
	key, group := c.Args[2], c.Args[3]
	n := len(c.Args)
	argsOK := true
	switch {
	case create:
		argsOK = n >= 5 && n <= 8
	case setid:
		argsOK = n == 5 || n == 7
	}
	if len(c.Args) > 4 {
		a.ID = c.Args[4]
	}
	noGroup := noGroupOfKey(key, group)
	if !argsOK {
		// Redis looks the key and group up first.
		err := model.XGroupCheck(c, key, group, setid, a.MkStream)
		if err != nil {
			c.Fail(groupErr(err, noGroup))
		} else {
			c.W.Error(syntax)
		}
		return
	}
	unlock := c.lockKeys(key)
	defer unlock()
	switch {
	case create:
		if err := model.XGroupCreate(c, key, group, a); err != nil {
			c.Fail(groupErr(err, noGroup))
			return
		}
		c.W.Simple("OK")
		c.Notify(events.Stream, "xgroup-create", key)
	case setid:
		if err := model.XGroupSetID(c, key, group, a); err != nil {
			c.Fail(groupErr(err, noGroup))
			return
		}
		c.W.Simple("OK")
		c.Notify(events.Stream, "xgroup-setid", key)
	case argIs(c.Args[1], "destroy"):
		destroyed, err := model.XGroupDestroy(c, key, group)
		if err != nil {
			c.Fail(groupErr(err, noGroup))
			return
		}
		if !destroyed {
			c.W.Int(0)
			return
		}
		c.W.Int(1)
		c.Notify(events.Stream, "xgroup-destroy", key)
		c.wake(key) // blocked XREADGROUPs of the group fail with NOGROUP
	case argIs(c.Args[1], "createconsumer"):
		created, err := model.XGroupCreateConsumer(c, key, group, c.Args[4])
		if err != nil {
			c.Fail(groupErr(err, noGroup))
			return
		}
		if !created {
			c.W.Int(0)
			return
		}
		// Redis notifies as it creates the consumer, before its reply.
		c.Notify(events.Stream, "xgroup-createconsumer", key)
		c.W.Int(1)
	default: // delconsumer
		pending, deleted, err := model.XGroupDelConsumer(c, key, group, c.Args[4])
		if err != nil {
			c.Fail(groupErr(err, noGroup))
			return
		}
		if deleted {
			c.Notify(events.Stream, "xgroup-delconsumer", key) // before the reply, as Redis
		}
		c.W.Int(pending)
	}
}

// ---- XSETID -----------------------------------------------------------------------------------

func cmdXsetid(c *Ctx) {
	id, _, ok := model.ParseStreamID(c.Args[2], 0, true, false)
	if !ok {
		c.W.Error(msgStreamBadID)
		return
	}
	added := int64(-1)
	var maxDel model.StreamID
	for i := 3; i < len(c.Args); i += 2 {
		more := len(c.Args) - 1 - i
		switch {
		case argIs(c.Args[i], "entriesadded") && more > 0:
			n, ok := model.String2ll(c.Args[i+1])
			if !ok {
				c.W.Error(MsgNotInt)
				return
			}
			if n < 0 {
				c.W.Error(msgXSetIDAddedNeg)
				return
			}
			added = n
		case argIs(c.Args[i], "maxdeletedid") && more > 0:
			if maxDel, _, ok = model.ParseStreamID(c.Args[i+1], 0, true, false); !ok {
				c.W.Error(msgStreamBadID)
				return
			}
			if id.Cmp(maxDel) < 0 {
				c.W.Error(msgXSetIDMaxDel)
				return
			}
		default:
			c.W.Error(MsgSyntax)
			return
		}
	}
	unlock := c.lockKeys(c.Args[1])
	err := model.XSetID(c, c.Args[1], id, added, maxDel)
	unlock()
	if err != nil {
		c.Fail(groupErr(err, ""))
		return
	}
	c.W.Simple("OK")
	c.Notify(events.Stream, "xsetid", c.Args[1])
}

// ---- XREADGROUP -------------------------------------------------------------------------------

func cmdXreadgroup(c *Ctx) {
	a, msg := parseXreadArgs(c.Args, c.InScript, true)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	s := &model.XReadGroupState{Keys: a.keys, IDs: a.ids, Group: a.group, Consumer: a.consumer, NoAck: a.noack}
	var out []model.XReadResult
	attempt := func(ac *Ctx, blocked bool) error {
		count := a.count
		if blocked && count == 0 {
			count = xreadBlockedCount
		}
		var err error
		unlock := ac.lockKeys(a.keys...)
		out, err = model.XReadGroup(ac, s, count, blocked)
		unlock()
		for _, k := range s.CreatedConsumerAt {
			ac.Notify(events.Stream, "xgroup-createconsumer", k)
		}
		return err
	}
	err := attempt(c, false)
	if err == nil && len(out) == 0 && a.block && !c.InTx {
		err = a.wait(c, s.Ready, func(ac *Ctx) (bool, error) {
			err := attempt(ac, true)
			return len(out) > 0, err
		})
	}
	if err != nil {
		if errors.Is(err, model.ErrNoGroup) {
			c.W.Error(fmt.Sprintf("NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP option", errName(s.FailedKey), errName(a.group)))
			return
		}
		c.Fail(groupErr(err, ""))
		return
	}
	writeXreadReply(c, out)
}

// ---- XACK -----------------------------------------------------------------------------------------

func cmdXack(c *Ctx) {
	parse := func() ([]model.StreamID, error) {
		ids := make([]model.StreamID, 0, len(c.Args)-3)
		for _, arg := range c.Args[3:] {
			id, _, ok := model.ParseStreamID(arg, 0, true, false)
			if !ok {
				return nil, model.ErrStreamBadID
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	unlock := c.lockKeys(c.Args[1])
	n, err := model.XAck(c, c.Args[1], c.Args[2], parse)
	unlock()
	if err != nil {
		c.Fail(groupErr(err, ""))
		return
	}
	c.W.Int(n)
}

// ---- XPENDING -------------------------------------------------------------------------------------

func cmdXpending(c *Ctx) {
	args := c.Args
	if len(args) != 3 && (len(args) < 6 || len(args) > 9) {
		c.W.Error(MsgSyntax)
		return
	}
	var r *model.XPendingRange
	if len(args) >= 6 {
		r = &model.XPendingRange{}
		at := 3
		if argIs(args[3], "idle") {
			n, ok := model.String2ll(args[4])
			if !ok {
				c.W.Error(MsgNotInt)
				return
			}
			r.MinIdle = n
			if len(args) < 8 {
				c.W.Error(MsgSyntax)
				return
			}
			at += 2
		}
		n, ok := model.String2ll(args[at+2])
		if !ok {
			c.W.Error(MsgNotInt)
			return
		}
		r.Count = max(n, 0)
		start, ex, ok := model.ParseIntervalID(args[at], 0)
		if !ok {
			c.W.Error(msgStreamBadID)
			return
		}
		if ex {
			if start, ok = start.Incr(); !ok {
				c.W.Error(msgStreamBadStart)
				return
			}
		}
		end, ex, ok := model.ParseIntervalID(args[at+1], math.MaxUint64)
		if !ok {
			c.W.Error(msgStreamBadID)
			return
		}
		if ex {
			if end, ok = end.Decr(); !ok {
				c.W.Error(msgStreamBadEnd)
				return
			}
		}
		r.Start, r.End = start, end
		if at+3 < len(args) {
			r.Consumer = args[at+3]
		}
	}
	sum, entries, err := model.XPending(c, args[1], args[2], r)
	if err != nil {
		c.Fail(groupErr(err, noGroupFor(args[1], args[2])))
		return
	}
	if r == nil {
		c.W.Array(4)
		c.W.Int(sum.Count)
		if sum.Count == 0 {
			c.W.Nil()
			c.W.Nil()
			c.W.NilArray()
			return
		}
		c.W.BulkString(sum.First.String())
		c.W.BulkString(sum.Last.String())
		c.W.Array(len(sum.Consumers))
		for _, cs := range sum.Consumers {
			c.W.Array(2)
			c.W.BulkString(cs.Name)
			c.W.BulkString(fmt.Sprint(cs.Pending))
		}
		return
	}
	c.W.Array(len(entries))
	for _, e := range entries {
		c.W.Array(4)
		c.W.BulkString(e.ID.String())
		c.W.BulkString(e.Consumer)
		c.W.Int(e.Idle)
		c.W.Int(e.Count)
	}
}

// ---- XCLAIM, XAUTOCLAIM -------------------------------------------------------------------------

// parseXclaim is xclaimCommand's parsing after the group lookup: the
// min-idle-time, the ids up to the first argument that is not one, then
// the options.
func parseXclaim(args [][]byte) (model.XClaimArgs, string) {
	a := model.XClaimArgs{RetryCount: -1}
	n, ok := model.String2ll(args[4])
	if !ok {
		return a, msgXclaimMinIdle
	}
	a.MinIdle = max(n, 0)
	j := 5
	for ; j < len(args); j++ {
		id, _, ok := model.ParseStreamID(args[j], 0, true, false)
		if !ok {
			break
		}
		a.IDs = append(a.IDs, id)
	}
	for ; j < len(args); j++ {
		more := len(args) - 1 - j
		opt := args[j]
		switch {
		case argIs(opt, "force"):
			a.Force = true
		case argIs(opt, "justid"):
			a.JustID = true
		case argIs(opt, "idle") && more > 0:
			j++
			v, ok := model.String2ll(args[j])
			if !ok {
				return a, msgXclaimIdle
			}
			a.Idle, a.IdleGiven, a.TimeGiven = v, true, false
		case argIs(opt, "time") && more > 0:
			j++
			v, ok := model.String2ll(args[j])
			if !ok {
				return a, msgXclaimTime
			}
			a.Time, a.TimeGiven, a.IdleGiven = v, true, false
		case argIs(opt, "retrycount") && more > 0:
			j++
			v, ok := model.String2ll(args[j])
			if !ok {
				return a, msgXclaimRetry
			}
			a.RetryCount = v
		case argIs(opt, "lastid") && more > 0:
			j++
			id, _, ok := model.ParseStreamID(args[j], 0, true, false)
			if !ok {
				return a, msgStreamBadID
			}
			a.LastID = id
		default:
			return a, fmt.Sprintf("ERR Unrecognized XCLAIM option '%s'", errName(opt))
		}
	}
	return a, ""
}

func cmdXclaim(c *Ctx) {
	key, group := c.Args[1], c.Args[2]
	var justID bool
	parse := func() (model.XClaimArgs, error) {
		a, msg := parseXclaim(c.Args)
		if msg != "" {
			return a, redisError(msg)
		}
		justID = a.JustID
		return a, nil
	}
	unlock := c.lockKeys(key)
	out, created, err := model.XClaim(c, key, group, c.Args[3], parse)
	unlock()
	if err != nil {
		c.Fail(groupErr(err, noGroupFor(key, group)))
		return
	}
	writeClaimed(c, out, justID)
	if created {
		c.Notify(events.Stream, "xgroup-createconsumer", key)
	}
}

// writeClaimed replies with claimed entries, or only their ids.
func writeClaimed(c *Ctx, es []model.StreamEntry, justID bool) {
	c.W.Array(len(es))
	for _, e := range es {
		if justID {
			c.W.BulkString(e.ID.String())
		} else {
			writeEntry(c, e)
		}
	}
}

func cmdXautoclaim(c *Ctx) {
	args := c.Args
	minIdle, ok := model.String2ll(args[4])
	if !ok {
		c.W.Error(msgXautoclaimMinIdle)
		return
	}
	minIdle = max(minIdle, 0)
	start, ex, ok := model.ParseIntervalID(args[5], 0)
	if !ok {
		c.W.Error(msgStreamBadID)
		return
	}
	if ex {
		if start, ok = start.Incr(); !ok {
			c.W.Error(msgStreamBadStart)
			return
		}
	}
	count, justID := int64(xautoclaimDefaultCount), false
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case argIs(args[j], "count") && more > 0:
			n, ok := model.String2ll(args[j+1])
			if !ok || n < 1 || n > math.MaxInt64/16 {
				c.W.Error(msgXautoclaimCount)
				return
			}
			count = n
			j++
		case argIs(args[j], "justid"):
			justID = true
		default:
			c.W.Error(MsgSyntax)
			return
		}
	}
	key, group := args[1], args[2]
	unlock := c.lockKeys(key)
	res, err := model.XAutoClaim(c, key, group, args[3], minIdle, start, count, justID)
	unlock()
	if err != nil {
		c.Fail(groupErr(err, noGroupFor(key, group)))
		return
	}
	c.W.Array(3)
	c.W.BulkString(res.Next.String())
	writeClaimed(c, res.Claimed, justID)
	c.W.Array(len(res.Deleted))
	for _, id := range res.Deleted {
		c.W.BulkString(id.String())
	}
	if res.Created {
		c.Notify(events.Stream, "xgroup-createconsumer", key)
	}
}

// ---- XINFO ----------------------------------------------------------------------------------------

func cmdXinfoHelp(c *Ctx) {
	writeHelp(c, "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CONSUMERS <key> <groupname>",
		"    Show consumers of <groupname>.",
		"GROUPS <key>",
		"    Show the stream consumer groups.",
		"STREAM <key> [FULL [COUNT <count>]",
		"    Show information about the stream.",
	)
}

// writeEntriesRead replies with a group's entries-read (null when unknown).
func writeGroupCounters(c *Ctx, g model.XGroupInfo) {
	c.W.BulkString("entries-read")
	if g.EntriesRead == model.InvalidEntriesRead {
		c.W.Nil()
	} else {
		c.W.Int(g.EntriesRead)
	}
	c.W.BulkString("lag")
	if g.LagKnown {
		c.W.Int(g.Lag)
	} else {
		c.W.Nil()
	}
}

func cmdXinfoGroups(c *Ctx) {
	groups, exists, err := model.XInfoGroups(c, c.Args[2])
	switch {
	case err != nil:
		c.Fail(err)
		return
	case !exists:
		c.W.Error(MsgNoSuchKey)
		return
	}
	c.W.Array(len(groups))
	for _, g := range groups {
		c.W.Map(6)
		c.W.BulkString("name")
		c.W.BulkString(g.Name)
		c.W.BulkString("consumers")
		c.W.Int(g.Consumers)
		c.W.BulkString("pending")
		c.W.Int(g.Pending)
		c.W.BulkString("last-delivered-id")
		c.W.BulkString(g.LastDeliveredID.String())
		writeGroupCounters(c, g)
	}
}

func cmdXinfoConsumers(c *Ctx) {
	key, group := c.Args[2], c.Args[3]
	cs, exists, err := model.XInfoConsumers(c, key, group)
	switch {
	case err != nil:
		c.Fail(groupErr(err, noGroupOfKey(key, group)))
		return
	case !exists:
		c.W.Error(MsgNoSuchKey)
		return
	}
	c.W.Array(len(cs))
	for _, x := range cs {
		c.W.Map(3)
		c.W.BulkString("name")
		c.W.BulkString(x.Name)
		c.W.BulkString("pending")
		c.W.Int(x.Pending)
		c.W.BulkString("idle")
		c.W.Int(x.Idle)
	}
}

// xinfoStreamFull is XINFO STREAM key FULL [COUNT count], its options
// already parsed.
func xinfoStreamFull(c *Ctx, count int64) {
	info, err := model.XInfoFull(c, c.Args[2], count)
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Map(9)
	writeStreamInfoHead(c, &info.StreamInfo)
	c.W.BulkString("entries")
	writeEntries(c, info.Entries)
	c.W.BulkString("groups")
	c.W.Array(len(info.Groups))
	for _, g := range info.Groups {
		c.W.Map(7)
		c.W.BulkString("name")
		c.W.BulkString(g.Name)
		c.W.BulkString("last-delivered-id")
		c.W.BulkString(g.LastDeliveredID.String())
		writeGroupCounters(c, g)
		c.W.BulkString("pel-count")
		c.W.Int(g.Pending)
		c.W.BulkString("pending")
		c.W.Array(len(g.PendingEntries))
		for _, p := range g.PendingEntries {
			c.W.Array(4)
			c.W.BulkString(p.ID.String())
			c.W.BulkString(p.Consumer)
			c.W.Int(p.Delivered)
			c.W.Int(p.Count)
		}
		c.W.BulkString("consumers")
		c.W.Array(len(g.ConsumersDetails))
		for _, cs := range g.ConsumersDetails {
			c.W.Map(4)
			c.W.BulkString("name")
			c.W.BulkString(cs.Name)
			c.W.BulkString("seen-time")
			c.W.Int(cs.SeenTime)
			c.W.BulkString("pel-count")
			c.W.Int(cs.Pending)
			c.W.BulkString("pending")
			c.W.Array(len(cs.Entries))
			for _, p := range cs.Entries {
				c.W.Array(3)
				c.W.BulkString(p.ID.String())
				c.W.Int(p.Delivered)
				c.W.Int(p.Count)
			}
		}
	}
}
