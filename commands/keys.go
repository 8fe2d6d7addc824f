package commands

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redamo/redamo/events"
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

// cmdDel is DEL and UNLINK: one DeleteItem for one key (model.DeleteKey),
// else a batched read and one transaction (model.DeleteKeys).
func cmdDel(c *Ctx) {
	var deleted [][]byte
	var err error
	if len(c.Args) == 2 {
		var one bool
		if one, err = model.DeleteKey(c, c.Args[1]); one {
			deleted = c.Args[1:]
		}
	} else {
		deleted, err = model.DeleteLiveKeys(c, c.Args[1:])
	}
	if err != nil {
		c.Fail(err)
		return
	}
	for _, k := range deleted {
		c.Notify(events.Generic, "del", k)
	}
	c.W.Int(int64(len(deleted)))
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
		if states, err = model.ReadKeys(c, keys); err != nil {
			c.Fail(err)
			return
		}
	}
	var n int64
	for i, ks := range states {
		notifyMiss(c, ks, keys[i])
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
		c.NotifyKeyMiss(c.Args[1])
		c.W.Simple("none")
	default:
		c.W.Simple(ks.Type)
	}
}

// ---- expiry ----------------------------------------------------------------------

// Options of the EXPIRE family.
const (
	expNX = uint8(model.ExpireNX)
	expXX = uint8(model.ExpireXX)
	expGT = uint8(model.ExpireGT)
	expLT = uint8(model.ExpireLT)
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

// expireGeneric is the EXPIRE family (model.Expire): one UpdateItem
// setting the deadline, or one DeleteItem when the deadline has passed.
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
	done, err := model.Expire(c, c.Args[1], when, model.ExpireRule(flags))
	past := when <= c.NowMS()
	if done && past {
		c.Notify(events.Generic, "del", c.Args[1])
	}
	replyCondWrite(c, done, err)
	if done && !past {
		// Redis replies before it reports the new deadline.
		c.Notify(events.Generic, "expire", c.Args[1])
	}
}

