package commands

import (
	"context"
	"fmt"

	"github.com/redamo/redamo/model"
)

// Do runs one command in-process, as a fresh RESP3 connection to the
// server would (database 0, authenticated), and returns its reply as a
// tree. It goes through the same table, handlers and model as a command
// sent over the network: the shell CLI runs every verb through it. A
// blocking command (LOCK.ACQUIRE ... WAIT) waits until its timeout or
// until ctx ends.
//
// Do is safe for concurrent use; each call has a connection of its own,
// so state a command leaves on its connection (SELECT, MULTI, WATCH,
// LOCK.GUARD) does not carry over to the next call.
func (s *Server) Do(ctx context.Context, args ...[]byte) Reply {
	cn := &Conn{Addr: "in-process", FD: -1, Created: s.Now(), Proto: 3, Authed: true}
	cmd, msg := s.Table.Resolve(args)
	if msg != "" {
		if cmd != nil && s.Commands != nil {
			s.Commands.Reject(cmd.Name)
		}
		return Reply{Kind: ReplyError, Str: cn.Rejected(cmd, msg)}
	}
	rec := &replyRecorder{proto: cn.Proto}
	c := &Ctx{Context: model.Labeled(ctx, cmd.Name), Args: args, W: rec, Target: s.Store, Conn: cn, Srv: s}
	if r, ok := s.runRecovered(c, cmd, rec); !ok {
		return r
	}
	cn.FlushStats()
	// HELLO records its protocol switch before its reply: the value is the
	// last element, and there must be exactly one.
	var out []Reply
	for _, r := range rec.top {
		if r.Kind != replyProto {
			out = append(out, r)
		}
	}
	if len(out) != 1 || len(rec.open) > 0 {
		return Reply{Kind: ReplyError, Str: fmt.Sprintf(MsgMalformedReply, cmd.Name)}
	}
	return out[0]
}

// runRecovered runs cmd, turning a panic into the error reply the network
// server sends for one (ok false), so that one bad command cannot take
// the calling process down either.
func (s *Server) runRecovered(c *Ctx, cmd *Command, rec *replyRecorder) (r Reply, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			s.Panics.Add(1)
			r, ok = Reply{Kind: ReplyError, Str: fmt.Sprintf(MsgInternalError, cmd.Name)}, false
		}
	}()
	s.Run(c, cmd)
	return Reply{}, true
}
