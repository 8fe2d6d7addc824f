package commands

import (
	"fmt"
	"math"

	"github.com/redamo/redamo/dynastore"
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
	replyStringValue(c, ks)
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
	switch {
	case err != nil:
		c.Fail(err)
	case !ks.Live:
		c.W.Int(0)
	case ks.Type != model.TypeString:
		c.W.Error(MsgWrongType)
	default:
		c.W.Int(model.ValueLen(ks.Raw.Get(model.AttrValue)))
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
		c.W.Bulk([]byte{})
		return
	case ks.Type != model.TypeString:
		c.W.Error(MsgWrongType)
		return
	}
	v, err := ks.StringValue()
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Bulk(substring(v, start, end))
}

// substring applies GETRANGE's index rules (negative counts from the end,
// clamped, inclusive end).
func substring(v []byte, start, end int64) []byte {
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		return []byte{}
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
		return []byte{}
	}
	return v[start : end+1]
}

func cmdMGet(c *Ctx) {
	keys := c.Args[1:]
	states, err := readKeys(c, keys)
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
	for _, v := range vals {
		if v == nil {
			c.W.Nil()
		} else {
			c.W.Bulk(v)
		}
	}
}

// readKeys reads several key items with batched reads (duplicates read once);
// the result is in the order of keys.
func readKeys(c *Ctx, keys [][]byte) ([]model.KeyState, error) {
	idx := make(map[string]int, len(keys))
	var ks []dynastore.Key
	for _, k := range keys {
		if !model.KeyFits(k) {
			continue
		}
		if _, ok := idx[string(k)]; !ok {
			idx[string(k)] = len(ks)
			ks = append(ks, model.ItemKey(c.DB(), k))
		}
	}
	var items []dynastore.Item
	if len(ks) > 0 {
		var err error
		if items, err = c.Store.BatchGet(c, ks); err != nil {
			return nil, err
		}
	}
	out := make([]model.KeyState, len(keys))
	for i, k := range keys {
		j, ok := idx[string(k)]
		if !ok {
			continue
		}
		st, err := model.DecodeKey(items[j], c.NowMS())
		if err != nil {
			return nil, err
		}
		out[i] = st
	}
	return out, nil
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

// run executes a parsed SET: one PutItem, or one UpdateItem with KEEPTTL.
func (o setOpts) run(c *Ctx, rep setReply) {
	if !model.KeyFits(o.key) {
		c.W.Error(MsgKeyTooLong)
		return
	}
	if o.flags&setKeepTTL != 0 {
		o.runKeepTTL(c, rep)
		return
	}
	get := o.flags&setGet != 0
	// Only the conditions read the clock: a plain SET needs none.
	var cond dynastore.Cond
	switch {
	case o.flags&setNX != 0:
		cond = model.CondNotLive(c.NowMS())
	case o.flags&setXX != 0 && get:
		cond = model.CondLiveType(c.NowMS(), model.TypeString)
	case o.flags&setXX != 0:
		cond = model.CondLive(c.NowMS())
	case get:
		cond = model.CondNotLiveOrType(c.NowMS(), model.TypeString)
	}
	wo := dynastore.WriteOptions{Cond: cond, OldOnFailure: get, Handover: true}
	if get {
		wo.Return = dynastore.ReturnAllOld
	}
	old, err := c.Store.Put(c, model.StringItem(c.DB(), o.key, o.val, model.OriginArg, o.expireAt), wo)
	o.reply(c, rep, old, err)
}

// reply answers a SET from the write's outcome: the old item on success (with
// GET), or the item that failed the condition.
func (o setOpts) reply(c *Ctx, rep setReply, old dynastore.Item, err error) {
	get := o.flags&setGet != 0
	if err != nil {
		cur, failed := model.CondFailed(err)
		if !failed {
			c.Fail(err)
			return
		}
		if !get {
			if rep == setReplyInt {
				c.W.Int(0)
			} else {
				c.W.Nil()
			}
			return
		}
		ks, derr := model.DecodeKey(cur, c.NowMS())
		if derr != nil {
			c.Fail(derr)
			return
		}
		replyStringValue(c, ks)
		return
	}
	if get {
		ks, derr := model.DecodeKey(old, c.NowMS())
		if derr != nil {
			c.Fail(derr)
			return
		}
		replyStringValue(c, ks)
		return
	}
	if rep == setReplyInt {
		c.W.Int(1)
	} else {
		c.W.Simple("OK")
	}
}

// runKeepTTL is SET ... KEEPTTL. The fast path is one UpdateItem that leaves
// x/ttl alone, allowed when the key is absent or a live string. An expired
// key must lose its old expiry and a live key of another type must lose its
// other attributes, so those cases fall back to a whole-item Put
// conditioned on the item read back from the failed update.
func (o setOpts) runKeepTTL(c *Ctx, rep setReply) {
	now := c.NowMS()
	get := o.flags&setGet != 0
	nx, xx := o.flags&setNX != 0, o.flags&setXX != 0
	v, e := model.EncodeValue(make([]byte, 0, len(o.val)), o.val, model.OriginArg)
	u := dynastore.Update{Set: []dynastore.SetAction{
		{Attr: model.AttrType, Val: dynastore.S(model.TypeString)},
		{Attr: model.AttrValue, Val: v},
		{Attr: model.AttrVer, Val: model.NewVer()},
	}}
	if e != nil {
		u.Set = append(u.Set, dynastore.SetAction{Attr: model.AttrEnc, Val: e})
	} else {
		u.Remove = []string{model.AttrEnc}
	}
	var cond dynastore.Cond
	switch {
	case nx:
		cond = dynastore.NotExists{Attr: dynastore.AttrPK}
	case xx:
		cond = model.CondLiveType(now, model.TypeString)
	default:
		cond = dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, model.CondLiveType(now, model.TypeString)}
	}
	wo := dynastore.WriteOptions{Cond: cond, OldOnFailure: true}
	if get {
		wo.Return = dynastore.ReturnAllOld
	}
	old, err := c.Store.Update(c, model.ItemKey(c.DB(), o.key), u, wo)
	cur, failed := model.CondFailed(err)
	if !failed {
		o.reply(c, rep, old, err)
		return
	}
	start, err := model.DecodeKey(cur, now)
	if err != nil {
		c.Fail(err)
		return
	}
	// What the old state means for the reply, decided on the state the
	// final write was conditioned on.
	var aborted bool
	var before model.KeyState
	err = mutateKey(c, o.key, &start, func(ks model.KeyState) (*keyWrite, error) {
		before, aborted = ks, false
		switch {
		case ks.Live && ks.Type != model.TypeString && get:
			return nil, redisError(MsgWrongType)
		case (nx && ks.Live) || (xx && !ks.Live):
			aborted = true
			return nil, nil
		}
		var exp int64
		if ks.Live && ks.HasExpiry {
			exp = ks.Expiry
		}
		return &keyWrite{Put: model.StringItem(c.DB(), o.key, o.val, model.OriginArg, exp)}, nil
	})
	switch {
	case err != nil:
		c.Fail(err)
	case get:
		replyStringValue(c, before)
	case aborted && rep == setReplyInt:
		c.W.Int(0)
	case aborted:
		c.W.Nil()
	case rep == setReplyInt:
		c.W.Int(1)
	default:
		c.W.Simple("OK")
	}
}

