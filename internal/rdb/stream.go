package rdb

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// Streams (t_stream.c, rdb.c): the entries in listpacks, one per radix
// tree node, keyed by the node's master id, then the stream's metadata
// and its consumer groups.

// Stream entry flags.
const (
	streamFlagDeleted    = 1
	streamFlagSameFields = 2
)

// StreamID is an entry id.
type StreamID struct{ Ms, Seq uint64 }

func (a StreamID) less(b StreamID) bool { return a.Ms < b.Ms || (a.Ms == b.Ms && a.Seq < b.Seq) }

func (a StreamID) key() []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, a.Ms), a.Seq)
}

// StreamEntry is one entry: its id and its fields and values, alternating.
type StreamEntry struct {
	ID     StreamID
	Fields [][]byte
}

// StreamNode is one radix tree node as read: its master id, the id of its
// last entry (live or deleted), how many of its entries are live and
// deleted, its master entry's field names and its listpack's size.
type StreamNode struct {
	Master, Last  StreamID
	Live, Deleted int
	MasterFields  [][]byte
	Size          int
}

// Stream is a stream's content and metadata.
type Stream struct {
	// Entries are the live entries, in id order.
	Entries []StreamEntry
	// Nodes are the nodes Restore read (Dump lays the entries out as
	// XADD of each in turn would).
	Nodes                         []StreamNode
	Length                        uint64
	LastID, FirstID, MaxDeletedID StreamID
	EntriesAdded                  uint64
	Groups                        []StreamGroup
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name        []byte
	LastID      StreamID
	EntriesRead uint64
	// PEL is the group's pending entries; Consumers own them.
	PEL       []StreamPending
	Consumers []StreamConsumer
}

// StreamPending is a pending entry: when it was last delivered (Unix ms)
// and how many times.
type StreamPending struct {
	ID            StreamID
	DeliveryTime  int64
	DeliveryCount uint64
}

// StreamConsumer is a consumer: its name, when it was last seen (Unix
// ms), and the ids of the group's pending entries it owns.
type StreamConsumer struct {
	Name     []byte
	SeenTime int64
	PEL      []StreamID
}

