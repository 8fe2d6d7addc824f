package commands

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

func registerKeys(t *Table) {
	t.Register([]Row{
		{Name: "del", Run: cmdDel},
		{Name: "unlink", Run: cmdDel},
		{Name: "exists", Run: cmdExists},
		{Name: "touch", Run: cmdExists},
		{Name: "type", Run: cmdType},
		{Name: "expire", Run: cmdExpire},
		{Name: "pexpire", Run: cmdPExpire},
		{Name: "expireat", Run: cmdExpireAt},
		{Name: "pexpireat", Run: cmdPExpireAt},
		{Name: "ttl", Run: cmdTTL},
		{Name: "pttl", Run: cmdPTTL},
		{Name: "expiretime", Run: cmdExpireTime},
		{Name: "pexpiretime", Run: cmdPExpireTime},
		{Name: "persist", Run: cmdPersist},
		{Name: "rename", Run: cmdRename},
		{Name: "renamenx", Run: cmdRenameNX},
		{Name: "move", Run: cmdMove},
		{Name: "copy", Run: cmdCopy},
		{Name: "keys", Run: cmdKeys},
		{Name: "scan", Run: cmdScan},
		{Name: "randomkey", Run: cmdRandomKey},
		{Name: "dbsize", Run: cmdDBSize},
		{Name: "flushdb", Run: cmdFlushDB},
		{Name: "flushall", Run: cmdFlushAll},
		{Name: "object|encoding", Run: cmdObjectEncoding},
		{Name: "object|freq", Run: cmdObjectFreq},
		{Name: "object|help", Run: cmdObjectHelp},
		{Name: "object|idletime", Run: cmdObjectIdleTime},
		{Name: "object|refcount", Run: cmdObjectRefCount},
	})
}

// ---- DEL, EXISTS, TYPE -----------------------------------------------------------

// cmdDel is DEL and UNLINK. One key: one DeleteItem returning the old item.
// Several: a batched read, then one transaction deleting the live ones, each
// conditioned on the version read, re-run if any of them changed meanwhile.
func cmdDel(c *Ctx) {
	if len(c.Args) == 2 {
		key := c.Args[1]
		if !model.KeyFits(key) {
			c.W.Int(0)
			return
		}
		// Only a live key goes: an expired item stays for DynamoDB's TTL
		// (it may be WATCH's mark: model.WatchMarkItem).
		_, err := c.Store.Delete(c, model.ItemKey(c.DB(), key), dynastore.WriteOptions{Cond: model.CondLive(c.NowMS())})
		if _, failed := model.CondFailed(err); failed {
			c.W.Int(0)
			return
		}
		if err != nil {
			c.Fail(err)
			return
		}
		c.W.Int(1)
		return
	}
	keys := distinctKeys(c.Args[1:])
	var n int64
	err := model.RetryConflicts(c, func(int) error {
		states, err := readKeys(c, keys)
		if err != nil {
			return err
		}
		var acts []dynastore.TxAction
		for i, ks := range states {
			if ks.Live {
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: model.ItemKey(c.DB(), keys[i]), Cond: ks.Guard()})
			}
		}
		n = int64(len(acts))
		return keyConflict(commitKeyActions(c, acts))
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}

// commitKeyActions writes actions atomically: nothing for none, a single
// conditional write for one (half the cost of a transaction), else one
// transaction. More than a transaction holds is MsgTxTooLarge.
func commitKeyActions(c *Ctx, acts []dynastore.TxAction) error {
	switch {
	case len(acts) == 0:
		return nil
	case len(acts) > dynastore.MaxTxActions:
		return fmt.Errorf("commands: %d items in one atomic write: %w", len(acts), dynastore.ErrTxTooLarge)
	case len(acts) == 1 && acts[0].Op == dynastore.TxDelete:
		_, err := c.Store.Delete(c, acts[0].Key, dynastore.WriteOptions{Cond: acts[0].Cond})
		return err
	case len(acts) == 1 && acts[0].Op == dynastore.TxPut:
		_, err := c.Store.Put(c, acts[0].Item, dynastore.WriteOptions{Cond: acts[0].Cond})
		return err
	}
	return c.Store.Transact(c, acts)
}

