package commands

// MEMORY USAGE reports what a key occupies in the table, by DynamoDB's own
// accounting of item sizes (dynastore.ItemSize, what capacity units and the
// 400 KB limit are counted on): its key item, and for a large collection
// its member items. Redis's other MEMORY subcommands (DOCTOR, STATS,
// MALLOC-STATS, PURGE) describe one process's allocator, where redamo's
// data does not live: they get Redis's unknown-subcommand error.

import (
	"math"
	"strings"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// defaultMemorySamples is Redis's OBJ_COMPUTE_SIZE_DEF_SAMPLES.
const defaultMemorySamples = 5

func cmdMemoryHelp(c *Ctx) {
	writeHelp(c, "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).",
	)
}

// cmdMemoryUsage is MEMORY USAGE key [SAMPLES count], with Redis's errors:
// a syntax error for anything but SAMPLES and for a negative count (the
// last SAMPLES given counts). A missing key is the null reply.
func cmdMemoryUsage(c *Ctx) {
	samples := int64(defaultMemorySamples)
	for i := 3; i < len(c.Args); i += 2 {
		if !strings.EqualFold(string(c.Args[i]), "samples") || i+1 == len(c.Args) {
			c.W.Error(MsgSyntax)
			return
		}
		n, ok := model.String2ll(c.Args[i+1])
		switch {
		case !ok:
			c.W.Error(MsgNotInt)
			return
		case n < 0:
			c.W.Error(MsgSyntax)
			return
		case n == 0:
			n = math.MaxInt64
		}
		samples = n
	}
	size, found, err := keyUsage(c, c.Args[2], samples)
	switch {
	case err != nil:
		c.Fail(err)
	case !found:
		c.W.Nil()
	default:
		c.W.Int(size)
	}
}

// keyUsage is the bytes key occupies in the table: its key item, and for a
// large collection its member items, of which at most samples are read
// (one Query page, usually) and the rest estimated from their average, as
// Redis estimates a big collection from a sample of its elements. found
// is false when the key does not exist.
func keyUsage(c *Ctx, key []byte, samples int64) (size int64, found bool, err error) {
	ks, err := readKey(c, key)
	if err != nil || !ks.Live {
		return 0, false, err
	}
	size = int64(dynastore.ItemSize(ks.Raw))
	gen, large := ks.Raw.Get(model.AttrGen).(dynastore.B)
	if !large {
		return size, true, nil
	}
	q := dynastore.Query{PK: model.MembersPK(gen)}
	var n int64
	if ks.Type == model.TypeList {
		// Only the positions in [lh, lt) are elements (model/list.go).
		h, err := model.NumberInt(ks.Raw.Get(model.AttrListHead))
		if err != nil {
			return 0, false, err
		}
		t, err := model.NumberInt(ks.Raw.Get(model.AttrListTail))
		if err != nil {
			return 0, false, err
		}
		n = t - h
		q.Op, q.A, q.B = dynastore.SKBetween, model.MemberSK(model.PosMember(h)), model.MemberSK(model.PosMember(t-1))
	} else if n, err = model.NumberInt(ks.Raw.Get(model.AttrCount)); err != nil {
		return 0, false, err
	} else if _, ordered := model.MemberOrders[ks.Type]; ordered {
		n *= 2 // an order item beside each member item
	}
	var read, bytes int64
	for want := min(samples, n); read < want; {
		q.Limit = int(want - read)
		page, err := c.Store.Query(c, q)
		if err != nil {
			return 0, false, err
		}
		for _, it := range page.Items {
			bytes += int64(dynastore.ItemSize(it))
			read++
		}
		if page.Next == nil {
			break
		}
		q.After = page.Next
	}
	if read > 0 && read < n {
		bytes = int64(float64(bytes) / float64(read) * float64(n))
	}
	return size + bytes, true, nil
}
