package model

// DUMP and RESTORE: a key's value to and from Redis 7.0's serialization
// (internal/rdb), over the usual reads and the collection engine's writes.
//
// DUMP writes what redis-server 7.0.15 writes for the same content held in
// the encoding Redis would hold it in (the one OBJECT ENCODING reports),
// so a payload RESTOREd from Redis comes back byte for byte, except where
// redamo does not keep what decides Redis's bytes:
//   - the order of a hash's fields or a set's members: redamo writes them
//     in its own order (a hash in listpack encoding in field order, where
//     Redis keeps the order they were added in; a hash table in field
//     order, where Redis's order depends on its hash seed, different in
//     every redis-server process);
//   - an intset's width: Redis never narrows one after removals, redamo
//     writes the narrowest;
//   - a list's nodes: written as RPUSH of the elements one by one fills
//     them (a list built by LPUSH, LINSERT or LREM has other nodes in
//     Redis);
//   - a stream's deleted entries, which Redis keeps in its nodes until a
//     node empties: redamo keeps only their count, and writes the live
//     entries in nodes as XADD of each in turn fills them.

import (
	"bytes"
	"errors"
	"slices"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/rdb"
)

// ErrBusyKey is RESTORE without REPLACE onto a live key.
var ErrBusyKey = errors.New("model: target key exists")

// DumpOptions are the encoding parameters a payload depends on.
type DumpOptions struct {
	Limits EncodingLimits
	// ListFill is list-max-listpack-size.
	ListFill int64
}

// Dump is DUMP: key's value as Redis's serialization (nil when the key
// does not exist), read as one consistent state.
func Dump(c Scope, key []byte, o DumpOptions) ([]byte, error) {
	var out []byte
	err := RetryConflicts(c, func(int) error {
		out = nil
		ks, err := ReadKey(c, key)
		if err != nil || !ks.Live {
			return err
		}
		obj, err := dumpObject(c, key, ks, o)
		if err != nil {
			return err
		}
		out = rdb.Dump(obj, rdb.Options{
			ListFill:             int(o.ListFill),
			StreamNodeMaxEntries: StreamNodeMaxEntries,
			StreamNodeMaxBytes:   rdb.DefaultOptions.StreamNodeMaxBytes,
		})
		return nil
	})
	return out, err
}

// dumpObject reads the value of the live key item ks whole.
func dumpObject(c Scope, key []byte, ks KeyState, o DumpOptions) (*rdb.Object, error) {
	if ks.Type == TypeString {
		v, err := ks.StringValue()
		return &rdb.Object{Type: rdb.TypeString, String: v}, err
	}
	if ks.Type == TypeList {
		l, err := ListFromItem(c, key, ks.Raw)
		if err != nil {
			return nil, err
		}
		obj := &rdb.Object{Type: rdb.TypeListQuicklist2}
		err = l.All(func(_ int64, v []byte) error {
			obj.Elems = append(obj.Elems, v)
			return nil
		})
		if err != nil {
			return nil, err
		}
		return obj, ValidateRead(c, l.Collection)
	}
	cl, err := FromItem(c, key, ks.Type, ks.Raw)
	if err != nil {
		return nil, err
	}
	if cl.WrongType {
		return nil, ErrConflict // rolled forward into another type
	}
	var obj *rdb.Object
	switch ks.Type {
	case TypeStream:
		obj, err = dumpStream(cl)
	default:
		obj, err = dumpMembers(cl, o)
	}
	if err != nil {
		return nil, err
	}
	return obj, ValidateRead(c, cl)
}

