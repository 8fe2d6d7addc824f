package commands

// The keyspace helpers of the commands: reading a key item with the
// connection's reused memory, and argument parsing shared by the families.
// The key item itself (its attributes, codec and conditions) and the
// operations on keys are the model's (model/keyitem.go, model/keys.go,
// model/strings.go).

import (
	"bytes"

	"github.com/redamo/redamo/model"
)

// requestScratch is memory a connection's commands reuse from one request
// to the next (model.Scratch).
type requestScratch = model.Scratch

// Scratch lends the model the connection's scratch memory.
func (c *Ctx) Scratch() *model.Scratch {
	if c.Conn == nil {
		return nil
	}
	return &c.Conn.scratch
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
	return model.ReadKey(c, key)
}

// sameKey reports whether two keys are the same bytes.
func sameKey(a, b []byte) bool { return bytes.Equal(a, b) }

// redisError is a reply a command decided on (WRONGTYPE, not an integer,
// ...), as opposed to a storage failure.
type redisError string

func (e redisError) Error() string { return string(e) }

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
