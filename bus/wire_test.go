package bus

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnswerMalformed: a request an authenticated peer garbles ends its
// connection (answer's false) without reaching the Local.
func TestAnswerMalformed(t *testing.T) {
	huge := binary.AppendUvarint(nil, 1<<40)
	cases := []struct {
		name string
		f    frame
	}{
		{"publish without a body", frame{kind: kindPublish}},
		{"publish cut short", frame{kind: kindPublish, body: append([]byte{0, 5}, "ab"...)}},
		{"publish with bytes left over", frame{kind: kindPublish, body: []byte{0, 1, 'c', 1, 'p', 9}}},
		{"a channel longer than the frame", frame{kind: kindPublish, body: append([]byte{0}, huge...)}},
		{"numsub counting more than it holds", frame{kind: kindNumSub, body: append([]byte{0}, huge...)}},
		{"channels without flags", frame{kind: kindChannels}},
		{"numpat with a body", frame{kind: kindNumPat, body: []byte{1}}},
		{"a reply sent as a request", frame{kind: kindPublish | replyBit, body: []byte{2}}},
		{"an unknown kind", frame{kind: 99}},
		{"an event cut short", frame{kind: kindEvent, body: []byte{0, 1, 3, 's'}}},
		{"an event with bytes left over", frame{kind: kindEvent, body: []byte{0, 1, 1, 's', 1, 'k', 0}}},
		{"an interest without a body", frame{kind: kindInterest}},
		{"flags with bytes left over", frame{kind: kindFlags, body: []byte{1, 1}}},
	}
	l := newLocal(map[string]int64{"c": 1, "ab": 1})
	b := &Bus{local: l}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ok := b.answer(ID{}, tc.f)
			require.False(t, ok)
			require.Empty(t, l.delivered)
		})
	}
	reply, ok := b.answer(ID{}, frame{kind: kindPublish, id: 7, body: []byte{0, 1, 'c', 1, 'p'}})
	require.True(t, ok)
	require.Equal(t, appendFrame(nil, kindPublish|replyBit, 7, func(dst []byte) []byte { return binary.AppendVarint(dst, 1) }), reply)
}