// dumpMembers reads a hash, set or sorted set whole and picks the
// encoding Redis would hold it in.
func dumpMembers(cl *Collection, o DumpOptions) (*rdb.Object, error) {
	obj := &rdb.Object{}
	compact := cl.Len() <= o.Limits.HashEntries
	switch cl.Type {
	case TypeSet:
		compact = cl.Len() <= o.Limits.SetIntsetEntries
	case TypeZSet:
		compact = cl.KeyAttr(AttrBigEncoding) == nil
	}
	err := cl.Each(func(m []byte, v dynastore.Value) error {
		m = bytes.Clone(m)
		switch cl.Type {
		case TypeSet:
			_, isInt := String2ll(m)
			compact = compact && isInt
			obj.Elems = append(obj.Elems, m)
		case TypeHash:
			vs := []dynastore.Value{v}
			if err := loadValues(cl.c, vs); err != nil {
				return err
			}
			val := bytes.Clone(ValueBytes(vs[0]))
			compact = compact && int64(len(m)) <= o.Limits.HashValue && int64(len(val)) <= o.Limits.HashValue
			obj.Pairs = append(obj.Pairs, m, val)
		case TypeZSet:
			obj.ZSet = append(obj.ZSet, rdb.ZEntry{Member: m, Score: zscoreOf(v)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case cl.Type == TypeSet && compact:
		obj.Type = rdb.TypeSetIntset
	case cl.Type == TypeSet:
		obj.Type = rdb.TypeSet
	case cl.Type == TypeHash && compact:
		obj.Type = rdb.TypeHashListpack
	case cl.Type == TypeHash:
		obj.Type = rdb.TypeHash
	case compact:
		obj.Type = rdb.TypeZSetListpack
	default:
		obj.Type = rdb.TypeZSet2
	}
	return obj, nil
}

// dumpStream reads a stream whole.
func dumpStream(cl *Collection) (*rdb.Object, error) {
	st, err := streamStateOf(cl)
	if err != nil {
		return nil, err
	}
	s := &rdb.Stream{
		LastID:       rdb.StreamID(st.last),
		MaxDeletedID: rdb.StreamID(st.maxDel),
		EntriesAdded: uint64(st.added),
	}
	err = st.rangeRead(cl, StreamID{}, MaxStreamID, false, 0, func(e StreamEntry) bool {
		s.Entries = append(s.Entries, rdb.StreamEntry{ID: rdb.StreamID(e.ID), Fields: e.Fields})
		return true
	})
	if err != nil {
		return nil, err
	}
	s.Length = uint64(len(s.Entries))
	if len(s.Entries) > 0 {
		s.FirstID = s.Entries[0].ID
	}
	if s.Groups, err = dumpGroups(cl); err != nil {
		return nil, err
	}
	return &rdb.Object{Type: rdb.TypeStream3, Stream: s}, nil
}

// RestoreArgs are a RESTORE's value and options.
type RestoreArgs struct {
	Object *rdb.Object
	// ExpireAt is the deadline in Unix ms (0: none).
	ExpireAt int64
	Replace  bool
	// ZSetEntries and ZSetValue are zset-max-listpack-entries and
	// zset-max-listpack-value: whether Redis would load a sorted set as a
	// skiplist.
	ZSetEntries, ZSetValue int64
}

// RestoreOutcome says what a RESTORE did.
type RestoreOutcome struct {
	// Written: the key now holds the value. Deleted: the deadline had
	// passed, and REPLACE deleted the key that was there.
	Written, Deleted bool
}

// Restore is RESTORE: key takes the value a.Object (ErrBusyKey when it is
// live and a.Replace is not set). A value that fits the key item is one
// conditional PutItem; a large collection is staged in a new generation
// first, after one read of the key item. A deadline already past writes
// nothing (REPLACE then deletes the key).
func Restore(c Scope, key []byte, a RestoreArgs) (RestoreOutcome, error) {
	if !KeyFits(key) {
		return RestoreOutcome{}, ErrKeyTooLong
	}
	if a.ExpireAt != 0 && a.ExpireAt <= c.NowMS() {
		if a.Replace {
			deleted, err := DeleteKey(c, key)
			return RestoreOutcome{Deleted: deleted}, err
		}
		ks, err := ReadKey(c, key)
		if err == nil && ks.Live {
			err = ErrBusyKey
		}
		return RestoreOutcome{}, err
	}
	o := a.Object
	if o.Kind() == rdb.KindString {
		return restoreString(c, key, o.String, a)
	}
	typ, big := restoreShape(o, a)
	var sv *stagedValues
	var members, vals [][]byte
	switch typ {
	case TypeHash:
		for i := 0; i+1 < len(o.Pairs); i += 2 {
			members, vals = append(members, o.Pairs[i]), append(vals, o.Pairs[i+1])
		}
	case TypeStream:
		for _, e := range o.Stream.Entries {
			members, vals = append(members, StreamID(e.ID).member()), append(vals, encodeFields(e.Fields))
		}
	}
	if members != nil {
		var err error
		if sv, err = stageFieldValues(c, key, members, vals); err != nil {
			return RestoreOutcome{}, err
		}
	}
	var elems *bigElems
	if typ == TypeList {
		elems = newBigElems(c)
	}
	err := RetryConflicts(c, func(int) error {
		elems.attempt()
		cl := &Collection{c: c, Type: typ, Key: key, Replace: true}
		if err := fillRestored(cl, o, sv, elems); err != nil {
			return err
		}
		var cond dynastore.Cond
		if !fitsInline(c.Process().inline(typ), cl.puts) {
			// Staging a generation costs requests in proportion to its
			// size: not for a key that turns out to be busy.
			ks, err := ReadKey(c, key)
			if err != nil {
				return err
			}
			if ks.Live && !a.Replace {
				return ErrBusyKey
			}
			cl.KS, cond = ks, ks.Guard()
		} else if !a.Replace {
			cond = CondNotLive(c.NowMS())
		}
		if big {
			cl.SetKeyAttr(AttrBigEncoding, NInt(1))
		}
		if a.ExpireAt != 0 {
			cl.SetKeyAttr(AttrExpiry, NInt(a.ExpireAt))
			cl.SetKeyAttr(dynastore.AttrTTL, TTLSeconds(a.ExpireAt))
		}
		acts, err := cl.Plan()
		if err != nil {
			return err
		}
		pk := KeyPK(c.DB(), key)
		for i := range acts {
			if acts[i].Op == dynastore.TxPut && bytes.Equal(acts[i].Item.Key().PK, pk) {
				acts[i].Cond = cond
			}
		}
		if err := CommitActions(c, acts); err != nil {
			if errors.Is(err, ErrConflict) {
				dropUnpublished(c, []*Collection{cl})
				if cl.KS.Raw == nil && !a.Replace {
					return ErrBusyKey
				}
			}
			return err
		}
		cl.NoteCommitted()
		return nil
	})
	elems.settle(c, err)
	if err != nil {
		if errors.Is(err, ErrBusyKey) && sv != nil {
			sv.discard(c)
		}
		return RestoreOutcome{}, err
	}
	reportCreated(c, key)
	return RestoreOutcome{Written: true}, nil
}

// restoreString writes a string key: one PutItem.
func restoreString(c Scope, key, val []byte, a RestoreArgs) (RestoreOutcome, error) {
	var cond dynastore.Cond
	if !a.Replace {
		cond = CondNotLive(c.NowMS())
	}
	_, err := c.Data().Put(c, StringItem(c.DB(), key, val, OriginArg, a.ExpireAt), dynastore.WriteOptions{Cond: cond, Handover: true})
	if _, failed := CondFailed(err); failed {
		return RestoreOutcome{}, ErrBusyKey
	}
	if err != nil {
		return RestoreOutcome{}, err
	}
	Items(c).Drop(c.DB(), key)
	reportCreated(c, key)
	return RestoreOutcome{Written: true}, nil
}

// restoreShape is the collection type of o and whether
// Redis would load it in its big encoding where redamo keeps that
// history (a sorted set as a skiplist: rdbLoadObject's rules).
func restoreShape(o *rdb.Object, a RestoreArgs) (typ string, big bool) {
	switch o.Kind() {
	case rdb.KindList:
		return TypeList, false
	case rdb.KindSet:
		return TypeSet, false
	case rdb.KindHash:
		return TypeHash, false
	case rdb.KindStream:
		return TypeStream, false
	}
	n := len(o.ZSet)
	switch o.Type {
	case rdb.TypeZSetListpack, rdb.TypeZSetZiplist:
		big = int64(n) > a.ZSetEntries
	default:
		longest := 0
		for _, e := range o.ZSet {
			longest = max(longest, len(e.Member))
		}
		big = int64(n) > a.ZSetEntries || int64(longest) > a.ZSetValue
	}
	return TypeZSet, big
}

// fillRestored stages o's entries in cl, a collection replacing the key,
// with the big hash values and stream entries sv staged (nil: none), and
// a list's big elements staged by big.
func fillRestored(cl *Collection, o *rdb.Object, sv *stagedValues, big *bigElems) error {
	switch cl.Type {
	case TypeList:
		for i, v := range o.Elems {
			m := PosMember(int64(i))
			sv, err := big.value(cl, m, v)
			if err != nil {
				return err
			}
			cl.Put(m, sv)
		}
	case TypeSet:
		for _, m := range o.Elems {
			cl.Put(m, nil)
		}
	case TypeHash:
		for i := 0; i < len(o.Pairs); i += 2 {
			cl.Put(o.Pairs[i], sv.value(o.Pairs[i], o.Pairs[i+1]))
		}
		sv.publish(cl)
	case TypeZSet:
		for _, e := range o.ZSet {
			zput(cl, e.Member, e.Score)
		}
	case TypeStream:
		s := o.Stream
		st := &streamState{
			last:   StreamID(s.LastID),
			maxDel: StreamID(s.MaxDeletedID),
			added:  int64(s.EntriesAdded),
		}
		// The payload's nodes (every entry is in one: rdb.Restore reads
		// them from its listpacks).
		for _, nd := range s.Nodes {
			if nd.Live == 0 {
				continue
			}
			n := streamNode{
				master: StreamID(nd.Master), last: StreamID(nd.Last),
				live: int64(nd.Live), total: int64(nd.Live + nd.Deleted),
			}
			restoredNodeSizes(&n, nd)
			st.nodes = append(st.nodes, n)
		}
		for _, e := range s.Entries {
			m := StreamID(e.ID).member()
			cl.Put(m, sv.refOr(m, encodeFields(e.Fields)))
		}
		sv.publish(cl)
		st.stage(cl)
		if len(s.Groups) > 0 {
			return stageRestoredGroups(cl, st, slices.Clone(s.Groups))
		}
	}
	return nil
}
