package model

// The consumer groups of DUMP and RESTORE (model/dump.go): a stream's
// groups (stream_groups.go) to and from Redis's serialization, and the
// node sizes the node emulation (stream_listpack.go) keeps, from the
// payload's listpacks.

import (
	"math"
	"slices"
	"strings"

	"github.com/redamo/redamo/internal/rdb"
)

// dumpGroups reads cl's groups as Redis serializes them: entries-read -1
// (unknown) as Redis writes it, the largest 64-bit length.
func dumpGroups(cl *Collection) ([]rdb.StreamGroup, error) {
	st, err := streamStateOf(cl)
	if err != nil {
		return nil, err
	}
	if err := st.loadGroups(); err != nil {
		return nil, err
	}
	out := make([]rdb.StreamGroup, 0, len(st.groups))
	for _, g := range st.groups {
		rg := rdb.StreamGroup{Name: []byte(g.name), LastID: rdb.StreamID(g.last), EntriesRead: uint64(g.entriesRead)}
		owned := map[string][]rdb.StreamID{}
		err := st.pelScan(cl.c, g, StreamID{}, MaxStreamID, false, 0, func(n *streamNACK) bool {
			rg.PEL = append(rg.PEL, rdb.StreamPending{ID: rdb.StreamID(n.id), DeliveryTime: n.delivered, DeliveryCount: uint64(n.count)})
			owned[n.consumer] = append(owned[n.consumer], rdb.StreamID(n.id))
			return true
		})
		if err != nil {
			return nil, err
		}
		for _, cs := range g.consumers {
			rg.Consumers = append(rg.Consumers, rdb.StreamConsumer{Name: []byte(cs.name), SeenTime: cs.seen, PEL: owned[cs.name]})
		}
		out = append(out, rg)
	}
	return out, nil
}

// stageRestoredGroups stages groups as st's, in the orders
// stream_groups.go keeps (groups and consumers by name), their pending
// entries written into a new generation.
func stageRestoredGroups(cl *Collection, st *streamState, groups []rdb.StreamGroup) error {
	out := make([]*streamGroup, 0, len(groups))
	for _, rg := range groups {
		g := &streamGroup{name: string(rg.Name), last: StreamID(rg.LastID), entriesRead: int64(rg.EntriesRead), gid: newGroupID(), known: map[StreamID]*streamNACK{}}
		if rg.EntriesRead > math.MaxInt64 {
			g.entriesRead = InvalidEntriesRead
		}
		owner := map[rdb.StreamID]string{}
		for _, c := range rg.Consumers {
			g.consumers = append(g.consumers, &streamConsumer{name: string(c.Name), seen: c.SeenTime})
			for _, id := range c.PEL {
				owner[id] = string(c.Name)
			}
		}
		slices.SortFunc(g.consumers, func(a, b *streamConsumer) int { return strings.Compare(a.name, b.name) })
		for _, p := range rg.PEL {
			g.pelSet(&streamNACK{id: StreamID(p.ID), delivered: p.DeliveryTime, count: int64(p.DeliveryCount)}, owner[p.ID])
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *streamGroup) int { return strings.Compare(a.name, b.name) })
	st.groups, st.groupsLoaded, st.pelGen = out, true, nil
	if err := st.stagePEL(cl.c, cl); err != nil {
		return err
	}
	st.stageGroups(cl)
	return nil
}

// restoredNodeSizes gives a node read from a payload what XADD's node
// emulation keeps of it: its listpack size but for the master entry's
// count and deleted integers, and its master fields' digest.
func restoredNodeSizes(n *streamNode, rn rdb.StreamNode) {
	n.bytes = int64(rn.Size) - lpIntSize(int64(rn.Live)) - lpIntSize(int64(rn.Deleted))
	n.fields = fieldsDigest(rn.MasterFields)
}
