package model

// The stream layout (commands/streams.go holds the stream commands).

import (
	"fmt"
	"sort"

	"github.com/redamo/redamo/dynastore"
)

// streamCodec is the stream's inline codec: v is an L alternating each
// entry's id (its member) and its fields, in id order. An emptied stream
// keeps its key item (Redis keeps its last id).
var streamCodec = InlineCodec{
	Decode: func(it dynastore.Item) (map[string]dynastore.Value, error) {
		l, _ := it.Get(AttrValue).(dynastore.L)
		if len(l)%2 != 0 {
			return nil, fmt.Errorf("model: inline stream of %d values: %w", len(l), dynastore.ErrInvalid)
		}
		out := make(map[string]dynastore.Value, len(l)/2)
		for i := 0; i < len(l); i += 2 {
			m, ok := l[i].(dynastore.B)
			if !ok {
				return nil, fmt.Errorf("model: inline stream id: %w", dynastore.ErrInvalid)
			}
			out[string(m)] = l[i+1]
		}
		return out, nil
	},
	Encode: func(it *dynastore.Item, entries map[string]dynastore.Value) {
		if len(entries) == 0 {
			return
		}
		ms := make([]string, 0, len(entries))
		for m := range entries {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		l := make(dynastore.L, 0, 2*len(ms))
		for _, m := range ms {
			l = append(l, dynastore.B(m), entries[m])
		}
		it.Set(AttrValue, l)
	},
	KeepEmpty: true,
}
