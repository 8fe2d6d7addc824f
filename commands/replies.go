package commands

// Recorded replies: a Writer that keeps what a command replied as a tree
// of values instead of sending it, for the callers that run commands on a
// client's behalf and decide later what to do with their replies: EXEC
// (sent once every command took effect), redis.call in scripts
// (converted to Lua values) and Server.Do (the shell CLI, in-process).

// ReplyKind is the kind of one recorded value.
type ReplyKind uint8

const (
	ReplySimple ReplyKind = iota
	ReplyError
	ReplyInt
	ReplyBulk
	ReplyNil      // null bulk string
	ReplyNilArray // null array
	ReplyArray
	ReplyMap // Elems holds keys and values in turn
	ReplySet
	ReplyDouble
	ReplyBool
	ReplyVerbatim
	ReplyBigNumber
	replyProto // not a value: the protocol switched (HELLO), to Int
	// replyPush is a RESP3 push (a subscription's reply in MULTI); no
	// script sees one, since scripts cannot subscribe.
	replyPush
)

// Reply is one recorded value: a command's reply as a tree.
type Reply struct {
	Kind ReplyKind
	// Str: simple string, error (with its code: "ERR ...", "WRONGTYPE
	// ..."), bulk string (its bytes), verbatim text, big number digits.
	Str    string
	Format string  // verbatim
	Int    int64   // integer; bool (0/1)
	Float  float64 // double; Str holds its text when written by HumanDouble
	Elems  []Reply // array, set; map: keys and values in turn
}

// IsNull reports whether r is a null (bulk string or array).
func (r Reply) IsNull() bool { return r.Kind == ReplyNil || r.Kind == ReplyNilArray }

// IsError reports whether r is an error reply.
func (r Reply) IsError() bool { return r.Kind == ReplyError }

// Field returns the value of key name in a map reply (or in a flat
// array of keys and values in turn, as RESP2 sends a map).
func (r Reply) Field(name string) (Reply, bool) {
	if r.Kind != ReplyMap && r.Kind != ReplyArray {
		return Reply{}, false
	}
	for i := 0; i+1 < len(r.Elems); i += 2 {
		if k := r.Elems[i]; (k.Kind == ReplyBulk || k.Kind == ReplySimple) && k.Str == name {
			return r.Elems[i+1], true
		}
	}
	return Reply{}, false
}

// replyRecorder is a Writer that records replies. Aggregates are filled as
// their elements come; top holds the complete top-level values. Under
// RESP2 it records what RESP2 sends (a map as a flat array, a double as a
// bulk string, ...), so the values read the same as the client would.
type replyRecorder struct {
	proto int
	top   []Reply
	// open is the stack of aggregates being filled, each with the count
	// of elements it still lacks.
	open   []openAggregate
	errors int
}

type openAggregate struct {
	r    Reply
	left int
}

var _ Writer = (*replyRecorder)(nil)

func (r *replyRecorder) add(v Reply) {
	for {
		if len(r.open) == 0 {
			r.top = append(r.top, v)
			return
		}
		o := &r.open[len(r.open)-1]
		o.r.Elems = append(o.r.Elems, v)
		if o.left--; o.left > 0 {
			return
		}
		v = o.r
		r.open = r.open[:len(r.open)-1]
	}
}

func (r *replyRecorder) aggregate(kind ReplyKind, n int) {
	if n <= 0 {
		r.add(Reply{Kind: kind})
		return
	}
	r.open = append(r.open, openAggregate{r: Reply{Kind: kind, Elems: make([]Reply, 0, n)}, left: n})
}

// replay writes the recorded replies to w.
func (r *replyRecorder) replay(w Writer) {
	r.replayEach(w, func(int) {})
}

// replayEach is replay calling before(i) before it writes reply i.
func (r *replyRecorder) replayEach(w Writer, before func(i int)) {
	for i, v := range r.top {
		before(i)
		v.write(w)
	}
}

