package commands

import (
	"fmt"
	"math"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

func registerStrings(t *Table) {
	t.Register([]Row{
		{Name: "get", Run: cmdGet},
		{Name: "set", Run: cmdSet, Replaces: true},
		{Name: "setnx", Run: cmdSetNX},
		{Name: "setex", Run: cmdSetEX, Replaces: true},
		{Name: "psetex", Run: cmdPSetEX, Replaces: true},
		{Name: "getset", Run: cmdGetSet},
		{Name: "getdel", Run: cmdGetDel},
		{Name: "getex", Run: cmdGetEx},
		{Name: "mget", Run: cmdMGet},
		{Name: "mset", Run: cmdMSet},
		{Name: "msetnx", Run: cmdMSetNX},
		{Name: "append", Run: cmdAppend},
		{Name: "strlen", Run: cmdStrlen},
		{Name: "getrange", Run: cmdGetRange},
		{Name: "substr", Run: cmdGetRange},
		{Name: "setrange", Run: cmdSetRange},
		{Name: "incr", Run: cmdIncr, ReadsFirst: true},
		{Name: "decr", Run: cmdDecr, ReadsFirst: true},
		{Name: "incrby", Run: cmdIncrBy, ReadsFirst: true},
		{Name: "decrby", Run: cmdDecrBy, ReadsFirst: true},
		{Name: "incrbyfloat", Run: cmdIncrByFloat, ReadsFirst: true},
	})
}

// ---- GET family ------------------------------------------------------------

func cmdGet(c *Ctx) {
	ks, err := readKey(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	notifyMiss(c, ks, c.Args[1])
	replyStringValue(c, ks)
}

// notifyMiss reports a read of key that found nothing (Redis's
// lookupKeyRead raising "keymiss").
func notifyMiss(c *Ctx, ks model.KeyState, key []byte) {
	if !ks.Live {
		c.NotifyKeyMiss(key)
	}
}

// replyStringValue replies with a string key's value: nil when absent,
// WRONGTYPE when it holds another type.
func replyStringValue(c *Ctx, ks model.KeyState) {
	switch {
	case !ks.Live:
		c.W.Nil()
	case ks.Type != model.TypeString:
		c.W.Error(MsgWrongType)
	default:
		v, err := ks.StringValue()
		if err != nil {
			c.Fail(err)
			return
		}
		c.W.Bulk(v)
	}
}

func cmdStrlen(c *Ctx) {
	ks, err := readKey(c, c.Args[1])
	if err == nil {
		notifyMiss(c, ks, c.Args[1])
	}
	switch {
	case err != nil:
		c.Fail(err)
	case !ks.Live:
		c.W.Int(0)
	case ks.Type != model.TypeString:
		c.W.Error(MsgWrongType)
	default:
		c.W.Int(ks.StringLen())
	}
}

func cmdGetRange(c *Ctx) {
	start, ok1 := model.String2ll(c.Args[2])
	end, ok2 := model.String2ll(c.Args[3])
	if !ok1 || !ok2 {
		c.W.Error(MsgNotInt)
		return
	}
	ks, err := readKey(c, c.Args[1])
	switch {
	case err != nil:
		c.Fail(err)
		return
	case !ks.Live:
		c.NotifyKeyMiss(c.Args[1])
		c.W.Bulk([]byte{})
		return
	case ks.Type != model.TypeString:
		c.W.Error(MsgWrongType)
		return
	}
	// Only the range is read: of a big value, the chunks it covers.
	lo, hi := substringBounds(ks.StringLen(), start, end)
	v, err := ks.StringRange(lo, hi)
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Bulk(v)
}

// substring applies GETRANGE's index rules (negative counts from the end,
// clamped, inclusive end).
func substring(v []byte, start, end int64) []byte {
	lo, hi := substringBounds(int64(len(v)), start, end)
	return v[lo:hi]
}

// substringBounds is the half-open range of a string of n bytes that
// GETRANGE start end covers.
func substringBounds(n, start, end int64) (lo, hi int64) {
	if start < 0 && end < 0 && start > end {
		return 0, 0
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = 0
	}
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return 0, 0
	}
	return start, end + 1
}

func cmdMGet(c *Ctx) {
	keys := c.Args[1:]
	states, err := model.ReadKeys(c, keys)
	if err != nil {
		c.Fail(err)
		return
	}
	vals := make([][]byte, len(keys))
	for i, ks := range states {
		if !ks.Live || ks.Type != model.TypeString {
			continue
		}
		if vals[i], err = ks.StringValue(); err != nil {
			c.Fail(err)
			return
		}
	}
	c.W.Array(len(keys))
	for i, v := range vals {
		// Redis looks each key up as it replies with it.
		notifyMiss(c, states[i], keys[i])
		if v == nil {
			c.W.Nil()
		} else {
			c.W.Bulk(v)
		}
	}
}

// ---- SET family ------------------------------------------------------------

// Option flags of SET and GETEX (Redis's OBJ_* flags).
const (
	setNX uint16 = 1 << iota
	setXX
	setGet
	setKeepTTL
	setPersist
	setEX
	setPX
	setEXAT
	setPXAT
)

const setExpireFlags = setEX | setPX | setEXAT | setPXAT

// setOpts is a parsed SET (or SETNX, SETEX, PSETEX, GETSET).
type setOpts struct {
	key, val []byte
	flags    uint16
	// expireAt is the absolute deadline in Unix ms (0: none).
	expireAt int64
}

// parseStringOpts parses SET's and GETEX's options from args (Redis's
// parseExtendedStringArgumentsOrReply): forSet selects SET's option set.
// It returns the flags and the argument of the expire option, if any.
func parseStringOpts(args [][]byte, forSet bool) (flags uint16, expire []byte, errMsg string) {
	for j := 0; j < len(args); j++ {
		opt := args[j]
		hasNext := j+1 < len(args)
		switch {
		case argIs(opt, "nx") && flags&setXX == 0 && forSet:
			flags |= setNX
		case argIs(opt, "xx") && flags&setNX == 0 && forSet:
			flags |= setXX
		case argIs(opt, "get") && forSet:
			flags |= setGet
		case argIs(opt, "keepttl") && flags&(setPersist|setExpireFlags) == 0 && forSet:
			flags |= setKeepTTL
		case argIs(opt, "persist") && !forSet && flags&(setExpireFlags|setKeepTTL) == 0:
			flags |= setPersist
		case argIs(opt, "ex") && flags&(setKeepTTL|setPersist|setEXAT|setPX|setPXAT) == 0 && hasNext:
			flags |= setEX
			expire = args[j+1]
			j++
		case argIs(opt, "px") && flags&(setKeepTTL|setPersist|setEX|setEXAT|setPXAT) == 0 && hasNext:
			flags |= setPX
			expire = args[j+1]
			j++
		case argIs(opt, "exat") && flags&(setKeepTTL|setPersist|setEX|setPX|setPXAT) == 0 && hasNext:
			flags |= setEXAT
			expire = args[j+1]
			j++
		case argIs(opt, "pxat") && flags&(setKeepTTL|setPersist|setEX|setEXAT|setPX) == 0 && hasNext:
			flags |= setPXAT
			expire = args[j+1]
			j++
		default:
			return 0, nil, MsgSyntax
		}
	}
	return flags, expire, ""
}

// expireDeadline turns an expire argument into an absolute deadline in ms
// as Redis's getExpireMillisecondsOrReply does; cmd names the command in the
// error ("set", "getex", ...).
func expireDeadline(arg []byte, flags uint16, nowMS int64, cmd string) (int64, string) {
	ms, ok := model.String2ll(arg)
	if !ok {
		return 0, MsgNotInt
	}
	seconds := flags&(setEX|setEXAT) != 0
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		return 0, fmt.Sprintf(MsgInvalidExpire, cmd)
	}
	if seconds {
		ms *= 1000
	}
	if flags&(setEX|setPX) != 0 {
		ms += nowMS // wraps on overflow, as in C, and is caught below
	}
	if ms <= 0 {
		return 0, fmt.Sprintf(MsgInvalidExpire, cmd)
	}
	return ms, ""
}

