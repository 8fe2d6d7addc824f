package commands

// Stream commands (XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XREAD,
// XINFO STREAM): they parse, call the stream operations of the model
// (model/stream.go, which describes the stream layout), and reply.
// Consumer groups are in streams_groups.go.

import (
	"fmt"
	"math"
	"time"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// Replies of the stream family (checked against redis-server 7.0.15).
const (
	msgStreamBadID         = "ERR Invalid stream ID specified as stream command argument"
	msgStreamIDTooSmall    = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	msgStreamIDZero        = "ERR The ID specified in XADD must be greater than 0-0"
	msgStreamExhausted     = "ERR The stream has exhausted the last possible ID, unable to add more items"
	msgStreamMaxlenMinid   = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
	msgStreamMaxlenNeg     = "ERR The MAXLEN argument must be >= 0."
	msgStreamLimitNeg      = "ERR The LIMIT argument must be >= 0."
	msgStreamLimitNoTrim   = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
	msgStreamLimitExact    = "ERR syntax error, LIMIT cannot be used without the special ~ option"
	msgStreamNoStrategy    = "ERR syntax error, XTRIM must be called with a trimming strategy"
	msgStreamBadStart      = "ERR invalid start ID for the interval"
	msgStreamBadEnd        = "ERR invalid end ID for the interval"
	msgStreamUnbalanced    = "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
	msgStreamGroupOpt      = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
	msgStreamNoackOpt      = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
	msgStreamGTID          = "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
	msgStreamBlockInScript = "ERR %s command is not allowed with BLOCK option from scripts"
)

// xreadBlockedCount is the COUNT of a blocked XREAD given none (Redis's
// XREAD_BLOCKED_DEFAULT_COUNT).
const xreadBlockedCount = 1000

// StreamCleanupLabel is the request label of the background deletion of
// trimmed stream entries.
const StreamCleanupLabel = model.StreamCleanupLabel

func registerStreams(t *Table) {
	t.Register([]Row{
		{Name: "xadd", Run: cmdXadd},
		{Name: "xlen", Run: cmdXlen},
		{Name: "xrange", Run: func(c *Ctx) { cmdXrange(c, false) }},
		{Name: "xrevrange", Run: func(c *Ctx) { cmdXrange(c, true) }},
		{Name: "xdel", Run: cmdXdel},
		{Name: "xtrim", Run: cmdXtrim},
		{Name: "xread", Run: cmdXread},
		{Name: "xinfo|stream", Run: cmdXinfoStream},
	})
	registerStreamGroups(t)
}

// writeEntry replies with one entry: [id, [field, value, ...]] (a pending
// entry no longer in the stream: [id, nil]).
func writeEntry(c *Ctx, e model.StreamEntry) {
	c.W.Array(2)
	c.W.BulkString(e.ID.String())
	if e.Gone {
		c.W.NilArray()
		return
	}
	c.W.Array(len(e.Fields))
	for _, f := range e.Fields {
		c.W.Bulk(f)
	}
}

func writeEntries(c *Ctx, es []model.StreamEntry) {
	c.W.Array(len(es))
	for _, e := range es {
		writeEntry(c, e)
	}
}

// startStreamCleanup runs in the background the deletion of trimmed
// members a stream write left (sc; nil: none).
func startStreamCleanup(c *Ctx, sc *model.StreamCleanup) {
	if sc == nil {
		return
	}
	srv := c.Srv
	go func() {
		time.Sleep(sc.Delay)
		_ = sc.Run(func() int64 { return srv.Now().UnixMilli() })
	}()
}

// ---- XADD, XTRIM ---------------------------------------------------------------------------

// parseAddOrTrim is streamParseAddOrTrimArgsOrReply; for XADD it also
// takes the id and the fields. nodeEntries is stream-node-max-entries.
func parseAddOrTrim(args [][]byte, xadd bool, nodeEntries int64) (model.XAddArgs, string) {
	var a model.XAddArgs
	i := 2
	limitGiven := false
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
		case argIs(opt, "maxlen") && more > 0, argIs(opt, "minid") && more > 0:
			if a.Trim.Strategy != 0 {
				return a, msgStreamMaxlenMinid
			}
			a.Trim.Approx = false
			next := args[i+1]
			if more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				a.Trim.Approx = next[0] == '~'
				i++
			}
			if argIs(opt, "maxlen") {
				n, ok := model.String2ll(args[i+1])
				if !ok {
					return a, MsgNotInt
				}
				if n < 0 {
					return a, msgStreamMaxlenNeg
				}
				a.Trim.MaxLen, a.Trim.Strategy = n, model.TrimMaxLen
			} else {
				id, _, ok := model.ParseStreamID(args[i+1], 0, true, false)
				if !ok {
					return a, msgStreamBadID
				}
				a.Trim.MinID, a.Trim.Strategy = id, model.TrimMinID
			}
			i++
			continue
		case argIs(opt, "limit") && more > 0:
			n, ok := model.String2ll(args[i+1])
			if !ok {
				return a, MsgNotInt
			}
			if n < 0 {
				return a, msgStreamLimitNeg
			}
			a.Trim.Limit, limitGiven = n, true
			i++
			continue
		case xadd && argIs(opt, "nomkstream"):
			a.NoMkStream = true
			continue
		case xadd:
			id, seqGiven, ok := model.ParseStreamID(opt, 0, true, true)
			if !ok {
				return a, msgStreamBadID
			}
			a.ID, a.SeqGiven, a.IDGiven = id, seqGiven, true
		default:
			return a, MsgSyntax
		}
		break
	}
	if a.Trim.Limit != 0 && a.Trim.Strategy == 0 {
		return a, msgStreamLimitNoTrim
	}
	if !xadd && a.Trim.Strategy == 0 {
		return a, msgStreamNoStrategy
	}
	switch {
	case limitGiven && !a.Trim.Approx:
		return a, msgStreamLimitExact
	case !limitGiven && a.Trim.Approx:
		// At most 100 nodes, within Redis's bounds.
		a.Trim.Limit = 100 * nodeEntries
		if a.Trim.Limit <= 0 || nodeEntries > math.MaxInt64/100 {
			a.Trim.Limit = 10000
		}
		a.Trim.Limit = min(a.Trim.Limit, 1000000)
	case !limitGiven:
		a.Trim.Limit = 0
	}
	if xadd {
		fields := len(args) - (i + 1)
		if fields < 2 || fields%2 == 1 {
			return a, ErrWrongArgs("xadd")
		}
		a.Fields = args[i+1:]
	}
	return a, ""
}

