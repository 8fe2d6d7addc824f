package model

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
)

// hintRecorder is a store that records what Prefetch is given.
type hintRecorder struct {
	dynastore.Store
	calls [][2][]dynastore.Key
}

func (p *hintRecorder) Prefetch(reads, replaced []dynastore.Key) {
	p.calls = append(p.calls, [2][]dynastore.Key{reads, replaced})
}

// The hints' memory is reused from pipeline to pipeline, and one with
// huge keys does not leave it pinned (moved from commands' Prefetch test).
func TestKeyHintsMemory(t *testing.T) {
	rec := &hintRecorder{Store: memory.New(memory.Options{})}
	require.True(t, TakesHints(On(rec)))
	var h KeyHints
	h.Reset()
	h.Add(0, []byte("a"), true)
	h.Add(0, []byte("b"), true)
	h.Send(On(rec))
	require.NotNil(t, h.pks)
	big := make([]byte, MaxKeyLen)
	h.Reset()
	for range 20 {
		h.Add(0, big, true)
	}
	h.Send(On(rec))
	require.Len(t, rec.calls, 2)
	require.Len(t, rec.calls[1][0], 20)
	require.Nil(t, h.pks, "over maxHintBytes: let go")
}