func (v Reply) write(w Writer) {
	switch v.Kind {
	case ReplySimple:
		w.Simple(v.Str)
	case ReplyError:
		w.Error(v.Str)
	case ReplyInt:
		w.Int(v.Int)
	case ReplyBulk:
		w.BulkString(v.Str)
	case ReplyNil:
		w.Nil()
	case ReplyNilArray:
		w.NilArray()
	case replyPush:
		pushHeader(w, len(v.Elems))
		for _, e := range v.Elems {
			e.write(w)
		}
	case ReplyArray, ReplySet:
		if v.Kind == ReplyArray {
			w.Array(len(v.Elems))
		} else {
			w.Set(len(v.Elems))
		}
		for _, e := range v.Elems {
			e.write(w)
		}
	case ReplyMap:
		w.Map(len(v.Elems) / 2)
		for _, e := range v.Elems {
			e.write(w)
		}
	case ReplyDouble:
		if v.Str != "" {
			w.HumanDouble(v.Float)
		} else {
			w.Double(v.Float)
		}
	case ReplyBool:
		w.Bool(v.Int != 0)
	case ReplyVerbatim:
		w.Verbatim(v.Format, v.Str)
	case ReplyBigNumber:
		w.BigNumber(v.Str)
	case replyProto:
		if ps, ok := w.(protoSwitcher); ok {
			ps.SetProto(int(v.Int))
		}
	}
}

// Errors counts the error replies recorded (Server.Run's failed calls).
func (r *replyRecorder) Errors() int { return r.errors }

func (r *replyRecorder) Proto() int          { return r.proto }
func (r *replyRecorder) Simple(s string)     { r.add(Reply{Kind: ReplySimple, Str: s}) }
func (r *replyRecorder) Int(n int64)         { r.add(Reply{Kind: ReplyInt, Int: n}) }
func (r *replyRecorder) Bulk(b []byte)       { r.add(Reply{Kind: ReplyBulk, Str: string(b)}) }
func (r *replyRecorder) BulkString(s string) { r.add(Reply{Kind: ReplyBulk, Str: s}) }
func (r *replyRecorder) Nil()                { r.add(Reply{Kind: ReplyNil}) }
func (r *replyRecorder) NilArray()           { r.add(Reply{Kind: ReplyNilArray}) }
func (r *replyRecorder) Array(n int)         { r.aggregate(ReplyArray, n) }

// Push records a push message (an array in RESP2).
func (r *replyRecorder) Push(n int) {
	if r.proto < 3 {
		r.aggregate(ReplyArray, n)
		return
	}
	r.aggregate(replyPush, n)
}
func (r *replyRecorder) Map(n int) {
	if r.proto < 3 {
		r.aggregate(ReplyArray, 2*n)
		return
	}
	r.aggregate(ReplyMap, 2*n)
}

func (r *replyRecorder) Set(n int) {
	if r.proto < 3 {
		r.aggregate(ReplyArray, n)
		return
	}
	r.aggregate(ReplySet, n)
}

func (r *replyRecorder) Double(f float64) {
	if r.proto < 3 {
		r.add(Reply{Kind: ReplyBulk, Str: string(FormatDouble(nil, f))})
		return
	}
	r.add(Reply{Kind: ReplyDouble, Float: f})
}

func (r *replyRecorder) HumanDouble(f float64) {
	txt := string(FormatHumanDouble(nil, f))
	if r.proto < 3 {
		r.add(Reply{Kind: ReplyBulk, Str: txt})
		return
	}
	r.add(Reply{Kind: ReplyDouble, Float: f, Str: txt})
}

func (r *replyRecorder) Bool(b bool) {
	v := Reply{Kind: ReplyBool}
	if r.proto < 3 {
		v.Kind = ReplyInt
	}
	if b {
		v.Int = 1
	}
	r.add(v)
}

func (r *replyRecorder) Verbatim(format, s string) {
	if r.proto < 3 {
		r.add(Reply{Kind: ReplyBulk, Str: s})
		return
	}
	r.add(Reply{Kind: ReplyVerbatim, Format: format, Str: s})
}

func (r *replyRecorder) BigNumber(digits string) {
	if r.proto < 3 {
		r.add(Reply{Kind: ReplyBulk, Str: digits})
		return
	}
	r.add(Reply{Kind: ReplyBigNumber, Str: digits})
}

func (r *replyRecorder) Error(msg string) {
	r.errors++
	r.add(Reply{Kind: ReplyError, Str: msg})
}

// SetProto records a protocol switch (HELLO inside MULTI): the replies
// after it are in the new protocol, as Redis sends them.
func (r *replyRecorder) SetProto(p int) {
	r.proto = p
	r.top = append(r.top, Reply{Kind: replyProto, Int: int64(p)})
}
