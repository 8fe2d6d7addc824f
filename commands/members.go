package commands

// Handlers shared by the member families (sets, hashes, sorted sets): the
// model does the work (model.AddMembers, RemoveMembers), they parse and
// reply.

import (
	"errors"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// collLenCmd replies with the number of entries of the key (SCARD, HLEN,
// ZCARD).
func collLenCmd(c *Ctx, typ string) {
	n, err := model.Len(c, c.Args[1], typ)
	if err != nil {
		c.Fail(err)
		return
	}
	notifyMissIfEmpty(c, n == 0)
	c.W.Int(n)
}

// notifyMissIfEmpty reports the read of a collection that found nothing:
// one holding no entry does not exist (a stream aside), so Redis's lookup
// missed ("keymiss").
func notifyMissIfEmpty(c *Ctx, empty bool) {
	if empty {
		c.NotifyKeyMiss(c.Args[1])
	}
}

// model.RemoveMembers is SREM, HDEL and ZREM (key member [member ...]): it
// replies with how many of the members were there, after the event (and
// the "del" of a collection left empty).
func removeMembersCmd(c *Ctx, typ string) {
	n, err := model.RemoveMembers(c, c.Args[1], typ, model.Dedupe(c.Args[2:]))
	if err != nil {
		c.Fail(err)
		return
	}
	if n > 0 {
		switch typ {
		case model.TypeSet:
			c.Notify(events.Set, "srem", c.Args[1])
		case model.TypeHash:
			c.Notify(events.Hash, "hdel", c.Args[1])
		case model.TypeZSet:
			c.Notify(events.ZSet, "zrem", c.Args[1])
		}
	}
	c.W.Int(n)
}

// collErr maps the errors of the model's collection operations to the
// replies Redis gives for them.
func collErr(err error) error {
	switch {
	case errors.Is(err, model.ErrNoSuchKey):
		return redisError(MsgNoSuchKey)
	case errors.Is(err, model.ErrIndexNotInt):
		return redisError(MsgNotInt)
	case errors.Is(err, model.ErrIndexOutOfRange):
		return redisError(MsgOutOfRange)
	case errors.Is(err, model.ErrHashNotInt):
		return redisError(MsgHashNotInt)
	case errors.Is(err, model.ErrIncrOverflow):
		return redisError(MsgOverflow)
	case errors.Is(err, model.ErrZNaN):
		return redisError(MsgZNaN)
	case errors.Is(err, model.ErrStreamBadID):
		return redisError(msgStreamBadID)
	case errors.Is(err, model.ErrStreamIDTooSmall):
		return redisError(msgStreamIDTooSmall)
	case errors.Is(err, model.ErrStreamExhausted):
		return redisError(msgStreamExhausted)
	case errors.Is(err, model.ErrStreamGTID):
		return redisError(msgStreamGTID)
	}
	return err
}