// keyConflict is what a key transaction's outcome means for its attempt
// (model.RetryConflicts): model.ErrConflict when only its conditions failed
// (another writer got there first), else err.
func keyConflict(err error) error {
	if err != nil && onlyConditionsFailed(err) {
		return model.ErrConflict
	}
	return err
}

// distinctKeys returns keys without repeats and without keys too long to exist.
func distinctKeys(keys [][]byte) [][]byte {
	seen := make(map[string]bool, len(keys))
	var out [][]byte
	for _, k := range keys {
		if model.KeyFits(k) && !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	return out
}

// cmdExists is EXISTS and TOUCH: how many of the arguments name a live key,
// repeats counted. redamo keeps no access times, so TOUCH only counts.
func cmdExists(c *Ctx) {
	keys := c.Args[1:]
	var states []model.KeyState
	if len(keys) == 1 {
		ks, err := readKey(c, keys[0])
		if err != nil {
			c.Fail(err)
			return
		}
		states = []model.KeyState{ks}
	} else {
		var err error
		if states, err = readKeys(c, keys); err != nil {
			c.Fail(err)
			return
		}
	}
	var n int64
	for _, ks := range states {
		n += boolInt(ks.Live)
	}
	c.W.Int(n)
}

func cmdType(c *Ctx) {
	ks, err := readKey(c, c.Args[1])
	switch {
	case err != nil:
		c.Fail(err)
	case !ks.Live:
		c.W.Simple("none")
	default:
		c.W.Simple(ks.Type)
	}
}

// ---- expiry ----------------------------------------------------------------------

// Options of the EXPIRE family.
const (
	expNX uint8 = 1 << iota
	expXX
	expGT
	expLT
)

func cmdExpire(c *Ctx)    { expireGeneric(c, c.NowMS(), true) }
func cmdPExpire(c *Ctx)   { expireGeneric(c, c.NowMS(), false) }
func cmdExpireAt(c *Ctx)  { expireGeneric(c, 0, true) }
func cmdPExpireAt(c *Ctx) { expireGeneric(c, 0, false) }

// parseExpireOpts parses NX/XX/GT/LT as Redis's
// parseExtendedExpireArgumentsOrReply does.
func parseExpireOpts(args [][]byte) (uint8, string) {
	var f uint8
	for _, a := range args {
		switch {
		case argIs(a, "nx"):
			f |= expNX
		case argIs(a, "xx"):
			f |= expXX
		case argIs(a, "gt"):
			f |= expGT
		case argIs(a, "lt"):
			f |= expLT
		default:
			return 0, errorf("Unsupported option %s", cString(a))
		}
	}
	if f&expNX != 0 && f&(expXX|expGT|expLT) != 0 {
		return 0, MsgNXXXGTLT
	}
	if f&expGT != 0 && f&expLT != 0 {
		return 0, MsgGTAndLT
	}
	return f, ""
}

// expireGeneric is the EXPIRE family: one UpdateItem setting the deadline,
// or one DeleteItem when the deadline has passed, either conditioned on the
// key being live and on the NX/XX/GT/LT rule (GT and LT treat a key without
// expiry as having an infinite TTL, as Redis does).
func expireGeneric(c *Ctx, basetime int64, seconds bool) {
	invalid := func() string { return fmt.Sprintf(MsgInvalidExpire, strings.ToLower(string(c.Args[0]))) }
	flags, msg := parseExpireOpts(c.Args[3:])
	if msg != "" {
		c.W.Error(msg)
		return
	}
	when, ok := model.String2ll(c.Args[2])
	if !ok {
		c.W.Error(MsgNotInt)
		return
	}
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			c.W.Error(invalid())
			return
		}
		when *= 1000
	}
	if when > math.MaxInt64-basetime {
		c.W.Error(invalid())
		return
	}
	when += basetime
	key := c.Args[1]
	if !model.KeyFits(key) {
		c.W.Int(0)
		return
	}
	now := c.NowMS()
	var rule dynastore.And // the NX/XX/GT/LT terms
	switch {
	case flags&expNX != 0:
		rule = append(rule, dynastore.NotExists{Attr: model.AttrExpiry})
	case flags&expXX != 0:
		rule = append(rule, dynastore.Exists{Attr: model.AttrExpiry})
	}
	switch {
	case flags&expGT != 0:
		rule = append(rule, dynastore.Exists{Attr: model.AttrExpiry},
			dynastore.Compare{Attr: model.AttrExpiry, Op: dynastore.OpLT, Val: model.NInt(when)})
	case flags&expLT != 0:
		rule = append(rule, dynastore.Or{
			dynastore.NotExists{Attr: model.AttrExpiry},
			dynastore.Compare{Attr: model.AttrExpiry, Op: dynastore.OpGT, Val: model.NInt(when)},
		})
	}
	cond := model.CondLive(now)
	if len(rule) > 0 {
		cond = append(dynastore.And{cond}, rule...)
	}
	k := model.ItemKey(c.DB(), key)
	var err error
	if when <= now {
		_, err = c.Store.Delete(c, k, dynastore.WriteOptions{Cond: cond})
	} else {
		_, err = c.Store.Update(c, k, dynastore.Update{Set: []dynastore.SetAction{
			{Attr: model.AttrExpiry, Val: model.NInt(when)},
			{Attr: dynastore.AttrTTL, Val: model.TTLSeconds(when)},
			{Attr: model.AttrVer, Val: model.NewVer()},
		}}, dynastore.WriteOptions{Cond: cond})
	}
	replyCondWrite(c, err)
}

