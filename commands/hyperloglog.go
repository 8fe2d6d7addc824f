package commands

import (
	"errors"
	"fmt"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// Replies of the HyperLogLog commands, as Redis 7.0 words them.
const (
	MsgNotHLL       = "WRONGTYPE Key is not a valid HyperLogLog string value."
	MsgHLLCorrupt   = "INVALIDOBJ Corrupted HLL object detected"
	MsgPFDebugNoKey = "ERR The specified key does not exist"
	MsgPFNotSparse  = "ERR HLL encoding is not sparse"
	MsgPFDebugSub   = "ERR Unknown PFDEBUG subcommand '%s'"
)

func registerHyperLogLog(t *Table) {
	t.Register([]Row{
		{Name: "pfadd", Run: cmdPFAdd},
		{Name: "pfcount", Run: cmdPFCount, MayReplicate: true}, // it may write the cache
		{Name: "pfmerge", Run: cmdPFMerge},
		{Name: "pfselftest", Run: cmdPFSelfTest},
		{Name: "pfdebug", Run: cmdPFDebug},
	})
}

// HLLSparseMaxBytes is hll-sparse-max-bytes: the size past which a sparse
// HyperLogLog turns dense.
func (s *Server) HLLSparseMaxBytes() int64 {
	if n := s.hllSparse.Load(); n > 0 {
		return n - 1
	}
	return model.DefaultHLLSparseMaxBytes
}

// SetHLLSparseMaxBytes changes hll-sparse-max-bytes for the following
// updates.
func (s *Server) SetHLLSparseMaxBytes(n int64) { s.hllSparse.Store(n + 1) }

// failHLL replies to a HyperLogLog operation's error.
func failHLL(c *Ctx, err error) {
	switch {
	case errors.Is(err, model.ErrNotHLL):
		c.W.Error(MsgNotHLL)
	case errors.Is(err, model.ErrHLLCorrupt):
		c.W.Error(MsgHLLCorrupt)
	default:
		c.Fail(err)
	}
}

func cmdPFAdd(c *Ctx) {
	updated, err := model.PFAdd(c, c.Args[1], c.Args[2:], c.Srv.HLLSparseMaxBytes())
	if err != nil {
		failHLL(c, err)
		return
	}
	if updated {
		c.Notify(events.String, "pfadd", c.Args[1])
	}
	c.W.Int(b2i(updated))
}

func cmdPFCount(c *Ctx) {
	var n uint64
	var err error
	if len(c.Args) > 2 {
		n, err = model.PFCountKeys(c, c.Args[1:], c.NotifyKeyMiss)
	} else {
		var found bool
		if n, found, err = model.PFCount(c, c.Args[1]); err == nil && !found {
			c.NotifyKeyMiss(c.Args[1])
		}
	}
	if err != nil {
		failHLL(c, err)
		return
	}
	c.W.Int(int64(n))
}

func cmdPFMerge(c *Ctx) {
	err := model.PFMerge(c, c.Args[1], c.Args[2:], c.Srv.HLLSparseMaxBytes(), c.NotifyKeyMiss)
	if err != nil {
		failHLL(c, err)
		return
	}
	c.Notify(events.String, "pfadd", c.Args[1])
	c.W.Simple("OK")
}

func cmdPFSelfTest(c *Ctx) {
	if msg := model.HLLSelfTest(); msg != "" {
		c.W.Error("ERR " + msg)
		return
	}
	c.W.Simple("OK")
}

// cmdPFDebug is Redis's PFDEBUG: GETREG and TODENSE turn a sparse value
// dense (and store it so), DECODE lists a sparse value's opcodes,
// ENCODING names the encoding. The key is checked before the subcommand.
func cmdPFDebug(c *Ctx) {
	sub, key := c.Args[1], c.Args[2]
	v, err := model.HLLValue(c, key)
	switch {
	case err != nil:
		failHLL(c, err)
		return
	case v == nil:
		c.W.Error(MsgPFDebugNoKey)
		return
	}
	switch {
	case argIs(sub, "getreg"), argIs(sub, "todense"):
		dense, converted, err := model.HLLToDense(c, key)
		if err != nil {
			failHLL(c, err)
			return
		}
		if dense == nil {
			c.W.Error(MsgPFDebugNoKey)
			return
		}
		if argIs(sub, "todense") {
			c.W.Int(b2i(converted))
			return
		}
		regs := model.HLLRegisters(dense)
		c.W.Array(len(regs))
		for _, r := range regs {
			c.W.Int(int64(r))
		}
	case argIs(sub, "decode"):
		if !model.HLLIsSparse(v) {
			c.W.Error(MsgPFNotSparse)
			return
		}
		c.W.BulkString(model.HLLDecode(v))
	case argIs(sub, "encoding"):
		if model.HLLIsSparse(v) {
			c.W.Simple("sparse")
		} else {
			c.W.Simple("dense")
		}
	default:
		c.W.Error(fmt.Sprintf(MsgPFDebugSub, sub))
	}
}