func cmdGetDel(c *Ctx) {
	key := c.Args[1]
	if !model.KeyFits(key) {
		c.W.Nil()
		return
	}
	now := c.NowMS()
	// Conditioned on a live string: an absent or expired key is left as it
	// is (an expired item may be WATCH's mark: model.WatchMarkItem).
	old, err := c.Store.Delete(c, model.ItemKey(c.DB(), key), dynastore.WriteOptions{
		Cond:         model.CondLiveType(now, model.TypeString),
		Return:       dynastore.ReturnAllOld,
		OldOnFailure: true,
	})
	replyOldString(c, old, err, now)
}

// replyOldString replies with the string value old held before a write
// conditioned on the key being a string (ALL_OLD), or, when the condition
// failed, the value of the item the failure handed back.
func replyOldString(c *Ctx, old dynastore.Item, err error, nowMS int64) {
	if cur, failed := model.CondFailed(err); failed {
		old, err = cur, nil
	}
	if err != nil {
		c.Fail(err)
		return
	}
	ks, err := model.DecodeKey(old, nowMS)
	if err != nil {
		c.Fail(err)
		return
	}
	replyStringValue(c, ks)
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
		if msg != "" && ks.Live && ks.Type == model.TypeString {
			c.W.Error(msg)
			return
		}
		replyStringValue(c, ks)
		return
	}
	k := model.ItemKey(c.DB(), key)
	live := model.CondLiveType(now, model.TypeString)
	var old dynastore.Item
	var err error
	switch {
	case flags&(setEXAT|setPXAT) != 0 && at <= now:
		old, err = c.Store.Delete(c, k, dynastore.WriteOptions{Cond: live, Return: dynastore.ReturnAllOld, OldOnFailure: true})
	case flags&setPersist != 0:
		// Only a key with an expiry is written; for one without, the failed
		// condition hands back the value.
		old, err = c.Store.Update(c, k, dynastore.Update{
			Set:    []dynastore.SetAction{{Attr: model.AttrVer, Val: model.NewVer()}},
			Remove: []string{model.AttrExpiry, dynastore.AttrTTL},
		}, dynastore.WriteOptions{
			Cond:         dynastore.And{live, dynastore.Exists{Attr: model.AttrExpiry}},
			Return:       dynastore.ReturnAllOld,
			OldOnFailure: true,
		})
	default:
		old, err = c.Store.Update(c, k, dynastore.Update{Set: []dynastore.SetAction{
			{Attr: model.AttrExpiry, Val: model.NInt(at)},
			{Attr: dynastore.AttrTTL, Val: model.TTLSeconds(at)},
			{Attr: model.AttrVer, Val: model.NewVer()},
		}}, dynastore.WriteOptions{Cond: live, Return: dynastore.ReturnAllOld, OldOnFailure: true})
	}
	replyOldString(c, old, err, now)
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
	for _, k := range keys {
		if !model.KeyFits(k) {
			c.W.Error(MsgKeyTooLong)
			return
		}
	}
	if len(keys) > dynastore.MaxTxActions {
		c.W.Error(MsgTxTooLarge)
		return
	}
	now := c.NowMS()
	var cond dynastore.Cond
	if nx {
		cond = model.CondNotLive(now)
	}
	var err error
	if len(keys) == 1 {
		_, err = c.Store.Put(c, model.StringItem(c.DB(), keys[0], vals[0], model.OriginArg, 0), dynastore.WriteOptions{Cond: cond})
	} else {
		acts := make([]dynastore.TxAction, len(keys))
		for i, k := range keys {
			acts[i] = dynastore.TxAction{Op: dynastore.TxPut, Item: model.StringItem(c.DB(), k, vals[i], model.OriginArg, 0), Cond: cond}
		}
		err = c.Store.Transact(c, acts)
	}
	switch {
	case err == nil && nx:
		c.W.Int(1)
	case err == nil:
		c.W.Simple("OK")
	case nx && onlyConditionsFailed(err):
		c.W.Int(0)
	default:
		c.Fail(err)
	}
}