// replyCondWrite answers :1 for a write that happened, :0 for one whose
// condition did not hold.
func replyCondWrite(c *Ctx, err error) {
	if err == nil {
		c.W.Int(1)
		return
	}
	if _, failed := model.CondFailed(err); failed {
		c.W.Int(0)
		return
	}
	c.Fail(err)
}

func cmdTTL(c *Ctx)         { ttlGeneric(c, false, false) }
func cmdPTTL(c *Ctx)        { ttlGeneric(c, true, false) }
func cmdExpireTime(c *Ctx)  { ttlGeneric(c, false, true) }
func cmdPExpireTime(c *Ctx) { ttlGeneric(c, true, true) }

// ttlGeneric is TTL, PTTL, EXPIRETIME and PEXPIRETIME: -2 for a missing key,
// -1 for one without expiry.
func ttlGeneric(c *Ctx, ms, absolute bool) {
	ks, err := readKey(c, c.Args[1])
	switch {
	case err != nil:
		c.Fail(err)
	case !ks.Live:
		c.W.Int(-2)
	case !ks.HasExpiry:
		c.W.Int(-1)
	default:
		ttl := ks.Expiry
		if !absolute {
			ttl -= c.NowMS()
		}
		if ttl < 0 {
			ttl = 0
		}
		if !ms {
			// Rounded to the nearest second, EXPIRETIME included.
			ttl = (ttl + 500) / 1000
		}
		c.W.Int(ttl)
	}
}

// cmdPersist: one UpdateItem removing the expiry, conditioned on a live key
// that has one.
func cmdPersist(c *Ctx) {
	key := c.Args[1]
	if !model.KeyFits(key) {
		c.W.Int(0)
		return
	}
	_, err := c.Store.Update(c, model.ItemKey(c.DB(), key), dynastore.Update{
		Set:    []dynastore.SetAction{{Attr: model.AttrVer, Val: model.NewVer()}},
		Remove: []string{model.AttrExpiry, dynastore.AttrTTL},
	}, dynastore.WriteOptions{Cond: dynastore.And{model.CondLive(c.NowMS()), dynastore.Exists{Attr: model.AttrExpiry}}})
	replyCondWrite(c, err)
}

// ---- RENAME, COPY ------------------------------------------------------------------

func cmdRename(c *Ctx)   { renameGeneric(c, false) }
func cmdRenameNX(c *Ctx) { renameGeneric(c, true) }

func renameGeneric(c *Ctx, nx bool) {
	src, dst := c.Args[1], c.Args[2]
	var res moveResult
	var err error
	if sameKey(src, dst) {
		// Nothing moves, but a missing key is still an error.
		var ks model.KeyState
		if ks, err = readKey(c, src); err == nil && ks.Live {
			res = moveTargetExists
		}
	} else {
		res, err = moveKeyItem(c, src, c.DB(), dst, nx)
	}
	switch {
	case err != nil:
		c.Fail(err)
	case res == moveNoSource:
		c.W.Error(MsgNoSuchKey)
	case nx:
		c.W.Int(boolInt(res == moveDone))
	default:
		c.W.Simple("OK")
	}
}