// appendStream writes s as rdbSaveObject writes a stream whose entries
// were added one by one by XADD under opt's node limits.
func appendStream(b []byte, s *Stream, opt Options) []byte {
	type node struct {
		master StreamID
		lp     []byte
	}
	var nodes []node
	// The node being filled: its master fields, its body after the count
	// entry, and its entry count.
	var (
		master  StreamID
		mfields [][]byte
		body    *lpWriter
		count   int
	)
	finish := func() {
		if body == nil {
			return
		}
		w := newLPWriter()
		w.appendInt(int64(count))
		w.b = append(w.b, body.b[lpHeaderSize:]...)
		w.n += body.n
		nodes = append(nodes, node{master, w.finish()})
		body = nil
	}
	maxBytes := opt.StreamNodeMaxBytes
	if maxBytes <= 0 || maxBytes > 1<<30 {
		maxBytes = 1 << 30
	}
	for _, e := range s.Entries {
		tot := 0
		for _, f := range e.Fields {
			tot += len(f)
		}
		if body != nil {
			// The listpack's size as XADD sees it: the count entry
			// holds the entries so far.
			size := body.size() + lpIntSize(int64(count))
			if size+tot >= maxBytes || (opt.StreamNodeMaxEntries > 0 && count >= opt.StreamNodeMaxEntries) {
				finish()
			}
		}
		nf := len(e.Fields) / 2
		flags := int64(0)
		if body == nil {
			master, count = e.ID, 0
			body = newLPWriter()
			body.appendInt(0) // deleted
			body.appendInt(int64(nf))
			mfields = mfields[:0]
			for i := 0; i < len(e.Fields); i += 2 {
				body.appendString(e.Fields[i])
				mfields = append(mfields, e.Fields[i])
			}
			body.appendInt(0)
			flags = streamFlagSameFields
		} else if nf == len(mfields) {
			same := true
			for i, f := range mfields {
				same = same && bytes.Equal(f, e.Fields[2*i])
			}
			if same {
				flags = streamFlagSameFields
			}
		}
		body.appendInt(flags)
		body.appendInt(int64(e.ID.Ms - master.Ms))
		body.appendInt(int64(e.ID.Seq - master.Seq))
		if flags == 0 {
			body.appendInt(int64(nf))
		}
		for i := 0; i < len(e.Fields); i += 2 {
			if flags == 0 {
				body.appendString(e.Fields[i])
			}
			body.appendString(e.Fields[i+1])
		}
		lpCount := int64(nf + 3)
		if flags == 0 {
			lpCount += int64(nf + 1)
		}
		body.appendInt(lpCount)
		count++
	}
	finish()
	b = AppendLen(b, uint64(len(nodes)))
	for _, n := range nodes {
		b = AppendString(b, n.master.key())
		b = AppendString(b, n.lp)
	}
	b = AppendLen(b, s.Length)
	for _, id := range []StreamID{s.LastID, s.FirstID, s.MaxDeletedID} {
		b = AppendLen(AppendLen(b, id.Ms), id.Seq)
	}
	b = AppendLen(b, s.EntriesAdded)
	groups := slices.Clone(s.Groups)
	slices.SortFunc(groups, func(a, b StreamGroup) int { return bytes.Compare(a.Name, b.Name) })
	b = AppendLen(b, uint64(len(groups)))
	for _, g := range groups {
		b = AppendString(b, g.Name)
		b = AppendLen(AppendLen(b, g.LastID.Ms), g.LastID.Seq)
		b = AppendLen(b, g.EntriesRead)
		pel := slices.Clone(g.PEL)
		slices.SortFunc(pel, func(a, b StreamPending) int { return cmpID(a.ID, b.ID) })
		b = AppendLen(b, uint64(len(pel)))
		for _, p := range pel {
			b = append(b, p.ID.key()...)
			b = binary.LittleEndian.AppendUint64(b, uint64(p.DeliveryTime))
			b = AppendLen(b, p.DeliveryCount)
		}
		cs := slices.Clone(g.Consumers)
		slices.SortFunc(cs, func(a, b StreamConsumer) int { return bytes.Compare(a.Name, b.Name) })
		b = AppendLen(b, uint64(len(cs)))
		for _, c := range cs {
			b = AppendString(b, c.Name)
			b = binary.LittleEndian.AppendUint64(b, uint64(c.SeenTime))
			ids := slices.Clone(c.PEL)
			slices.SortFunc(ids, cmpID)
			b = AppendLen(b, uint64(len(ids)))
			for _, id := range ids {
				b = append(b, id.key()...)
			}
		}
	}
	return b
}

func cmpID(a, b StreamID) int {
	switch {
	case a.less(b):
		return -1
	case b.less(a):
		return 1
	}
	return 0
}