func cmdXadd(c *Ctx) {
	a, msg := parseAddOrTrim(c.Args, true, c.Srv.encoding().params.streamNodeEntries)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	if a.IDGiven && a.SeqGiven && a.ID == (model.StreamID{}) {
		c.W.Error(msgStreamIDZero)
		return
	}
	key := c.Args[1]
	unlock := c.lockKeys(key)
	added, trimmed, ok, sc, err := model.XAdd(c, key, a)
	unlock()
	startStreamCleanup(c, sc)
	switch {
	case err != nil:
		c.Fail(collErr(err))
	case !ok:
		c.W.Nil() // NOMKSTREAM of a missing key
	default:
		c.W.BulkString(added.String())
		c.Notify(events.Stream, "xadd", key)
		if trimmed > 0 {
			c.Notify(events.Stream, "xtrim", key)
		}
		c.wake(key)
	}
}

func cmdXtrim(c *Ctx) {
	a, msg := parseAddOrTrim(c.Args, false, c.Srv.encoding().params.streamNodeEntries)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	unlock := c.lockKeys(c.Args[1])
	deleted, sc, err := model.XTrim(c, c.Args[1], a.Trim)
	unlock()
	startStreamCleanup(c, sc)
	if err != nil {
		c.Fail(err)
		return
	}
	if deleted > 0 {
		c.Notify(events.Stream, "xtrim", c.Args[1])
	}
	c.W.Int(deleted)
}

// ---- XDEL ----------------------------------------------------------------------------------