// replyCondWrite answers :1 for a write that happened, :0 for one whose
// condition did not hold.
func replyCondWrite(c *Ctx, done bool, err error) {
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(boolInt(done))
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
		c.NotifyKeyMiss(c.Args[1])
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
// that has one (model.Persist).
func cmdPersist(c *Ctx) {
	done, err := model.Persist(c, c.Args[1])
	if done {
		c.Notify(events.Generic, "persist", c.Args[1])
	}
	replyCondWrite(c, done, err)
}

// ---- RENAME, COPY ------------------------------------------------------------------

func cmdRename(c *Ctx)   { renameGeneric(c, false) }
func cmdRenameNX(c *Ctx) { renameGeneric(c, true) }

func renameGeneric(c *Ctx, nx bool) {
	src, dst := c.Args[1], c.Args[2]
	var res model.MoveResult
	var err error
	if sameKey(src, dst) {
		// Nothing moves, but a missing key is still an error.
		var ks model.KeyState
		if ks, err = readKey(c, src); err == nil && ks.Live {
			res = model.MoveTargetExists
		}
	} else {
		res, err = model.MoveKey(c, src, c.DB(), dst, nx)
	}
	if err == nil && res == model.MoveDone {
		// Redis adds the target anew (a "new" even over a key it replaced).
		c.KeyCreated(dst)
		c.Notify(events.Generic, "rename_from", src)
		c.Notify(events.Generic, "rename_to", dst)
	}
	switch {
	case err != nil:
		c.Fail(err)
	case res == model.MoveNoSource:
		c.W.Error(MsgNoSuchKey)
	case nx:
		c.W.Int(boolInt(res == model.MoveDone))
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
	res, err := model.MoveKey(c, c.Args[1], int(n), c.Args[1], true)
	if err != nil {
		c.Fail(err)
		return
	}
	if res == model.MoveDone {
		c.notifyIn(int(n), events.New, "new", c.Args[1])
		c.Notify(events.Generic, "move_from", c.Args[1])
		c.notifyIn(int(n), events.Generic, "move_to", c.Args[1])
	}
	c.W.Int(boolInt(res == model.MoveDone))
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

// cmdCopy copies in one transaction that also checks the source is
// unchanged (model.CopyKey).
func cmdCopy(c *Ctx) {
	o, msg := parseCopy(c)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	copied, err := model.CopyKey(c, o.src, o.dstDB, o.dst, o.replace)
	if err != nil {
		c.Fail(err)
		return
	}
	if copied {
		c.notifyIn(o.dstDB, events.New, "new", o.dst)
		c.notifyIn(o.dstDB, events.Generic, "copy_to", o.dst)
	}
	c.W.Int(boolInt(copied))
}

// ---- KEYS, SCAN, RANDOMKEY, DBSIZE ------------------------------------------------

// cmdKeys scans the table for the live keys of the selected database (only
// those starting with the pattern's literal prefix) and matches them.
func cmdKeys(c *Ctx) {
	pat := c.Args[1]
	all := len(pat) == 1 && pat[0] == '*'
	var keys [][]byte
	err := model.Keys(c, globPrefix(pat), func(key []byte) {
		if all || globMatch(pat, key) {
			keys = append(keys, key)
		}
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
	var keys [][]byte
	cursor, ok, err := model.ScanKeys(c, o.cursor, model.ScanOptions{Count: o.count, Type: o.typeName, HasType: o.hasType}, func(key []byte) {
		if o.pattern == nil || globMatch(o.pattern, key) {
			keys = append(keys, key)
		}
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if !ok {
		// Not a cursor redamo handed out (or one garbage-collected after a
		// day): continuing from anywhere would silently skip keys, so say
		// so.
		c.W.Error(MsgInvalidCursor)
		return
	}
	next := strconv.FormatUint(cursor, 10)
	c.W.Array(2)
	c.W.BulkString(next)
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.Bulk(k)
	}
}

// cmdRandomKey returns a live key of the selected database chosen at
// random (model.RandomKey).
func cmdRandomKey(c *Ctx) {
	key, err := model.RandomKey(c)
	switch {
	case err != nil:
		c.Fail(err)
	case key == nil:
		c.W.Nil()
	default:
		c.W.Bulk(key)
	}
}

// cmdDBSize counts the live keys of the selected database with a strongly
// consistent Scan of the whole table. It stays exact rather than cheap: a
// client that writes a key and asks DBSIZE expects it counted, as Redis
// does, and neither DynamoDB's item count (hours old, every item of every
// database) nor a per-database counter (a write on a hot item for every key
// created or deleted, in the transaction of every write) gives that for
// less. Monitoring reads INFO keyspace instead, which never scans (README).
func cmdDBSize(c *Ctx) {
	n, err := model.CountKeys(c)
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
	replyFlush(c, model.FlushDB(c, c.DB()))
}

func cmdFlushAll(c *Ctx) {
	if !parseFlush(c.Args[1:]) {
		c.W.Error(MsgSyntax)
		return
	}
	replyFlush(c, model.FlushAll(c))
}

// replyFlush answers a flush: a table flush cannot be one atomic request;
// each delete is conditioned on the version the scan saw, so a key written
// after the scan read it survives, as a write that came after the flush
// would (model.FlushDB).
func replyFlush(c *Ctx, err error) {
	if err != nil {
		c.Fail(err)
		return
	}
	notifyFlush(c, strings.ToLower(string(c.Args[0])))
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
// (Redis refuses IDLETIME under an LFU maxmemory-policy, and FREQ under any
// other; redamo's policy is noeviction, which CONFIG SET cannot change, so
// only FREQ's refusal is Redis's own.)
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
		c.W.Bulk([]byte(ks.Encoding()))
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
// (noeviction, not an LFU policy, and the only one redamo has): an error
// for an existing key, nil for a missing one.
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
	if ks.Type == model.TypeString && ks.Encoding() == model.EncInt {
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
type DBKeyspace = model.DBKeys

// keyspaceInfo reports the keys of every non-empty database, in ascending
// db order, without a Scan (model.KeyspaceCounts).
func keyspaceInfo(c *Ctx) ([]DBKeyspace, error) {
	return model.KeyspaceCounts(c, NumDBs)
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