// readStream reads a stream (TypeStream or TypeStream3), checking each
// node's listpack entry by entry and that ids ascend across nodes.
func readStream(r *Reader, typ byte) (*Stream, error) {
	s := &Stream{}
	n, _, err := r.ReadLen()
	if err != nil {
		return nil, err
	}
	if n > uint64(r.Len()) {
		return nil, ErrCorrupt
	}
	var prev *StreamID
	for range n {
		key, err := r.ReadString()
		if err != nil {
			return nil, err
		}
		if len(key) != 16 {
			return nil, ErrCorrupt
		}
		master := StreamID{binary.BigEndian.Uint64(key), binary.BigEndian.Uint64(key[8:])}
		lp, err := r.ReadString()
		if err != nil {
			return nil, err
		}
		node, entries, err := readStreamNode(master, lp)
		if err != nil {
			return nil, err
		}
		if prev != nil && !prev.less(master) {
			return nil, ErrCorrupt
		}
		for _, e := range entries {
			if e.ID.less(master) || (prev != nil && !prev.less(e.ID)) {
				return nil, ErrCorrupt
			}
			id := e.ID
			prev = &id
		}
		if len(entries) == 0 {
			prev = &master
		}
		s.Nodes = append(s.Nodes, node)
		s.Entries = append(s.Entries, entries...)
	}
	var vals []uint64
	want := 3
	if typ == TypeStream3 {
		want = 8
	}
	for range want {
		v, _, err := r.ReadLen()
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	s.Length = vals[0]
	s.LastID = StreamID{vals[1], vals[2]}
	if typ == TypeStream3 {
		s.FirstID = StreamID{vals[3], vals[4]}
		s.MaxDeletedID = StreamID{vals[5], vals[6]}
		s.EntriesAdded = vals[7]
	} else {
		s.EntriesAdded = s.Length
		if len(s.Entries) > 0 {
			s.FirstID = s.Entries[0].ID
		}
	}
	if s.Length != uint64(len(s.Entries)) {
		return nil, ErrCorrupt
	}
	if prev != nil && s.LastID.less(*prev) {
		return nil, ErrCorrupt
	}
	groups, _, err := r.ReadLen()
	if err != nil {
		return nil, err
	}
	if groups > uint64(r.Len()) {
		return nil, ErrCorrupt
	}
	names := map[string]bool{}
	for range groups {
		g, err := readStreamGroup(r, typ)
		if err != nil {
			return nil, err
		}
		if names[string(g.Name)] {
			return nil, ErrCorrupt
		}
		names[string(g.Name)] = true
		s.Groups = append(s.Groups, g)
	}
	return s, nil
}

func readStreamGroup(r *Reader, typ byte) (StreamGroup, error) {
	var g StreamGroup
	var err error
	if g.Name, err = r.ReadString(); err != nil {
		return g, err
	}
	if g.LastID, err = readLenID(r); err != nil {
		return g, err
	}
	if typ == TypeStream3 {
		if g.EntriesRead, _, err = r.ReadLen(); err != nil {
			return g, err
		}
	}
	n, _, err := r.ReadLen()
	if err != nil {
		return g, err
	}
	if n > uint64(r.Len()/17) {
		return g, ErrCorrupt
	}
	owner := map[StreamID]bool{}
	for range n {
		var p StreamPending
		if p.ID, err = readRawID(r); err != nil {
			return g, err
		}
		t, err := r.next(8)
		if err != nil {
			return g, err
		}
		p.DeliveryTime = int64(binary.LittleEndian.Uint64(t))
		if p.DeliveryCount, _, err = r.ReadLen(); err != nil {
			return g, err
		}
		if _, dup := owner[p.ID]; dup {
			return g, ErrCorrupt
		}
		owner[p.ID] = false
		g.PEL = append(g.PEL, p)
	}
	nc, _, err := r.ReadLen()
	if err != nil {
		return g, err
	}
	if nc > uint64(r.Len()/10) {
		return g, ErrCorrupt
	}
	names := map[string]bool{}
	for range nc {
		var c StreamConsumer
		if c.Name, err = r.ReadString(); err != nil {
			return g, err
		}
		if names[string(c.Name)] {
			return g, ErrCorrupt
		}
		names[string(c.Name)] = true
		t, err := r.next(8)
		if err != nil {
			return g, err
		}
		c.SeenTime = int64(binary.LittleEndian.Uint64(t))
		np, _, err := r.ReadLen()
		if err != nil {
			return g, err
		}
		if np > uint64(r.Len()/16) {
			return g, ErrCorrupt
		}
		for range np {
			id, err := readRawID(r)
			if err != nil {
				return g, err
			}
			// Each pending entry of a consumer is one of the group's,
			// owned by no other consumer.
			if owned, ok := owner[id]; !ok || owned {
				return g, ErrCorrupt
			}
			owner[id] = true
			c.PEL = append(c.PEL, id)
		}
		g.Consumers = append(g.Consumers, c)
	}
	for _, owned := range owner {
		if !owned {
			return g, ErrCorrupt
		}
	}
	return g, nil
}

func readLenID(r *Reader) (StreamID, error) {
	ms, _, err := r.ReadLen()
	if err != nil {
		return StreamID{}, err
	}
	seq, _, err := r.ReadLen()
	return StreamID{ms, seq}, err
}

func readRawID(r *Reader) (StreamID, error) {
	p, err := r.next(16)
	if err != nil {
		return StreamID{}, err
	}
	return StreamID{binary.BigEndian.Uint64(p), binary.BigEndian.Uint64(p[8:])}, nil
}

// readStreamNode reads one node's listpack: the master entry (live count,
// deleted count, master fields, 0), then each entry (flags, id deltas,
// fields unless the master's, values, the entry's element count).
func readStreamNode(master StreamID, lp []byte) (StreamNode, []StreamEntry, error) {
	node := StreamNode{Master: master}
	es, err := readListpack(lp)
	if err != nil {
		return node, nil, err
	}
	i := 0
	nextInt := func() (int64, bool) {
		if i >= len(es) || !es[i].isInt {
			return 0, false
		}
		i++
		return es[i-1].n, true
	}
	next := func() ([]byte, bool) {
		if i >= len(es) {
			return nil, false
		}
		i++
		return es[i-1].bytes(), true
	}
	live, ok1 := nextInt()
	deleted, ok2 := nextInt()
	nmf, ok3 := nextInt()
	if !ok1 || !ok2 || !ok3 || live < 0 || deleted < 0 || nmf < 0 || nmf > int64(len(es)) {
		return node, nil, ErrCorrupt
	}
	mfields := make([][]byte, nmf)
	for j := range mfields {
		if mfields[j], ok1 = next(); !ok1 {
			return node, nil, ErrCorrupt
		}
	}
	if z, ok := nextInt(); !ok || z != 0 {
		return node, nil, ErrCorrupt
	}
	var out []StreamEntry
	var seenLive, seenDeleted int64
	for i < len(es) {
		flags, ok1 := nextInt()
		dms, ok2 := nextInt()
		dseq, ok3 := nextInt()
		if !ok1 || !ok2 || !ok3 {
			return node, nil, ErrCorrupt
		}
		nf := nmf
		if flags&streamFlagSameFields == 0 {
			var ok bool
			if nf, ok = nextInt(); !ok || nf < 0 || nf > int64(len(es)) {
				return node, nil, ErrCorrupt
			}
		}
		fields := make([][]byte, 0, 2*nf)
		for j := range nf {
			f := []byte(nil)
			if flags&streamFlagSameFields != 0 {
				f = mfields[j]
			} else if f, ok1 = next(); !ok1 {
				return node, nil, ErrCorrupt
			}
			v, ok := next()
			if !ok {
				return node, nil, ErrCorrupt
			}
			fields = append(fields, f, v)
		}
		want := nf + 3
		if flags&streamFlagSameFields == 0 {
			want += nf + 1
		}
		if c, ok := nextInt(); !ok || c != want {
			return node, nil, ErrCorrupt
		}
		id := StreamID{master.Ms + uint64(dms), master.Seq + uint64(dseq)}
		node.Last = id
		if flags&streamFlagDeleted != 0 {
			seenDeleted++
			continue
		}
		seenLive++
		out = append(out, StreamEntry{ID: id, Fields: fields})
	}
	if seenLive != live || seenDeleted != deleted || live+deleted == 0 {
		return node, nil, ErrCorrupt
	}
	node.Live, node.Deleted = int(live), int(deleted)
	node.MasterFields, node.Size = mfields, len(lp)
	return node, out, nil
}