// cmdMove is RENAMENX into another database under the same name.
func cmdMove(c *Ctx) {
	n, ok := model.String2ll(c.Args[2])
	switch {
	case !ok:
		c.W.Error(MsgNotInt)
		return
	case n < math.MinInt32 || n > math.MaxInt32:
		c.W.Error(MsgNotInt32)
		return
	case n < 0 || n >= NumDBs:
		c.W.Error(MsgInvalidDB)
		return
	case int(n) == c.DB():
		c.W.Error(MsgSameObject)
		return
	}
	res, err := moveKeyItem(c, c.Args[1], int(n), c.Args[1], true)
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(boolInt(res == moveDone))
}

// What moveKeyItem did.
type moveResult uint8

const (
	moveNoSource     moveResult = iota // the source key does not exist
	moveTargetExists                   // nx and the target exists: nothing done
	moveDone
)

// moveKeyItem moves the key item of src (selected database) to dst in
// dstDB, keeping its expiry, replacing a live target unless nx. It reads
// both in one batch, then writes one transaction (delete the source, write
// the target, each conditioned on the version read; a large collection's
// registry entry follows its key); a lost race re-runs it.
func moveKeyItem(c *Ctx, src []byte, dstDB int, dst []byte, nx bool) (moveResult, error) {
	srcKey := model.ItemKey(c.DB(), src)
	if !model.KeyFits(src) {
		return moveNoSource, nil
	}
	var res moveResult
	err := model.RetryConflicts(c, func(int) error {
		var from, to model.KeyState
		keys := []dynastore.Key{srcKey}
		if model.KeyFits(dst) {
			keys = append(keys, model.ItemKey(dstDB, dst))
		}
		items, err := c.Store.BatchGet(c, keys)
		if err != nil {
			return err
		}
		if from, err = model.DecodeKey(items[0], c.NowMS()); err != nil {
			return err
		}
		if len(items) > 1 {
			if to, err = model.DecodeKey(items[1], c.NowMS()); err != nil {
				return err
			}
		}
		switch {
		case !from.Live:
			res = moveNoSource
			return nil
		case to.Live && nx:
			res = moveTargetExists
			return nil
		case !model.KeyFits(dst):
			return model.ErrKeyTooLong
		}
		dstPK := model.KeyPK(dstDB, dst)
		acts := []dynastore.TxAction{
			{Op: dynastore.TxDelete, Key: srcKey, Cond: from.Guard()},
			{Op: dynastore.TxPut, Item: model.Retarget(from.Raw, dstDB, dst), Cond: to.Guard()},
		}
		acts = append(acts, model.CollectionRenameActions(from.Raw, dstPK)...)
		res = moveDone
		return keyConflict(c.Store.Transact(c, acts))
	})
	return res, err
}

// copyOpts is a parsed COPY.
type copyOpts struct {
	src, dst []byte
	dstDB    int
	replace  bool
}

func parseCopy(c *Ctx) (copyOpts, string) {
	o := copyOpts{src: c.Args[1], dst: c.Args[2], dstDB: c.DB()}
	args := c.Args[3:]
	for j := 0; j < len(args); j++ {
		switch {
		case argIs(args[j], "replace"):
			o.replace = true
		case argIs(args[j], "db") && j+1 < len(args):
			n, ok := model.String2ll(args[j+1])
			if !ok {
				return o, MsgNotInt
			}
			if n < math.MinInt32 || n > math.MaxInt32 {
				return o, MsgNotInt32
			}
			if n < 0 || n >= NumDBs {
				return o, MsgInvalidDB
			}
			o.dstDB = int(n)
			j++
		default:
			return o, MsgSyntax
		}
	}
	if o.dstDB == c.DB() && sameKey(o.src, o.dst) {
		return o, MsgSameObject
	}
	return o, ""
}

