package commands

import "github.com/redamo/redamo/model"

// Replies of LCS, as Redis 7.0 words them.
const (
	MsgLCSNotString = "ERR The specified keys must contain string values"
	MsgLCSLenAndIdx = "ERR If you want both the length and indexes, please just use IDX."
	MsgLCSTooLong   = "ERR String too long for LCS"
	MsgLCSMemory    = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
)

func registerLCS(t *Table) {
	t.Register([]Row{{Name: "lcs", Run: cmdLCS}})
}

// cmdLCS reads both keys in one batch; as in Redis their types are
// checked before the options are parsed.
func cmdLCS(c *Ctx) {
	states, err := model.ReadKeys(c, c.Args[1:3])
	if err != nil {
		c.Fail(err)
		return
	}
	vals := make([][]byte, 2)
	for i, ks := range states {
		if !ks.Live {
			c.NotifyKeyMiss(c.Args[1+i])
		}
	}
	for i, ks := range states {
		if !ks.Live {
			continue
		}
		if ks.Type != model.TypeString {
			c.W.Error(MsgLCSNotString)
			return
		}
		if vals[i], err = ks.StringValue(); err != nil {
			c.Fail(err)
			return
		}
	}
	var getLen, getIdx, withLen bool
	var minLen int64
	for j := 3; j < len(c.Args); j++ {
		switch opt := c.Args[j]; {
		case argIs(opt, "idx"):
			getIdx = true
		case argIs(opt, "len"):
			getLen = true
		case argIs(opt, "withmatchlen"):
			withLen = true
		case argIs(opt, "minmatchlen") && j+1 < len(c.Args):
			n, ok := model.String2ll(c.Args[j+1])
			if !ok {
				c.W.Error(MsgNotInt)
				return
			}
			minLen = max(n, 0)
			j++
		default:
			c.W.Error(MsgSyntax)
			return
		}
	}
	if getLen && getIdx {
		c.W.Error(MsgLCSLenAndIdx)
		return
	}
	a, b := vals[0], vals[1]
	if int64(len(a)) >= 1<<32-2 || int64(len(b)) >= 1<<32-2 {
		c.W.Error(MsgLCSTooLong)
		return
	}
	if model.LCSTableBytes(len(a), len(b)) > uint64(maxStringLen(c)) {
		c.W.Error(MsgLCSMemory)
		return
	}
	seq, n, matches := model.LCS(a, b, getIdx, minLen)
	switch {
	case getIdx:
		c.W.Map(2)
		c.W.BulkString("matches")
		c.W.Array(len(matches))
		for _, m := range matches {
			if withLen {
				c.W.Array(3)
			} else {
				c.W.Array(2)
			}
			c.W.Array(2)
			c.W.Int(m.AStart)
			c.W.Int(m.AEnd)
			c.W.Array(2)
			c.W.Int(m.BStart)
			c.W.Int(m.BEnd)
			if withLen {
				c.W.Int(m.Len)
			}
		}
		c.W.BulkString("len")
		c.W.Int(n)
	case getLen:
		c.W.Int(n)
	default:
		c.W.Bulk(seq)
	}
}
