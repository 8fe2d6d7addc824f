package resp

import (
	"strconv"

	"github.com/redamo/redamo/commands"
)

// Writer encodes one connection's replies in RESP2 or RESP3, byte for byte as
// Redis 7.0 does. It implements commands.Writer.
//
// Replies accumulate in memory until the server flushes them to the network,
// a pipeline's replies one after the other. The writer also checks that a
// handler produced exactly one complete top-level reply, so a buggy handler
// cannot desynchronise the client's protocol stream (see Complete).
type Writer struct {
	proto int
	buf   []byte
	// start is where the reply being written begins in buf.
	start int

	// pending holds, for each open aggregate, how many elements it still
	// expects; replies counts top-level replies completed since Reset.
	pending []int
	replies int
	// errors counts error replies written since Reset (nested ones included).
	errors int
}

// NewWriter returns a writer speaking RESP proto (2 or 3).
func NewWriter(proto int) *Writer {
	return &Writer{proto: proto}
}

// Proto returns the protocol version, 2 or 3.
func (w *Writer) Proto() int { return w.proto }

// SetProto switches the protocol for the following replies (HELLO, RESET).
func (w *Writer) SetProto(p int) { w.proto = p }

// Bytes returns the encoded replies written since the last Reset.
func (w *Writer) Bytes() []byte { return w.buf }

// Reset empties the buffer and the reply accounting, keeping the memory.
func (w *Writer) Reset() {
	w.buf, w.start = w.buf[:0], 0
	w.restart()
}

// begin starts a reply after those buffered: Complete and Errors count from
// here. A writer without a buffer borrows one from bufPool.
func (w *Writer) begin() {
	if w.buf == nil {
		w.buf = getBuf()
	}
	w.start = len(w.buf)
	w.restart()
}

// discard drops the reply begun last, keeping those before it.
func (w *Writer) discard() {
	w.buf = w.buf[:w.start]
	w.restart()
}

func (w *Writer) restart() {
	w.pending = w.pending[:0]
	w.replies = 0
	w.errors = 0
}

// take returns the buffered replies and leaves the writer without a buffer
// (the caller lends it back once written).
func (w *Writer) take() []byte {
	b := w.buf
	w.buf, w.start = nil, 0
	return b
}

// Complete reports whether exactly one full top-level reply was written since
// the last Reset (or, on a connection, since the reply began).
func (w *Writer) Complete() bool {
	return w.replies == 1 && len(w.pending) == 0
}

// Whole reports whether one or more full top-level replies were written
// since the reply began (a command with SeveralReplies).
func (w *Writer) Whole() bool {
	return w.replies >= 1 && len(w.pending) == 0
}

// Errors returns how many error replies were written since the reply began.
func (w *Writer) Errors() int { return w.errors }

// value records one finished value in the reply accounting.
func (w *Writer) value() {
	for len(w.pending) > 0 {
		top := len(w.pending) - 1
		w.pending[top]--
		if w.pending[top] > 0 {
			return
		}
		// The aggregate is complete: it is itself one value of its parent.
		w.pending = w.pending[:top]
	}
	w.replies++
}

// aggregate records an aggregate header announcing n values.
func (w *Writer) aggregate(n int) {
	if n <= 0 {
		w.value()
		return
	}
	w.pending = append(w.pending, n)
}

func (w *Writer) header(prefix byte, n int64) {
	w.buf = append(w.buf, prefix)
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.buf = append(w.buf, '\r', '\n')
}

// appendLine appends s with any CR or LF replaced by a space: simple strings
// and errors are single lines, and a stray newline would corrupt the stream.
func (w *Writer) appendLine(s string) {
	start := len(w.buf)
	w.buf = append(w.buf, s...)
	for i := start; i < len(w.buf); i++ {
		if w.buf[i] == '\r' || w.buf[i] == '\n' {
			w.buf[i] = ' '
		}
	}
	w.buf = append(w.buf, '\r', '\n')
}

// Simple writes a simple string (+s).
func (w *Writer) Simple(s string) {
	w.buf = append(w.buf, '+')
	w.appendLine(s)
	w.value()
}

// Error writes an error reply; msg starts with its code ("ERR ...").
func (w *Writer) Error(msg string) {
	w.buf = append(w.buf, '-')
	w.appendLine(msg)
	w.errors++
	w.value()
}