// cmdCopy reads both keys in one batch and writes the copy in one
// transaction that also checks the source is unchanged, so the copy is of
// one consistent state. A large collection's members are copied first by the
// collection layer (CopyCollectionItem).
func cmdCopy(c *Ctx) {
	o, msg := parseCopy(c)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	if !model.KeyFits(o.src) {
		c.W.Int(0)
		return
	}
	srcKey := model.ItemKey(c.DB(), o.src)
	var copied int64
	err := model.RetryConflicts(c, func(int) error {
		copied = 0
		var dstRaw dynastore.Item
		var from, to model.KeyState
		keys := []dynastore.Key{srcKey}
		if model.KeyFits(o.dst) {
			keys = append(keys, model.ItemKey(o.dstDB, o.dst))
		}
		items, err := c.Store.BatchGet(c, keys)
		if err != nil {
			return err
		}
		if len(items) > 1 {
			dstRaw = items[1]
		}
		if from, err = model.DecodeKey(items[0], c.NowMS()); err == nil {
			to, err = model.DecodeKey(dstRaw, c.NowMS())
		}
		if err != nil || !from.Live || (to.Live && !o.replace) {
			return err
		}
		if !model.KeyFits(o.dst) {
			return model.ErrKeyTooLong
		}
		var item dynastore.Item
		var extra []dynastore.TxAction
		if from.Type == model.TypeString {
			item = model.Retarget(from.Raw, o.dstDB, o.dst)
		} else if item, extra, err = model.CopyCollectionItem(c, c.Store, from.Raw, model.KeyPK(o.dstDB, o.dst), c.NowMS()); err != nil {
			return err
		}
		acts := append([]dynastore.TxAction{
			{Op: dynastore.TxCheck, Key: srcKey, Cond: from.Guard()},
			{Op: dynastore.TxPut, Item: item, Cond: to.Guard()},
		}, extra...)
		copied = 1
		return keyConflict(c.Store.Transact(c, acts))
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(copied)
}

// ---- KEYS, SCAN, RANDOMKEY, DBSIZE ------------------------------------------------

// cmdKeys scans the table for the live keys of the selected database (only
// those starting with the pattern's literal prefix) and matches them.
func cmdKeys(c *Ctx) {
	pat := c.Args[1]
	all := len(pat) == 1 && pat[0] == '*'
	var keys [][]byte
	err := scanAll(c, c.Store, model.KeyFilter(c.DB(), globPrefix(pat), c.NowMS()), func(it dynastore.Item) error {
		pk, _ := it.Get(dynastore.AttrPK).(dynastore.B)
		if _, key, ok := model.RedisKeyOf(pk); ok && (all || globMatch(pat, key)) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.Bulk(k)
	}
}

// scanOpts is a parsed SCAN.
type scanOpts struct {
	cursor   uint64
	count    int64
	pattern  []byte
	typeName string
	hasType  bool
}

// parseCursor reads a cursor as Redis does (strtoul on a C string, base 10:
// an optional sign, a negative value wrapping around; no leading space, no
// trailing garbage, no overflow).
func parseCursor(arg []byte) (uint64, bool) {
	if i := bytes.IndexByte(arg, 0); i >= 0 {
		arg = arg[:i]
	}
	s := string(arg)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
		if s == "" {
			return 0, false
		}
	}
	if s == "" {
		return 0, len(arg) == 0
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		u = -u
	}
	return u, true
}

func parseScan(args [][]byte) (scanOpts, string) {
	o := scanOpts{count: 10}
	var ok bool
	if o.cursor, ok = parseCursor(args[0]); !ok {
		return o, MsgInvalidCursor
	}
	for i := 1; i < len(args); {
		more := len(args) - i
		switch {
		case argIs(args[i], "count") && more >= 2:
			n, ok := model.String2ll(args[i+1])
			if !ok {
				return o, MsgNotInt
			}
			if n < 1 {
				return o, MsgSyntax
			}
			o.count = n
			i += 2
		case argIs(args[i], "match") && more >= 2:
			o.pattern = args[i+1]
			if len(o.pattern) == 1 && o.pattern[0] == '*' {
				o.pattern = nil
			}
			i += 2
		case argIs(args[i], "type") && more >= 2:
			o.typeName, o.hasType = asciiLower(cString(args[i+1])), true
			i += 2
		default:
			return o, MsgSyntax
		}
	}
	return o, ""
}

// SCAN reads the table in pages. A page's Limit counts the items DynamoDB
// examines, other databases' keys and internal items included, so a call
// starts with a page of COUNT items and, while it finds too few keys of the
// selected database, reads growing pages (x4 each, up to scanMaxLimit), for
// at most scanPageBudget pages. A dense database then answers about COUNT
// keys per call, a sparse one is not crawled COUNT items at a time, and a
// small table is done in one call, as a small Redis database is.
const (
	scanPageBudget = 6
	scanMaxLimit   = 1000
	// scanMaxCount caps the first page of a huge COUNT (DynamoDB ends a
	// page at 1 MB anyway).
	scanMaxCount = 100_000
)

// cmdScan continues a table scan from the position kept under the cursor,
// returning the live keys of the selected database met on the way (COUNT
// bounds the items examined, as Redis's COUNT bounds work, MATCH filters
// after), and keeps the new position under a new cursor (model/cursors.go:
// why in the table, why below 2^53).
func cmdScan(c *Ctx) {
	o, msg := parseScan(c.Args[1:])
	if msg != "" {
		c.W.Error(msg)
		return
	}
	var after *dynastore.Key
	if o.cursor != 0 {
		pos, ok, err := model.LoadScanCursor(c, o.cursor)
		if err != nil {
			c.Fail(err)
			return
		}
		if !ok {
			// Not a cursor redamo handed out (or one garbage-collected
			// after a day): continuing from anywhere would silently skip
			// keys, so say so.
			c.W.Error(MsgInvalidCursor)
			return
		}
		after = &pos
	}
	filter := model.KeyFilter(c.DB(), nil, c.NowMS())
	if o.hasType {
		filter = append(filter.(dynastore.And), model.CondType(o.typeName))
	}
	limit := min(o.count, scanMaxCount)
	var keys [][]byte
	var found int64
	for pages := 0; pages < scanPageBudget; pages++ {
		page, err := c.Store.Scan(c, dynastore.Scan{Limit: int(limit), Filter: filter, After: after})
		if err != nil {
			c.Fail(err)
			return
		}
		for _, it := range page.Items {
			pk, _ := it.Get(dynastore.AttrPK).(dynastore.B)
			if _, key, ok := model.RedisKeyOf(pk); ok && (o.pattern == nil || globMatch(o.pattern, key)) {
				keys = append(keys, key)
			}
		}
		found += int64(len(page.Items))
		after = page.Next
		if after == nil || found >= o.count {
			break
		}
		if limit < scanMaxLimit {
			limit = min(limit*4, max(scanMaxLimit, limit))
		}
	}
	next := "0"
	if after != nil {
		id, err := model.SaveScanCursor(c, *after)
		if err != nil {
			c.Fail(err)
			return
		}
		next = strconv.FormatUint(id, 10)
	}
	c.W.Array(2)
	c.W.BulkString(next)
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.Bulk(k)
	}
}

// randomKeyCandidates is how many live keys RANDOMKEY gathers, from a random
// position on, before choosing one of them at random.
const randomKeyCandidates = 16

// cmdRandomKey scans from a random position (wrapping around once) until it
// has met a few live keys of the selected database, and returns one of them
// at random. DynamoDB orders a scan by a hash of the key, so the position is
// random; the memory store orders by key bytes, where gathering several
// candidates keeps the choice from always falling on the same key.
func cmdRandomKey(c *Ctx) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		c.Fail(fmt.Errorf("commands: random position: %w", err))
		return
	}
	filter := model.KeyFilter(c.DB(), nil, c.NowMS())
	start := &dynastore.Key{PK: append(model.DBPrefix(c.DB()), b[:8]...), SK: model.KeyItemSK}
	var candidates [][]byte
	seen := map[string]bool{}
