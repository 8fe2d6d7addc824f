package bus

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A frame is the unit on a bus connection (after the handshake): a 4-byte
// big-endian length of what follows, the kind (1 byte), the request id (8
// bytes, echoed by the reply) and the body. A reply's kind is its request's
// with replyBit set. Bodies are uvarint-prefixed byte strings and varints.
const (
	kindPublish  byte = 1
	kindChannels byte = 2
	kindNumSub   byte = 3
	kindNumPat   byte = 4
	// kindEvent is a key event (events.go): no reply, and id 0.
	kindEvent byte = 5
	// kindInterest declares whether the sender wants every key event; the
	// listener's side of a connection also sends it, unasked and with id
	// 0, as its first frame.
	kindInterest byte = 6
	// kindFlags is the table's new notify-keyspace-events.
	kindFlags byte = 7
	replyBit  byte = 0x80

	frameHeader = 1 + 8
	// maxFrame bounds what a peer may make this process allocate: a
	// PUBLISH payload may be as big as Redis's proto-max-bulk-len.
	maxFrame = 512<<20 + 64<<10
)

// Flags of a request body's first byte.
const (
	flagShard   byte = 1
	flagPattern byte = 2
)

var errFrame = errors.New("bus: malformed frame")

// frame is one decoded frame.
type frame struct {
	kind byte
	id   uint64
	body []byte
}

// appendFrame appends a frame of kind and id whose body is built by body
// (which appends to what it is given).
func appendFrame(dst []byte, kind byte, id uint64, body func([]byte) []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, kind)
	dst = binary.BigEndian.AppendUint64(dst, id)
	dst = body(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// outFrame is a frame to write: a header and a body that may be shared
// (one publish's body goes to every peer, each with its own header).
type outFrame struct {
	head []byte
	body []byte
}

// requestFrame is a request whose body is built already.
func requestFrame(kind byte, id uint64, body []byte) outFrame {
	head := make([]byte, 4, 4+frameHeader)
	binary.BigEndian.PutUint32(head, uint32(frameHeader+len(body)))
	head = append(head, kind)
	return outFrame{head: binary.BigEndian.AppendUint64(head, id), body: body}
}

// readFrame reads one frame; its body is fresh memory the caller keeps.
func readFrame(r *bufio.Reader) (frame, error) {
	var hdr [4 + frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < frameHeader || n > maxFrame {
		return frame{}, fmt.Errorf("%w: length %d", errFrame, n)
	}
	f := frame{kind: hdr[4], id: binary.BigEndian.Uint64(hdr[5:])}
	f.body = make([]byte, n-frameHeader)
	if _, err := io.ReadFull(r, f.body); err != nil {
		return frame{}, err
	}
	return f, nil
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// decoder reads a body; the first malformed field sets err and every
// later read returns zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errFrame
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errFrame
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errFrame
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errFrame
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

// count reads a list length, refusing one the rest of the body cannot
// hold (each element takes at least one byte), so a peer cannot make a
// receiver allocate more than it sent.
func (d *decoder) count() int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.err = errFrame
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

// done reports the decoding error, or errFrame when bytes are left over.
func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		return errFrame
	}
	return d.err
}