// onlyConditionsFailed reports whether a write failed for no other reason
// than its conditions.
func onlyConditionsFailed(err error) bool {
	if _, ok := model.CondFailed(err); ok {
		return true
	}
	var tc *dynastore.TxCanceledError
	if !asTxCanceled(err, &tc) {
		return false
	}
	any := false
	for _, r := range tc.Reasons {
		switch r.Code {
		case dynastore.ReasonConditionalFailed:
			any = true
		case dynastore.ReasonNone, "":
		default:
			return false
		}
	}
	return any
}

// ---- APPEND, SETRANGE --------------------------------------------------------

// maxStringLen is proto-max-bulk-len, the longest string Redis lets a
// command build (CONFIG SET may change it).
func maxStringLen(c *Ctx) int64 {
	return c.Srv.ProtoMaxBulkLen()
}

// checkStringLength is Redis's check that size+add bytes stay within
// proto-max-bulk-len (overflow included).
func checkStringLength(c *Ctx, size, add int64) bool {
	total := size + add
	return total <= maxStringLen(c) && total >= size && total >= add
}

// cmdAppend: one UpdateItem list_append when the value is already chunked
// (or the key is new); otherwise the current value becomes the first chunk,
// in a Put conditioned on the item read back from the failed update. The
// fast path cannot check proto-max-bulk-len, and need not: it is at least
// 1 MB, more than an item holds, so the item limit always bites first.
func cmdAppend(c *Ctx) {
	key, val := c.Args[1], c.Args[2]
	if !model.KeyFits(key) {
		c.W.Error(MsgKeyTooLong)
		return
	}
	now := c.NowMS()
	chunk := dynastore.L{dynastore.B(append([]byte{}, val...))}
	newItem, err := c.Store.Update(c, model.ItemKey(c.DB(), key), dynastore.Update{
		Set: []dynastore.SetAction{
			{Attr: model.AttrType, Val: dynastore.S(model.TypeString)},
			{Attr: model.AttrValue, Val: dynastore.ListAppend{
				A: dynastore.IfNotExists{Attr: model.AttrValue, Default: dynastore.L{}},
				B: chunk,
			}},
			{Attr: model.AttrVer, Val: model.NewVer()},
		},
		Remove: []string{model.AttrEnc},
	}, dynastore.WriteOptions{
		Cond: dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.And{model.CondLiveType(now, model.TypeString), dynastore.IsType{Attr: model.AttrValue, Type: dynastore.KindL}},
		},
		Return:       dynastore.ReturnUpdatedNew,
		OldOnFailure: true,
	})
	if err == nil {
		c.W.Int(model.ValueLen(newItem.Get(model.AttrValue)))
		return
	}
	start, ok := condFailedStart(c, err, now)
	if !ok {
		return
	}
	var newLen int64
	err = mutateKey(c, key, &start, func(ks model.KeyState) (*keyWrite, error) {
		if !ks.Live {
			newLen = int64(len(val))
			return &keyWrite{Put: model.StringItem(c.DB(), key, val, model.OriginArg, 0)}, nil
		}
		if ks.Type != model.TypeString {
			return nil, redisError(MsgWrongType)
		}
		oldLen := model.ValueLen(ks.Raw.Get(model.AttrValue))
		if !checkStringLength(c, oldLen, int64(len(val))) {
			return nil, redisError(MsgStringTooLong)
		}
		var chunks dynastore.L
		switch v := ks.Raw.Get(model.AttrValue).(type) {
		case dynastore.L:
			chunks = append(append(dynastore.L{}, v...), chunk[0])
		default:
			old, err := model.DecodeValue(v)
			if err != nil {
				return nil, err
			}
			chunks = dynastore.L{dynastore.B(old), chunk[0]}
		}
		newLen = oldLen + int64(len(val))
		it := model.StringItem(c.DB(), key, nil, model.OriginArg, ks.Expiry)
		it.Set(model.AttrValue, chunks)
		it.Delete(model.AttrEnc)
		return &keyWrite{Put: it}, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(newLen)
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
	var reply int64
	err := mutateKey(c, key, nil, func(ks model.KeyState) (*keyWrite, error) {
		old, err := stringOf(ks)
		if err != nil {
			return nil, err
		}
		if len(val) == 0 {
			reply = int64(len(old))
			return nil, nil
		}
		if !checkStringLength(c, offset, int64(len(val))) {
			return nil, redisError(MsgStringTooLong)
		}
		end := offset + int64(len(val))
		if end > dynastore.MaxItemSize {
			return nil, redisError(MsgValueTooLarge)
		}
		nv := old
		if int64(len(nv)) < end {
			nv = make([]byte, end)
			copy(nv, old)
		} else {
			nv = append([]byte{}, old...)
		}
		copy(nv[offset:], val)
		reply = int64(len(nv))
		return &keyWrite{Put: model.StringItem(c.DB(), key, nv, model.OriginEdited, ks.Expiry)}, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(reply)
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

// incrBy adds d to a counter in one UpdateItem ADD, guarded so that it only
// applies to a missing key or a live integer string that cannot overflow.
// Anything else (an expired key, a value stored as text, a wrong type, an
// overflow) is decided from the item the failed update returns.
func incrBy(c *Ctx, d int64) {
	key := c.Args[1]
	if !model.KeyFits(key) {
		c.W.Error(MsgKeyTooLong)
		return
	}
	now := c.NowMS()
	// The update's actions in reused memory, as its key (see
	// requestScratch).
	acts := &c.Conn.scratch.incr
	*acts = incrActs{
		set: [2]dynastore.SetAction{
			{Attr: model.AttrType, Val: litTypeString},
			{Attr: model.AttrVer, Val: model.NewVer()},
		},
		add: [1]dynastore.AttrValue{{Attr: model.AttrValue, Val: deltaValue(d)}},
	}
	// ALL_NEW (DynamoDB charges the same as UPDATED_NEW) in the
	// connection's memory: the embedded store copies its new item there,
	// so that nobody holds its own and the next INCR of the key changes it
	// in place; UPDATED_NEW built an item of t, ver and v for every INCR
	// only for v to be read.
	returned := &c.Conn.scratch.returned
	if *returned == nil {
		*returned = make(dynastore.Item, 0, 8) // a key item's attributes
	}
	newItem, err := c.Store.Update(c, c.scratchItemKey(key), dynastore.Update{
		Set:    acts.set[:],
		Add:    acts.add[:],
		Remove: removeEnc,
	}, dynastore.WriteOptions{
		Cond:         incrCond(now, d),
		Return:       dynastore.ReturnAllNew,
		ReturnInto:   *returned,
		OldOnFailure: true,
	})
	if err == nil {
		n, err := model.NumberInt(newItem.Get(model.AttrValue))
		if err != nil {
			c.Fail(err)
			return
		}
		c.W.Int(n)
		return
	}
	start, ok := condFailedStart(c, err, now)
	if !ok {
		return
	}
	var result int64
	err = mutateKey(c, key, &start, func(ks model.KeyState) (*keyWrite, error) {
		var old int64
		if ks.Live {
			b, err := stringOf(ks)
			if err != nil {
				return nil, err
			}
			var ok bool
			if old, ok = model.String2ll(b); !ok {
				return nil, redisError(MsgNotInt)
			}
			if addOverflows(old, d) {
				return nil, redisError(MsgOverflow)
			}
		}
		result = old + d
		return &keyWrite{Put: model.StringItem(c.DB(), key, []byte(fmt.Sprint(result)), model.OriginArg, ks.Expiry)}, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(result)
}

// incrActs are the actions of INCR's update.
type incrActs struct {
	set [2]dynastore.SetAction
	add [1]dynastore.AttrValue
}

// litTypeString and removeEnc are parts of the updates of INCR, built once
// (updates are read-only to stores).
var (
	litTypeString dynastore.Operand = dynastore.S(model.TypeString)
	removeEnc                       = []string{model.AttrEnc}
)

// deltaValue is d as a Number, without formatting and boxing INCR's and
// DECR's deltas every time.
func deltaValue(d int64) dynastore.Value {
	switch d {
	case 1:
		return dynastore.N("1")
	case -1:
		return dynastore.N("-1")
	}
	return model.NInt(d)
}

// incrConds holds INCR's fast-path condition for the last clock reading
// and delta (see model.Latest).
var incrConds model.Latest[[2]int64, dynastore.Cond]

// incrCond returns the condition of INCR's fast path at nowMS for delta d:
// the key is absent, or a live Number that d cannot overflow.
func incrCond(nowMS, d int64) dynastore.Cond {
	return incrConds.Get([2]int64{nowMS, d}, func(k [2]int64) dynastore.Cond {
		nowMS, d := k[0], k[1]
		// No type check: only a string key ever holds a Number in v
		// (collections keep a set or a list there), so a Number v is a
		// string's. Past the NotExists the item exists, and room, an
		// ordered comparison with a Number, holds only on a Number: the
		// condition says neither again (the embedded store evaluates every
		// node; DynamoDB's expression builder drops implied ones anyway).
		var live dynastore.Cond = dynastore.IsType{Attr: model.AttrValue, Type: dynastore.KindN}
		if room := incrRoom(model.AttrValue, d); room != nil {
			live = room
		}
		return dynastore.MustCheck(dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.And{model.CondUnexpired(nowMS), live},
		})
	})
}

// cmdIncrByFloat reads the value, adds in long double arithmetic and writes
// the result conditioned on the version read (keeping the expiry).
func cmdIncrByFloat(c *Ctx) {
	key := c.Args[1]
	incr, incrOK := ldParse(c.Args[2])
	if !model.KeyFits(key) {
		c.W.Error(MsgKeyTooLong)
		return
	}
	var out string
	err := mutateKey(c, key, nil, func(ks model.KeyState) (*keyWrite, error) {
		old, err := stringOf(ks)
		if err != nil {
			return nil, err
		}
		if !ks.Live {
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
		out = ldFormatHuman(sum)
		return &keyWrite{Put: model.StringItem(c.DB(), key, []byte(out), model.OriginFloat, ks.Expiry)}, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.BulkString(out)
}
