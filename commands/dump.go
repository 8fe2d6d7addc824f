package commands

// DUMP and RESTORE, in Redis 7.0's serialization (model/dump.go says what
// comes back byte for byte and what cannot).

import (
	"errors"
	"strings"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/internal/rdb"
	"github.com/redamo/redamo/model"
)

func registerDump(t *Table) {
	t.Register([]Row{
		{Name: "dump", Run: cmdDump},
		{Name: "restore", Run: cmdRestore},
	})
}

// cmdDump is DUMP: one read of the key item (and the members of a large
// collection).
func cmdDump(c *Ctx) {
	p := c.Srv.encoding().params
	payload, err := model.Dump(c, c.Args[1], model.DumpOptions{
		Limits:   model.EncodingLimits{HashEntries: p.hashEntries, HashValue: p.hashValue, SetIntsetEntries: p.setIntsetEntries},
		ListFill: p.listSize,
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if payload == nil {
		c.NotifyKeyMiss(c.Args[1])
		c.W.Nil()
		return
	}
	c.W.Bulk(payload)
}

// restoreOpts is a parsed RESTORE. msg, when set, is the reply a valid
// option list still gets once the key is known not to be busy: the TTL's
// or the payload's error (Redis checks the key first).
type restoreOpts struct {
	replace, absTTL bool
	ttl             int64
	obj             *rdb.Object
	msg             string
}

// parseRestore reads RESTORE's options, then its TTL and payload. A bad
// option is an error at once (ok false); a bad TTL or payload is left in
// msg.
func parseRestore(c *Ctx) (o restoreOpts, optMsg string) {
	idle, freq := false, false
	for j := 4; j < len(c.Args); j++ {
		more := len(c.Args) - j - 1
		switch a := strings.ToLower(string(c.Args[j])); {
		case a == "replace":
			o.replace = true
		case a == "absttl":
			o.absTTL = true
		case a == "idletime" && more >= 1 && !freq:
			v, ok := model.String2ll(c.Args[j+1])
			switch {
			case !ok:
				return o, MsgNotInt
			case v < 0:
				return o, MsgRestoreIdle
			}
			idle = true
			j++
		case a == "freq" && more >= 1 && !idle:
			v, ok := model.String2ll(c.Args[j+1])
			switch {
			case !ok:
				return o, MsgNotInt
			case v < 0 || v > 255:
				return o, MsgRestoreFreq
			}
			freq = true
			j++
		default:
			return o, MsgSyntax
		}
	}
	ttl, ok := model.String2ll(c.Args[2])
	switch {
	case !ok:
		o.msg = MsgNotInt
	case ttl < 0:
		o.msg = MsgRestoreTTL
	}
	o.ttl = ttl
	if o.msg != "" {
		return o, ""
	}
	if _, ok := rdb.CheckTrailer(c.Args[3]); !ok {
		o.msg = MsgRestorePayload
		return o, ""
	}
	obj, err := rdb.Restore(c.Args[3])
	if err != nil {
		o.msg = MsgRestoreFormat
		return o, ""
	}
	o.obj = obj
	return o, ""
}

// cmdRestore is RESTORE: one conditional PutItem for a value that fits the
// key item. IDLETIME and FREQ are checked and, as under Redis's default
// maxmemory-policy for FREQ, change nothing a client sees.
func cmdRestore(c *Ctx) {
	o, msg := parseRestore(c)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	key := c.Args[1]
	if o.msg != "" {
		// Redis answers BUSYKEY before it looks at the TTL or the payload.
		if !o.replace {
			ks, err := model.ReadKey(c, key)
			if err != nil {
				c.Fail(err)
				return
			}
			if ks.Live {
				c.W.Error(MsgBusyKey)
				return
			}
		}
		c.W.Error(o.msg)
		return
	}
	at := o.ttl
	if at != 0 && !o.absTTL {
		at += c.NowMS()
	}
	p := c.Srv.encoding().params
	out, err := model.Restore(c, key, model.RestoreArgs{
		Object: o.obj, ExpireAt: at, Replace: o.replace,
		ZSetEntries: p.zsetEntries, ZSetValue: p.zsetValue,
	})
	switch {
	case errors.Is(err, model.ErrBusyKey):
		c.W.Error(MsgBusyKey)
		return
	case err != nil:
		c.Fail(err)
		return
	}
	if out.Deleted {
		c.Notify(events.Generic, "del", key)
	}
	if out.Written {
		c.Notify(events.Generic, "restore", key)
		// A list, sorted set or stream may be what a blocked client waits for.
		c.wake(key)
	}
	c.W.Simple("OK")
}
