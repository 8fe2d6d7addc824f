package compat

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Reply is a parsed RESP reply, used where a case normalizes a reply before
// comparing it. Encode turns it back into bytes, so normalized replies are
// still compared byte for byte.
type Reply struct {
	// Kind is the RESP type byte: + - : $ * _ , # ! = ( % ~ >.
	Kind byte
	// Str is the payload of every non-aggregate type (the digits of an
	// integer, the text of a double, "txt:..." of a verbatim string).
	Str []byte
	// Null marks $-1 and *-1 (RESP2 nulls); Kind '_' is RESP3's null.
	Null bool
	// Elems are an aggregate's elements; a map's are key, value, key, value...
	Elems []*Reply
	// Attrs is the attribute map ('|') sent before this reply, flattened.
	Attrs []*Reply
}

// Parse parses one complete reply.
func Parse(raw []byte) (*Reply, error) {
	r := bufio.NewReader(bytes.NewReader(raw))
	rep, err := parseReply(r)
	if err != nil {
		return nil, err
	}
	if _, err := r.ReadByte(); err == nil {
		return nil, fmt.Errorf("%w: trailing bytes after reply", ErrProtocol)
	}
	return rep, nil
}

func parseReply(r *bufio.Reader) (*Reply, error) {
	line, payload, err := readLine(r, nil)
	if err != nil {
		return nil, err
	}
	kindByte := line[0]
	rep := &Reply{Kind: kindByte}
	switch kindByte {
	case '+', '-', ':', ',', '#', '(', '_':
		rep.Str = append([]byte(nil), payload...)
		return rep, nil
	case '$', '!', '=':
		n, err := strconv.Atoi(string(payload))
		if err != nil || n < -1 {
			return nil, fmt.Errorf("%w: bad length %q", ErrProtocol, payload)
		}
		if n == -1 {
			rep.Null = true
			return rep, nil
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, err
		}
		rep.Str = body[:n]
		return rep, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(payload))
		if err != nil || n < -1 {
			return nil, fmt.Errorf("%w: bad count %q", ErrProtocol, payload)
		}
		if n == -1 {
			rep.Null = true
			return rep, nil
		}
		if kindByte == '%' || kindByte == '|' {
			n *= 2
		}
		rep.Elems = make([]*Reply, 0, n)
		for i := 0; i < n; i++ {
			e, err := parseReply(r)
			if err != nil {
				return nil, err
			}
			rep.Elems = append(rep.Elems, e)
		}
		if kindByte == '|' {
			inner, err := parseReply(r)
			if err != nil {
				return nil, err
			}
			inner.Attrs = rep.Elems
			return inner, nil
		}
		return rep, nil
	}
	return nil, fmt.Errorf("%w: unknown type byte %q", ErrProtocol, kindByte)
}

// Encode renders the reply back to RESP bytes (attributes included).
func (rep *Reply) Encode() []byte {
	var b bytes.Buffer
	rep.encode(&b)
	return b.Bytes()
}

func (rep *Reply) encode(b *bytes.Buffer) {
	if rep.Attrs != nil {
		fmt.Fprintf(b, "|%d\r\n", len(rep.Attrs)/2)
		for _, a := range rep.Attrs {
			a.encode(b)
		}
	}
	switch rep.Kind {
	case '+', '-', ':', ',', '#', '(', '_':
		b.WriteByte(rep.Kind)
		b.Write(rep.Str)
		b.WriteString("\r\n")
	case '$', '!', '=':
		if rep.Null {
			fmt.Fprintf(b, "%c-1\r\n", rep.Kind)
			return
		}
		fmt.Fprintf(b, "%c%d\r\n", rep.Kind, len(rep.Str))
		b.Write(rep.Str)
		b.WriteString("\r\n")
	default:
		if rep.Null {
			fmt.Fprintf(b, "%c-1\r\n", rep.Kind)
			return
		}
		n := len(rep.Elems)
		if rep.Kind == '%' {
			n /= 2
		}
		fmt.Fprintf(b, "%c%d\r\n", rep.Kind, n)
		for _, e := range rep.Elems {
			e.encode(b)
		}
	}
}

// IsError reports whether the reply is an error (simple or bulk).
func (rep *Reply) IsError() bool { return rep.Kind == '-' || rep.Kind == '!' }

// IsNull reports whether the reply is any of the null encodings.
func (rep *Reply) IsNull() bool { return rep.Null || rep.Kind == '_' }

// IsAggregate reports whether the reply holds elements.
func (rep *Reply) IsAggregate() bool {
	switch rep.Kind {
	case '*', '~', '>', '%':
		return !rep.Null
	}
	return false
}

// Text is the reply's payload as text: a verbatim string without its
// "fmt:" prefix, the payload of every other scalar as is.
func (rep *Reply) Text() string {
	if rep.Kind == '=' && len(rep.Str) >= 4 && rep.Str[3] == ':' {
		return string(rep.Str[4:])
	}
	return string(rep.Str)
}

// Int parses the payload as an integer.
func (rep *Reply) Int() (int64, bool) {
	switch rep.Kind {
	case ':', '$', '+', '(':
		n, err := strconv.ParseInt(string(rep.Str), 10, 64)
		return n, err == nil && !rep.Null
	}
	return 0, false
}

// String renders the reply for people: one line, binary data escaped, long
// payloads cut.
func (rep *Reply) String() string {
	var b strings.Builder
	rep.format(&b)
	return b.String()
}

func (rep *Reply) format(b *strings.Builder) {
	if rep.Attrs != nil {
		b.WriteString("|attrs{")
		for i, a := range rep.Attrs {
			if i > 0 {
				b.WriteString(" ")
			}
			a.format(b)
		}
		b.WriteString("} ")
	}
	if rep.Null {
		fmt.Fprintf(b, "%c-1(null)", rep.Kind)
		return
	}
	switch rep.Kind {
	case '*', '~', '>', '%':
		fmt.Fprintf(b, "%c%d[", rep.Kind, len(rep.Elems))
		for i, e := range rep.Elems {
			if i > 0 {
				b.WriteString(", ")
			}
			e.format(b)
		}
		b.WriteString("]")
	case '_':
		b.WriteString("_(null)")
	default:
		b.WriteByte(rep.Kind)
		b.WriteString(Escape(rep.Str, 200))
	}
}

// Escape quotes data as a Go-style string with \x escapes, cut after max
// bytes (max <= 0: no cut).
func Escape(data []byte, max int) string {
	cut := ""
	if max > 0 && len(data) > max {
		cut = fmt.Sprintf("...(%d bytes)", len(data))
		data = data[:max]
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range data {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String() + cut
}
