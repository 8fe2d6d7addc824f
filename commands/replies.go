package commands

// Recorded replies: a Writer that keeps what a command replied as a tree
// of values instead of sending it, for the callers that run commands on a
// client's behalf and decide later what to do with their replies: EXEC
// (sent once every command took effect) and redis.call in scripts
// (converted to Lua values).

// replyKind is the kind of one recorded value.
type replyKind uint8

const (
	replySimple replyKind = iota
	replyError
	replyInt
	replyBulk
	replyNil      // null bulk string
	replyNilArray // null array
	replyArray
	replyMap // elems holds keys and values in turn
	replySet
	replyDouble
	replyBool
	replyVerbatim
	replyBigNumber
	replyProto // not a value: the protocol switched (HELLO), to p
)

// reply is one recorded value.
type reply struct {
	kind replyKind
	// str: simple string, error, bulk (bytes), verbatim text.
	str    string
	format string // verbatim
	n      int64  // integer; bool (0/1); proto
	f      float64
	elems  []reply
}

// replyRecorder is a Writer that records replies. Aggregates are filled as
// their elements come; top holds the complete top-level values. Under
// RESP2 it records what RESP2 sends (a map as a flat array, a double as a
// bulk string, ...), so the values read the same as the client would.
type replyRecorder struct {
	proto int
	top   []reply
	// open is the stack of aggregates being filled, each with the count
	// of elements it still lacks.
	open   []openAggregate
	errors int
}

type openAggregate struct {
	r    reply
	left int
}

var _ Writer = (*replyRecorder)(nil)

func (r *replyRecorder) add(v reply) {
	for {
		if len(r.open) == 0 {
			r.top = append(r.top, v)
			return
		}
		o := &r.open[len(r.open)-1]
		o.r.elems = append(o.r.elems, v)
		if o.left--; o.left > 0 {
			return
		}
		v = o.r
		r.open = r.open[:len(r.open)-1]
	}
}

func (r *replyRecorder) aggregate(kind replyKind, n int) {
	if n <= 0 {
		r.add(reply{kind: kind})
		return
	}
	r.open = append(r.open, openAggregate{r: reply{kind: kind, elems: make([]reply, 0, n)}, left: n})
}

// replay writes the recorded replies to w.
func (r *replyRecorder) replay(w Writer) {
	for _, v := range r.top {
		v.write(w)
	}
}

func (v reply) write(w Writer) {
	switch v.kind {
	case replySimple:
		w.Simple(v.str)
	case replyError:
		w.Error(v.str)
	case replyInt:
		w.Int(v.n)
	case replyBulk:
		w.BulkString(v.str)
	case replyNil:
		w.Nil()
	case replyNilArray:
		w.NilArray()
	case replyArray, replySet:
		if v.kind == replyArray {
			w.Array(len(v.elems))
		} else {
			w.Set(len(v.elems))
		}
		for _, e := range v.elems {
			e.write(w)
		}
	case replyMap:
		w.Map(len(v.elems) / 2)
		for _, e := range v.elems {
			e.write(w)
		}
	case replyDouble:
		w.Double(v.f)
	case replyBool:
		w.Bool(v.n != 0)
	case replyVerbatim:
		w.Verbatim(v.format, v.str)
	case replyBigNumber:
		w.BigNumber(v.str)
	case replyProto:
		if ps, ok := w.(protoSwitcher); ok {
			ps.SetProto(int(v.n))
		}
	}
}

// Errors counts the error replies recorded (Server.Run's failed calls).
func (r *replyRecorder) Errors() int { return r.errors }

func (r *replyRecorder) Proto() int          { return r.proto }
func (r *replyRecorder) Simple(s string)     { r.add(reply{kind: replySimple, str: s}) }
func (r *replyRecorder) Int(n int64)         { r.add(reply{kind: replyInt, n: n}) }
func (r *replyRecorder) Bulk(b []byte)       { r.add(reply{kind: replyBulk, str: string(b)}) }
func (r *replyRecorder) BulkString(s string) { r.add(reply{kind: replyBulk, str: s}) }
func (r *replyRecorder) Nil()                { r.add(reply{kind: replyNil}) }
func (r *replyRecorder) NilArray()           { r.add(reply{kind: replyNilArray}) }
func (r *replyRecorder) Array(n int)         { r.aggregate(replyArray, n) }
func (r *replyRecorder) Map(n int) {
	if r.proto < 3 {
		r.aggregate(replyArray, 2*n)
		return
	}
	r.aggregate(replyMap, 2*n)
}

func (r *replyRecorder) Set(n int) {
	if r.proto < 3 {
		r.aggregate(replyArray, n)
		return
	}
	r.aggregate(replySet, n)
}

func (r *replyRecorder) Double(f float64) {
	if r.proto < 3 {
		r.add(reply{kind: replyBulk, str: string(FormatDouble(nil, f))})
		return
	}
	r.add(reply{kind: replyDouble, f: f})
}

func (r *replyRecorder) Bool(b bool) {
	v := reply{kind: replyBool}
	if r.proto < 3 {
		v.kind = replyInt
	}
	if b {
		v.n = 1
	}
	r.add(v)
}

func (r *replyRecorder) Verbatim(format, s string) {
	if r.proto < 3 {
		r.add(reply{kind: replyBulk, str: s})
		return
	}
	r.add(reply{kind: replyVerbatim, format: format, str: s})
}

func (r *replyRecorder) BigNumber(digits string) {
	if r.proto < 3 {
		r.add(reply{kind: replyBulk, str: digits})
		return
	}
	r.add(reply{kind: replyBigNumber, str: digits})
}

func (r *replyRecorder) Error(msg string) {
	r.errors++
	r.add(reply{kind: replyError, str: msg})
}

// SetProto records a protocol switch (HELLO inside MULTI): the replies
// after it are in the new protocol, as Redis sends them.
func (r *replyRecorder) SetProto(p int) {
	r.proto = p
	r.top = append(r.top, reply{kind: replyProto, n: int64(p)})
}
