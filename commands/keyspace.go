package commands

// The keyspace helpers of the commands: reading a key item with the
// connection's reused memory, the optimistic read-modify-write of one key,
// and argument parsing shared by the families. The key item itself (its
// attributes, codec and conditions) is the model's (model/keyitem.go).

import (
	"bytes"
	"context"
	"errors"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// requestScratch is memory a connection's commands reuse from one request
// to the next for what they hand the store in one call and no longer need
// once it returns, as a Store copies what it is given: readKey's and
// INCR's key, INCR's update. returned is where INCR has
// the store put the item it returns (WriteOptions.ReturnInto); it keeps
// that item's values until the next.
type requestScratch struct {
	pk       []byte
	incr     incrActs
	returned dynastore.Item
}

// scratchItemKey is model.ItemKey(c.DB(), key) in the connection's scratch
// memory, valid until its next scratchItemKey: for a key handed to a
// single store call.
func (c *Ctx) scratchItemKey(key []byte) dynastore.Key {
	s := &c.Conn.scratch
	s.pk = model.AppendKeyPK(s.pk[:0], c.DB(), key)
	return dynastore.Key{PK: s.pk, SK: model.KeyItemSK}
}

// addOverflows and incrRoom are the model's (HINCRBY shares them).
var (
	addOverflows = model.AddOverflows
	incrRoom     = model.IncrRoom
)

// condFailedStart is the state a fast-path write's failed condition handed
// back (err from a write with OldOnFailure), for mutateKey to start from.
// When ok is false err was something else and it has replied.
func condFailedStart(c *Ctx, err error, nowMS int64) (start model.KeyState, ok bool) {
	cur, failed := model.CondFailed(err)
	if !failed {
		c.Fail(err)
		return model.KeyState{}, false
	}
	start, err = model.DecodeKey(cur, nowMS)
	if err != nil {
		c.Fail(err)
		return model.KeyState{}, false
	}
	return start, true
}

// stringOf is the value of a string key as read: nil when absent,
// WRONGTYPE (a redisError) when it holds another type.
func stringOf(ks model.KeyState) ([]byte, error) {
	if !ks.Live {
		return nil, nil
	}
	if ks.Type != model.TypeString {
		return nil, redisError(MsgWrongType)
	}
	return ks.StringValue()
}

// readKey reads one key item (one GetItem). A key too long to exist reads as absent.
func readKey(c *Ctx, key []byte) (model.KeyState, error) {
	if !model.KeyFits(key) {
		return model.KeyState{}, nil
	}
	it, err := c.Store.Get(c, c.scratchItemKey(key))
	if err != nil {
		return model.KeyState{}, err
	}
	return model.DecodeKey(it, c.NowMS())
}

// ---- scanning the keyspace -------------------------------------------------

// scanAll runs a table scan with filter to the end, calling fn for every item.
func scanAll(ctx context.Context, st dynastore.Store, filter dynastore.Cond, fn func(dynastore.Item) error) error {
	var after *dynastore.Key
	for {
		page, err := st.Scan(ctx, dynastore.Scan{Filter: filter, After: after})
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		after = page.Next
	}
}

// sameKey reports whether two keys are the same bytes.
func sameKey(a, b []byte) bool { return bytes.Equal(a, b) }

// ---- optimistic read-modify-write -------------------------------------------

// keyWrite is the write a command decided on for one key item.
type keyWrite struct {
	Put    dynastore.Item // replace the whole item
	Delete bool           // or delete it
}

// redisError is a reply a command decided on (WRONGTYPE, not an integer,
// ...), as opposed to a storage failure.
type redisError string

func (e redisError) Error() string { return string(e) }

// mutateKey runs a read-modify-write on one key item without ever writing
// over a state it has not seen: decide looks at the current state and
// returns the write to make (nil: none needed), and the write is conditioned
// on the item being unchanged (its version token). When another writer got
// there first, the failed write hands back the current item and decide runs
// again, as long as the retry policy (model.Retry) allows. start is a state already known
// (from a failed fast path); nil reads the item first.
func mutateKey(c *Ctx, key []byte, start *model.KeyState, decide func(model.KeyState) (*keyWrite, error)) error {
	k := model.ItemKey(c.DB(), key)
	var ks model.KeyState
	if start != nil {
		ks = *start
	} else {
		var err error
		if ks, err = readKey(c, key); err != nil {
			return err
		}
	}
	var cur dynastore.Item // what the last failed write found
	lost := false
	return model.RetryConflicts(c, func(int) error {
		if lost {
			// Decoded now, at the clock reading of this attempt.
			var err error
			if ks, err = model.DecodeKey(cur, c.NowMS()); err != nil {
				return err
			}
		}
		w, err := decide(ks)
		if err != nil || w == nil {
			return err
		}
		wo := dynastore.WriteOptions{Cond: ks.Guard(), OldOnFailure: true}
		if w.Delete {
			_, err = c.Store.Delete(c, k, wo)
		} else {
			_, err = c.Store.Put(c, w.Put, wo)
		}
		if cur, lost = model.CondFailed(err); lost {
			return model.ErrConflict
		}
		return err
	})
}

// asTxCanceled is errors.As for a canceled transaction.
func asTxCanceled(err error, target **dynastore.TxCanceledError) bool {
	return errors.As(err, target)
}

// ---- arguments and registration -------------------------------------------------

// argIs reports whether arg is the option opt, compared as Redis compares
// options (strcasecmp on a C string: ASCII case folding, the argument ending
// at its first NUL byte).
func argIs(arg []byte, opt string) bool {
	if i := bytes.IndexByte(arg, 0); i >= 0 {
		arg = arg[:i]
	}
	if len(arg) != len(opt) {
		return false
	}
	for i := 0; i < len(arg); i++ {
		a, b := arg[i], opt[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}