func cmdXdel(c *Ctx) {
	unlock := c.lockKeys(c.Args[1])
	deleted, err := model.XDel(c, c.Args[1], c.Args[2:])
	unlock()
	if err != nil {
		c.Fail(collErr(err))
		return
	}
	if deleted > 0 {
		c.Notify(events.Stream, "xdel", c.Args[1])
	}
	c.W.Int(deleted)
}

// ---- reads -----------------------------------------------------------------------------------

func cmdXlen(c *Ctx) {
	n, err := model.XLen(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}

func cmdXrange(c *Ctx, rev bool) {
	startArg, endArg := c.Args[2], c.Args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, startEx, ok := model.ParseIntervalID(startArg, 0)
	if !ok {
		c.W.Error(msgStreamBadID)
		return
	}
	if startEx {
		if start, ok = start.Incr(); !ok {
			c.W.Error(msgStreamBadStart)
			return
		}
	}
	end, endEx, ok := model.ParseIntervalID(endArg, math.MaxUint64)
	if !ok {
		c.W.Error(msgStreamBadID)
		return
	}
	if endEx {
		if end, ok = end.Decr(); !ok {
			c.W.Error(msgStreamBadEnd)
			return
		}
	}
	count := int64(-1)
	for j := 4; j < len(c.Args); j++ {
		if !argIs(c.Args[j], "count") || j+1 >= len(c.Args) {
			c.W.Error(MsgSyntax)
			return
		}
		n, ok := model.String2ll(c.Args[j+1])
		if !ok {
			c.W.Error(MsgNotInt)
			return
		}
		count = max(n, 0)
		j++
	}
	out, exists, err := model.XRange(c, c.Args[1], start, end, rev, count)
	switch {
	case err != nil:
		c.Fail(err)
	case exists && count == 0:
		c.W.NilArray()
	default:
		writeEntries(c, out)
	}
}

// cmdXinfoStream is XINFO STREAM key [FULL [COUNT count]]. As in Redis,
// the key is looked up (no such key, WRONGTYPE) before the options are
// read.
func cmdXinfoStream(c *Ctx) {
	info, err := model.XInfo(c, c.Args[2])
	switch {
	case err != nil:
		c.Fail(err)
		return
	case info == nil:
		c.W.Error(MsgNoSuchKey)
		return
	}
	if opts := c.Args[3:]; len(opts) > 0 {
		syntax := ErrSubcommandSyntax(string(c.Args[0]), string(c.Args[1]))
		if (len(opts) != 1 && len(opts) != 3) || !argIs(opts[0], "full") || (len(opts) == 3 && !argIs(opts[1], "count")) {
			c.W.Error(syntax)
			return
		}
		count := int64(xinfoFullDefaultCount)
		if len(opts) == 3 {
			n, ok := model.String2ll(opts[2])
			if !ok {
				c.W.Error(MsgNotInt)
				return
			}
			if n >= 0 {
				count = n
			}
		}
		xinfoStreamFull(c, count)
		return
	}
	c.W.Map(10)
	writeStreamInfoHead(c, info)
	c.W.BulkString("groups")
	c.W.Int(info.Groups)
	for i, e := range []*model.StreamEntry{info.First, info.Last} {
		c.W.BulkString([]string{"first-entry", "last-entry"}[i])
		if e == nil {
			c.W.Nil()
		} else {
			writeEntry(c, *e)
		}
	}
}

// writeStreamInfoHead replies with the fields XINFO STREAM and its FULL
// form share.
func writeStreamInfoHead(c *Ctx, info *model.StreamInfo) {
	c.W.BulkString("length")
	c.W.Int(info.Length)
	c.W.BulkString("radix-tree-keys")
	c.W.Int(info.RadixTreeKeys)
	c.W.BulkString("radix-tree-nodes")
	c.W.Int(info.RadixTreeNodes)
	c.W.BulkString("last-generated-id")
	c.W.BulkString(info.LastID.String())
	c.W.BulkString("max-deleted-entry-id")
	c.W.BulkString(info.MaxDeletedID.String())
	c.W.BulkString("entries-added")
	c.W.Int(info.EntriesAdded)
	c.W.BulkString("recorded-first-entry-id")
	c.W.BulkString(info.FirstID.String())
}

// ---- XREAD ---------------------------------------------------------------------------------

// xreadArgs is a parsed XREAD or XREADGROUP.
type xreadArgs struct {
	block           bool
	blockMS         int64
	count           int64
	keys            [][]byte
	ids             [][]byte
	group, consumer []byte
	noack           bool
}

// parseXreadArgs parses XREAD, or XREADGROUP when group.
func parseXreadArgs(args [][]byte, inScript, group bool) (xreadArgs, string) {
	var a xreadArgs
	streamsAt := 0
	for i := 1; i < len(args) && streamsAt == 0; i++ {
		more := len(args) - i - 1
		switch o := args[i]; {
		case argIs(o, "block") && more > 0:
			if inScript {
				// Redis refuses it as it reads the option, naming the
				// command as the script wrote it.
				return a, fmt.Sprintf(msgStreamBlockInScript, args[0])
			}
			i++
			n, ok := model.String2ll(args[i])
			if !ok {
				return a, MsgTimeoutNotInt
			}
			if n < 0 {
				return a, MsgNegativeTimeout
			}
			a.block, a.blockMS = true, n
		case argIs(o, "count") && more > 0:
			i++
			n, ok := model.String2ll(args[i])
			if !ok {
				return a, MsgNotInt
			}
			a.count = max(n, 0)
		case argIs(o, "streams") && more > 0:
			streamsAt = i + 1
			if (len(args)-streamsAt)%2 != 0 {
				return a, msgStreamUnbalanced
			}
		case argIs(o, "group") && more >= 2:
			if !group {
				return a, msgStreamGroupOpt
			}
			a.group, a.consumer = args[i+1], args[i+2]
			i += 2
		case argIs(o, "noack"):
			if !group {
				return a, msgStreamNoackOpt
			}
			a.noack = true
		default:
			return a, MsgSyntax
		}
	}
	if streamsAt == 0 {
		return a, MsgSyntax
	}
	if group && a.group == nil {
		return a, msgXreadgroupNoGroup
	}
	n := (len(args) - streamsAt) / 2
	a.keys, a.ids = args[streamsAt:streamsAt+n], args[streamsAt+n:]
	return a, ""
}

// wait is BLOCK of XREAD and XREADGROUP once their first attempt found
// nothing: attempt runs again (quietly, on its own context) whenever one
// of the keys changes, until it finds entries or fails, or the block ends.
// blockWith's poller hands over the key item it read, which ready judges.
func (a xreadArgs) wait(c *Ctx, ready func(key string, it model.Item, nowMS int64) bool, attempt func(ac *Ctx) (found bool, err error)) error {
	isReady := func(k dbKey, it model.Item, nowMS int64) bool { return ready(k.key, it, nowMS) }
	_, err := blockWith(c, a.keys, a.blockMS, isReady, func(quiet bool) (bool, error) {
		if !quiet {
			return false, nil // the first attempt found nothing
		}
		ac, live := blockAttempt(c)
		if !live {
			return false, nil
		}
		return attempt(ac)
	})
	return err
}

func cmdXread(c *Ctx) {
	a, msg := parseXreadArgs(c.Args, c.InScript, false)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	s := &model.XReadState{Keys: a.keys, IDs: a.ids}
	var out []model.XReadResult
	attempt := func(ac *Ctx, quiet bool) error {
		count := a.count
		if quiet && count == 0 {
			count = xreadBlockedCount
		}
		var err error
		out, err = model.XRead(ac, s, count, quiet)
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
		c.Fail(collErr(err))
		return
	}
	writeXreadReply(c, out)
}

// writeXreadReply replies with what XREAD or XREADGROUP found: per key
// its entries (a map in RESP3), a null array when nothing.
func writeXreadReply(c *Ctx, out []model.XReadResult) {
	if len(out) == 0 {
		c.W.NilArray()
		return
	}
	if c.W.Proto() == 3 {
		c.W.Map(len(out))
	} else {
		c.W.Array(len(out))
	}
	for _, r := range out {
		if c.W.Proto() != 3 {
			c.W.Array(2)
		}
		c.W.Bulk(r.Key)
		writeEntries(c, r.Entries)
	}
}