func cmdSet(c *Ctx) {
	flags, expire, msg := parseStringOpts(c.Args[3:], true)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	o := setOpts{key: c.Args[1], val: c.Args[2], flags: flags}
	if expire != nil {
		if o.expireAt, msg = expireDeadline(expire, flags, c.NowMS(), "set"); msg != "" {
			c.W.Error(msg)
			return
		}
	}
	o.run(c, setReplyOK)
}

func cmdSetNX(c *Ctx) {
	setOpts{key: c.Args[1], val: c.Args[2], flags: setNX}.run(c, setReplyInt)
}

func cmdSetEX(c *Ctx)  { setWithTTL(c, setEX, "setex") }
func cmdPSetEX(c *Ctx) { setWithTTL(c, setPX, "psetex") }

// setWithTTL is SETEX and PSETEX: key, relative TTL, value.
func setWithTTL(c *Ctx, unit uint16, cmd string) {
	at, msg := expireDeadline(c.Args[2], unit, c.NowMS(), cmd)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	setOpts{key: c.Args[1], val: c.Args[3], flags: unit, expireAt: at}.run(c, setReplyOK)
}

func cmdGetSet(c *Ctx) {
	setOpts{key: c.Args[1], val: c.Args[2], flags: setGet}.run(c, setReplyOK)
}