gather:
	for _, after := range []*dynastore.Key{start, nil} {
		for {
			page, err := c.Store.Scan(c, dynastore.Scan{Limit: 100, Filter: filter, After: after})
			if err != nil {
				c.Fail(err)
				return
			}
			for _, it := range page.Items {
				pk, _ := it.Get(dynastore.AttrPK).(dynastore.B)
				if _, key, ok := model.RedisKeyOf(pk); ok && !seen[string(key)] {
					seen[string(key)] = true
					candidates = append(candidates, key)
				}
			}
			if len(candidates) >= randomKeyCandidates {
				break gather
			}
			if page.Next == nil {
				break
			}
			after = page.Next
		}
	}
	if len(candidates) == 0 {
		c.W.Nil()
		return
	}
	c.W.Bulk(candidates[binary.BigEndian.Uint64(b[8:])%uint64(len(candidates))])
}

// cmdDBSize counts the live keys of the selected database with a strongly
// consistent Scan of the whole table. It stays exact rather than cheap: a
// client that writes a key and asks DBSIZE expects it counted, as Redis
// does, and neither DynamoDB's item count (hours old, every item of every
// database) nor a per-database counter (a write on a hot item for every key
// created or deleted, in the transaction of every write) gives that for
// less. Monitoring reads INFO keyspace instead, which never scans (README).
func cmdDBSize(c *Ctx) {
	var n int64
	err := scanAll(c, c.Store, model.KeyFilter(c.DB(), nil, c.NowMS()), func(dynastore.Item) error {
		n++
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}

// ---- FLUSHDB, FLUSHALL -----------------------------------------------------------

// parseFlush accepts Redis's optional SYNC or ASYNC. Both flush before
// replying: redamo has no background freeing to hand the work to.
func parseFlush(args [][]byte) bool {
	return len(args) == 0 || (len(args) == 1 && (argIs(args[0], "sync") || argIs(args[0], "async")))
}

func cmdFlushDB(c *Ctx) {
	if !parseFlush(c.Args[1:]) {
		c.W.Error(MsgSyntax)
		return
	}
	flushPrefix(c, model.DBPrefix(c.DB()))
}

func cmdFlushAll(c *Ctx) {
	if !parseFlush(c.Args[1:]) {
		c.W.Error(MsgSyntax)
		return
	}
	flushPrefix(c, []byte{model.NsKey})
}

// flushWorkers is how many deletes a flush keeps in flight.
const flushWorkers = 8

// flushPrefix deletes every item whose pk starts with prefix. A table flush
// cannot be one atomic request; each delete is conditioned on the version
// the scan saw, so a key written after the scan read it survives, as a write
// that came after the flush would.
func flushPrefix(c *Ctx, prefix []byte) {
	work := make(chan dynastore.Item)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for i := 0; i < flushWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				var cond dynastore.Cond
				if v := it.Get(model.AttrVer); v != nil {
					cond = dynastore.Compare{Attr: model.AttrVer, Op: dynastore.OpEQ, Val: v}
				}
				_, err := c.Store.Delete(c, it.Key(), dynastore.WriteOptions{Cond: cond})
				if _, changed := model.CondFailed(err); err != nil && !changed {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	err := scanAll(c, c.Store, dynastore.BeginsWith{Attr: dynastore.AttrPK, Prefix: prefix}, func(it dynastore.Item) error {
		mu.Lock()
		failed := firstErr
		mu.Unlock()
		if failed != nil {
			return failed
		}
		if it.Has(model.AttrWatchMark) {
			// No key (it reads as expired), and a watcher's: Redis's
			// flush does not touch a watched key that did not exist.
			return nil
		}
		work <- it
		return nil
	})
	close(work)
	wg.Wait()
	if err == nil {
		err = firstErr
	}
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Simple("OK")
}

// ---- OBJECT ----------------------------------------------------------------------

// sharedIntegers is Redis's OBJ_SHARED_INTEGERS: integer strings below it
// share one object whose refcount reads as INT_MAX.
const sharedIntegers = 10000

var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Prints this help.",
}

// msgNoIdleTime: redamo keeps no access times (a write per read would double
// the cost of every read), so it cannot answer OBJECT IDLETIME honestly.
const msgNoIdleTime = "ERR OBJECT IDLETIME is not supported: redamo does not track key access times"

func cmdObjectHelp(c *Ctx) {
	c.W.Array(len(objectHelp))
	for _, l := range objectHelp {
		c.W.Simple(l)
	}
}

// objectLookup reads the key OBJECT inspects; false when it already replied.
func objectLookup(c *Ctx) (model.KeyState, bool) {
	ks, err := readKey(c, c.Args[2])
	if err != nil {
		c.Fail(err)
		return ks, false
	}
	if !ks.Live {
		c.W.Nil()
		return ks, false
	}
	return ks, true
}

func cmdObjectEncoding(c *Ctx) {
	ks, ok := objectLookup(c)
	if !ok {
		return
	}
	if ks.Type == model.TypeString {
		c.W.Bulk([]byte(model.StringEncoding(ks.Raw)))
		return
	}
	enc, err := objectEncoding(c, c.Args[2], ks.Type)
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Bulk([]byte(enc))
}

// cmdObjectFreq answers as Redis does under its default maxmemory-policy
// (noeviction, not an LFU policy): an error for an existing key.
func cmdObjectFreq(c *Ctx) {
	if _, ok := objectLookup(c); ok {
		c.W.Error(MsgLFUNotSelected)
	}
}

func cmdObjectIdleTime(c *Ctx) {
	if _, ok := objectLookup(c); ok {
		c.W.Error(msgNoIdleTime)
	}
}

func cmdObjectRefCount(c *Ctx) {
	ks, ok := objectLookup(c)
	if !ok {
		return
	}
	if ks.Type == model.TypeString && model.StringEncoding(ks.Raw) == model.EncInt {
		if v, err := ks.StringValue(); err == nil {
			if n, ok := model.String2ll(v); ok && n >= 0 && n < sharedIntegers {
				c.W.Int(math.MaxInt32)
				return
			}
		}
	}
	c.W.Int(1)
}

// ---- INFO keyspace -----------------------------------------------------------------

// DBKeyspace is one line of INFO's keyspace section.
type DBKeyspace struct {
	DB            int
	Keys, Expires int64
}

// keyspaceInfo reports the keys of every non-empty database, in ascending
// db order, without a Scan: monitoring sends INFO ALL on every scrape, and
// a Scan bills every item of the table. The count is the store's
// (dynastore.Counter). The embedded store's is exact: the live keys, and
// those with an expiry, of each database. DynamoDB's is the table's item
// count as DynamoDB last refreshed it (about every six hours), which counts
// every item, not only key items, and cannot tell databases or expiries
// apart: it is reported as db0's keys, an estimate (README, "INFO").
func keyspaceInfo(c *Ctx) ([]DBKeyspace, error) {
	st := c.Store
	txn, inTxn := st.(*model.Txn)
	if inTxn {
		st = txn.Base()
	}
	counter, ok := st.(dynastore.Counter)
	if !ok {
		return nil, nil
	}
	var counts [NumDBs]DBKeyspace
	add := func(it dynastore.Item) {
		pk, _ := it.Get(dynastore.AttrPK).(dynastore.B)
		db, _, ok := model.RedisKeyOf(pk)
		if !ok || db >= NumDBs {
			return
		}
		counts[db].Keys++
		if it.Has(model.AttrExpiry) {
			counts[db].Expires++
		}
	}
	filter := model.KeyFilter(-1, nil, c.NowMS())
	n, exact, err := counter.CountItems(c, filter, add)
	if err != nil {
		return nil, err
	}
	if !exact {
		if n == 0 {
			return nil, nil
		}
		return []DBKeyspace{{DB: 0, Keys: n}}, nil
	}
	if inTxn {
		// Inside MULTI or a script the count includes the transaction's
		// own writes, which only its scan sees; on a store that counts
		// exactly, items are in this process and a scan bills nothing.
		counts = [NumDBs]DBKeyspace{}
		if err := scanAll(c, c.Store, filter, func(it dynastore.Item) error { add(it); return nil }); err != nil {
			return nil, err
		}
	}
	var out []DBKeyspace
	for db, ks := range counts {
		if ks.Keys > 0 {
			ks.DB = db
			out = append(out, ks)
		}
	}
	return out, nil
}

// ---- small helpers ------------------------------------------------------------------

// cString is an argument as C code sees it: up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// asciiLower lower-cases ASCII letters only, as C's tolower does.
func asciiLower(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}

// errorf formats an "ERR ..." reply as Redis's addReplyErrorFormat does:
// newlines at the ends trimmed, the ones inside turned into spaces, so a
// client's argument cannot break the protocol.
func errorf(format string, args ...any) string {
	b := []byte(strings.Trim(fmt.Sprintf(format, args...), "\r\n"))
	for i, ch := range b {
		if ch == '\r' || ch == '\n' {
			b[i] = ' '
		}
	}
	return "ERR " + string(b)
}
