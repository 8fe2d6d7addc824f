package commands

// What the scripting package (scripting/) needs of commands to run Lua
// and register its rows. scripting imports commands, never the other way
// round: scripting.Register adds EVAL, SCRIPT, FUNCTION and FCALL to a
// table, and redis.call runs a command through CallFromScript.

import (
	"fmt"

	"github.com/redamo/redamo/model"
)

// LookupBytes is Lookup for a name as a client sent it.
func (t *Table) LookupBytes(name []byte) *Command { return lookup(t, name) }

// CallFromScript runs cmd with args for the script c runs (redis.call):
// its reads and writes go to t (the script's unit of work), its reply is
// recorded under protocol proto. It returns that reply, ok false when the
// command made none (a handler's bug: the script gets
// MsgMalformedReply's text). gopher-lua turns a Go panic under a
// protected call into a script error, which would hide the bug from
// everyone but the client: it is counted (Server.Panics) on its way there.
func (c *Ctx) CallFromScript(cmd *Command, args [][]byte, t model.Target, proto int) (r Reply, ok bool) {
	rec := &replyRecorder{proto: proto}
	cc := c.sub(queuedCmd{cmd: cmd, args: args}, rec, t)
	cc.InScript = true
	func() {
		defer func() {
			if p := recover(); p != nil {
				c.Srv.Panics.Add(1)
				panic(p)
			}
		}()
		c.Srv.Run(cc, cmd)
	}()
	if len(rec.top) == 0 {
		return Reply{}, false
	}
	return rec.top[len(rec.top)-1], true
}

// MalformedReply is the error text (without its ERR code) of a command
// that made no reply.
func MalformedReply(cmd *Command) string {
	return fmt.Sprintf(MsgMalformedReply, cmd.Name)[4:]
}

// ErrorReply is an error that is the error reply a command decided on,
// as opposed to a storage failure: Ctx.Fail replies msg.
func ErrorReply(msg string) error { return redisError(msg) }

// ArgIs reports whether arg is the option opt, compared as Redis compares
// options.
func ArgIs(arg []byte, opt string) bool { return argIs(arg, opt) }

// GlobMatch reports whether s matches the glob pattern p, as Redis's
// stringmatchlen does.
func GlobMatch(p, s []byte) bool { return globMatch(p, s) }

// WriteHelp replies like Redis's addReplyHelp.
func WriteHelp(c *Ctx, header string, lines ...string) { writeHelp(c, header, lines...) }

// CPrefix is an argument as Redis prints it with "%.<n>s".
func CPrefix(b []byte, n int) []byte { return cPrefix(b, n) }

// BoolInt is 1 for true, 0 for false.
func BoolInt(b bool) int64 { return boolInt(b) }

// Inline returns the inline limits of collections of type typ (CONFIG's
// hash-max-listpack-entries and the like).
func (s *Server) Inline(typ string) model.InlineLimits { return s.inline(typ) }