// How a SET variant answers when it did not use GET.
type setReply uint8

const (
	setReplyOK  setReply = iota // +OK, or nil when NX/XX aborted (SET, SETEX)
	setReplyInt                 // :1, or :0 when aborted (SETNX)
)

// run executes a parsed SET (model.SetString).
func (o setOpts) run(c *Ctx, rep setReply) {
	// With GET, Redis replies before it adds the key: its "new" waits for
	// the "set".
	c.notes.holdNew = o.flags&setGet != 0
	res, err := model.SetString(c, o.key, o.val, model.SetOptions{
		NX:       o.flags&setNX != 0,
		XX:       o.flags&setXX != 0,
		Get:      o.flags&setGet != 0,
		KeepTTL:  o.flags&setKeepTTL != 0,
		ExpireAt: o.expireAt,
	})
	c.notes.holdNew = false
	if err != nil {
		c.Fail(err)
		return
	}
	if o.flags&setGet != 0 {
		// Redis replies with the old value before it writes.
		notifyMiss(c, res.Old, o.key)
		replyStringValue(c, res.Old)
		o.notify(c, res)
		return
	}
	o.notify(c, res)
	switch {
	case !res.Written && rep == setReplyInt:
		c.W.Int(0)
	case !res.Written:
		c.W.Nil()
	case rep == setReplyInt:
		c.W.Int(1)
	default:
		c.W.Simple("OK")
	}
}

// notify reports what a SET did: "set", then "expire" for a deadline.
func (o setOpts) notify(c *Ctx, res model.SetResult) {
	if res.Written {
		c.Notify(events.String, "set", o.key)
		if o.expireAt != 0 {
			c.Notify(events.Generic, "expire", o.key)
		}
	}
}