// Int writes an integer reply.
func (w *Writer) Int(n int64) {
	w.header(':', n)
	w.value()
}

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) {
	w.header('$', int64(len(b)))
	w.buf = append(w.buf, b...)
	w.buf = append(w.buf, '\r', '\n')
	w.value()
}

// BulkString writes a bulk string.
func (w *Writer) BulkString(s string) {
	w.header('$', int64(len(s)))
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
	w.value()
}

// Nil writes a null bulk string ($-1 in RESP2, _ in RESP3).
func (w *Writer) Nil() {
	if w.proto >= 3 {
		w.buf = append(w.buf, "_\r\n"...)
	} else {
		w.buf = append(w.buf, "$-1\r\n"...)
	}
	w.value()
}

// NilArray writes a null array (*-1 in RESP2, _ in RESP3).
func (w *Writer) NilArray() {
	if w.proto >= 3 {
		w.buf = append(w.buf, "_\r\n"...)
	} else {
		w.buf = append(w.buf, "*-1\r\n"...)
	}
	w.value()
}

// Array starts an array of n elements.
func (w *Writer) Array(n int) {
	w.header('*', int64(n))
	w.aggregate(n)
}

// Push starts a push message of n elements (an array in RESP2, where
// only a subscribed client receives them).
func (w *Writer) Push(n int) {
	if w.proto >= 3 {
		w.header('>', int64(n))
	} else {
		w.header('*', int64(n))
	}
	w.aggregate(n)
}

// Map starts a map of n pairs (a flat array of 2n elements in RESP2).
func (w *Writer) Map(n int) {
	if w.proto >= 3 {
		w.header('%', int64(n))
	} else {
		w.header('*', 2*int64(n))
	}
	w.aggregate(2 * n)
}

// Set starts a set of n elements (an array in RESP2).
func (w *Writer) Set(n int) {
	if w.proto >= 3 {
		w.header('~', int64(n))
	} else {
		w.header('*', int64(n))
	}
	w.aggregate(n)
}

// Double writes a double: a RESP3 double, or a bulk string in RESP2, with
// Redis 7.0's "%.17g" formatting and its spelling of infinities.
func (w *Writer) Double(f float64) {
	var scratch [32]byte
	w.double(commands.FormatDouble(scratch[:0], f))
}

// HumanDouble writes a double with Redis's addReplyHumanLongDouble text: a
// RESP3 double, or a bulk string in RESP2.
func (w *Writer) HumanDouble(f float64) {
	var scratch [48]byte
	w.double(commands.FormatHumanDouble(scratch[:0], f))
}

// double writes a double's text as RESP3 double or RESP2 bulk string.
func (w *Writer) double(txt []byte) {
	if w.proto >= 3 {
		w.buf = append(w.buf, ',')
	} else {
		w.header('$', int64(len(txt)))
	}
	w.buf = append(w.buf, txt...)
	w.buf = append(w.buf, '\r', '\n')
	w.value()
}

// Bool writes a boolean (#t/#f in RESP3, :1/:0 in RESP2).
func (w *Writer) Bool(b bool) {
	switch {
	case w.proto >= 3 && b:
		w.buf = append(w.buf, "#t\r\n"...)
	case w.proto >= 3:
		w.buf = append(w.buf, "#f\r\n"...)
	case b:
		w.buf = append(w.buf, ":1\r\n"...)
	default:
		w.buf = append(w.buf, ":0\r\n"...)
	}
	w.value()
}

// BigNumber writes a big number ("(" in RESP3, a bulk string in RESP2).
func (w *Writer) BigNumber(digits string) {
	if w.proto < 3 {
		w.BulkString(digits)
		return
	}
	w.buf = append(w.buf, '(')
	w.buf = append(w.buf, digits...)
	w.buf = append(w.buf, '\r', '\n')
	w.value()
}

// Verbatim writes a verbatim string with a 3-letter format ("txt", "mkd"); a
// bulk string in RESP2.
func (w *Writer) Verbatim(format, s string) {
	if w.proto < 3 {
		w.BulkString(s)
		return
	}
	if len(format) != 3 {
		format = "txt"
	}
	w.header('=', int64(len(s)+4))
	w.buf = append(w.buf, format...)
	w.buf = append(w.buf, ':')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
	w.value()
}