func cmdGetDel(c *Ctx) {
	ks, err := model.GetDel(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	notifyMiss(c, ks, c.Args[1])
	replyStringValue(c, ks)
	if ks.Live && ks.Type == model.TypeString {
		c.Notify(events.Generic, "del", c.Args[1])
	}
}

func cmdGetEx(c *Ctx) {
	key := c.Args[1]
	flags, expire, msg := parseStringOpts(c.Args[2:], false)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	now := c.NowMS()
	var at int64
	if expire != nil {
		// Redis validates the deadline only once it found a string there.
		at, msg = expireDeadline(expire, flags, now, "getex")
	}
	if (flags&(setExpireFlags|setPersist) == 0) || msg != "" || !model.KeyFits(key) {
		ks, err := readKey(c, key)
		if err != nil {
			c.Fail(err)
			return
		}
		notifyMiss(c, ks, key)
		if msg != "" && ks.Live && ks.Type == model.TypeString {
			c.W.Error(msg)
			return
		}
		replyStringValue(c, ks)
		return
	}
	ks, err := model.GetExpire(c, key, at, flags&setPersist != 0)
	if err != nil {
		c.Fail(err)
		return
	}
	notifyMiss(c, ks, key)
	replyStringValue(c, ks)
	if ks.Live && ks.Type == model.TypeString {
		switch {
		case flags&setPersist != 0:
			if ks.HasExpiry {
				c.Notify(events.Generic, "persist", key)
			}
		case at <= now:
			c.Notify(events.Generic, "del", key)
		default:
			c.Notify(events.Generic, "expire", key)
		}
	}
}

// ---- multi-key writes --------------------------------------------------------

// kvPairs returns the distinct keys of key/value arguments with the last
// value given for each, in first-seen order (Redis applies them in order, so
// the last one wins).
func kvPairs(args [][]byte) (keys, vals [][]byte) {
	idx := map[string]int{}
	for i := 0; i+1 < len(args); i += 2 {
		k, v := args[i], args[i+1]
		if j, ok := idx[string(k)]; ok {
			vals[j] = v
			continue
		}
		idx[string(k)] = len(keys)
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return keys, vals
}

func cmdMSet(c *Ctx)   { msetGeneric(c, false) }
func cmdMSetNX(c *Ctx) { msetGeneric(c, true) }

// msetGeneric is MSET and MSETNX: every key written in one transaction (one
// PutItem for a single key), so a failure leaves none of them written.
func msetGeneric(c *Ctx, nx bool) {
	if len(c.Args)%2 == 0 {
		c.W.Error(ErrWrongArgs(string(c.Args[0])))
		return
	}
	keys, vals := kvPairs(c.Args[1:])
	written, err := model.SetStrings(c, keys, vals, nx)
	if written {
		// Every key, in argument order, as Redis sets them (a repeated
		// key each time); MSETNX created each key the first time.
		for i := 1; i+1 < len(c.Args); i += 2 {
			if nx && c.WantsCreated() && !keyBefore(c.Args, i) {
				c.KeyCreated(c.Args[i])
			}
			c.Notify(events.String, "set", c.Args[i])
		}
	}
	switch {
	case err != nil:
		c.Fail(err)
	case nx:
		c.W.Int(boolInt(written))
	default:
		c.W.Simple("OK")
	}
}

// keyBefore reports whether the key at args[i] is one of the keys of the
// key/value pairs before it (args[1], args[3], ...).
func keyBefore(args [][]byte, i int) bool {
	for j := 1; j < i; j += 2 {
		if sameKey(args[j], args[i]) {
			return true
		}
	}
	return false
}

// ---- APPEND, SETRANGE --------------------------------------------------------

// maxStringLen is proto-max-bulk-len, the longest string Redis lets a
// command build (CONFIG SET may change it).
func maxStringLen(c *Ctx) int64 {
	return c.Srv.ProtoMaxBulkLen()
}

// cmdAppend appends in one request where it can (model.Append).
func cmdAppend(c *Ctx) {
	n, err := model.Append(c, c.Args[1], c.Args[2], maxStringLen(c))
	if err != nil {
		c.Fail(err)
		return
	}
	c.Notify(events.String, "append", c.Args[1])
	c.W.Int(n)
}

// cmdSetRange reads the value and writes the result conditioned on the
// version read.
func cmdSetRange(c *Ctx) {
	key, val := c.Args[1], c.Args[3]
	offset, ok := model.String2ll(c.Args[2])
	if !ok {
		c.W.Error(MsgNotInt)
		return
	}
	if offset < 0 {
		c.W.Error(MsgOffsetRange)
		return
	}
	if !model.KeyFits(key) {
		if len(val) == 0 {
			c.W.Int(0)
		} else {
			c.W.Error(MsgKeyTooLong)
		}
		return
	}
	n, err := model.SetRange(c, key, offset, val, maxStringLen(c))
	if err != nil {
		c.Fail(err)
		return
	}
	if len(val) > 0 {
		c.Notify(events.String, "setrange", key)
	}
	c.W.Int(n)
}

// ---- counters ----------------------------------------------------------------

func cmdIncr(c *Ctx) { incrBy(c, 1) }
func cmdDecr(c *Ctx) { incrBy(c, -1) }

func cmdIncrBy(c *Ctx) {
	d, ok := model.String2ll(c.Args[2])
	if !ok {
		c.W.Error(MsgNotInt)
		return
	}
	incrBy(c, d)
}

func cmdDecrBy(c *Ctx) {
	d, ok := model.String2ll(c.Args[2])
	if !ok {
		c.W.Error(MsgNotInt)
		return
	}
	if d == math.MinInt64 {
		c.W.Error(MsgDecrOverflow)
		return
	}
	incrBy(c, -d)
}

// incrBy adds d to the counter at the command's key (model.IncrBy: one
// UpdateItem where it can).
func incrBy(c *Ctx, d int64) {
	n, err := model.IncrBy(c, c.Args[1], d)
	if err != nil {
		c.Fail(err)
		return
	}
	c.Notify(events.String, "incrby", c.Args[1])
	c.W.Int(n)
}

// cmdIncrByFloat reads the value, adds in long double arithmetic and writes
// the result conditioned on the version read (keeping the expiry).
func cmdIncrByFloat(c *Ctx) {
	incr, incrOK := ldParse(c.Args[2])
	out, err := model.EditString(c, c.Args[1], model.OriginFloat, func(old []byte, live bool) ([]byte, error) {
		if !live {
			old = []byte("0")
		}
		v, ok := ldParse(old)
		if !ok || !incrOK {
			return nil, redisError(MsgNotFloat)
		}
		sum, ok := ldAdd(v, incr)
		if !ok {
			return nil, redisError(MsgIncrFloatNaN)
		}
		return []byte(ldFormatHuman(sum)), nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Notify(events.String, "incrbyfloat", c.Args[1])
	c.W.Bulk(out)
}
