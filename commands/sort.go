package commands

// SORT and SORT_RO, as Redis 7.0.15's sort.c defines them, over lists, sets
// and sorted sets.
//
// BY and GET patterns name other keys (string keys, or hash fields with
// "->"), so one attempt reads the source key item, then the key items the
// patterns name (batched), then the fields of large hashes, and holds the
// result only if all of it was one state: a read-only SORT reads the key
// items again and starts over if any changed (model.Reads.Validate); a
// STORE writes the destination list in one request or transaction that
// also checks every key read is still as read (model.Reads.StoreList).
//
// Costs (DynamoDB requests) of a small source: SORT alone is one GetItem;
// each BY or GET round adds a BatchGet (one for BY and GET together when
// the whole result is returned, else one each), and then one BatchGet
// validates; STORE is one BatchGet (source and destination) and one
// TransactWriteItems (one Put when source and destination are one key).

import (
	"bytes"
	"math"
	"slices"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/internal/lualib"
	"github.com/redamo/redamo/model"
)

// msgSortNotDouble is sort.c's reply when a weight is not a number.
const msgSortNotDouble = "ERR One or more scores can't be converted into double"

// sortROKeys is SORT_RO's getkeys_proc: its key (its BY and GET patterns,
// which a key spec marks unknown, name no key COMMAND GETKEYS reports).
func sortROKeys([][]byte) []keyRef { return []keyRef{{pos: 1, flags: []string{"RO", "access"}}} }

// sortKeys is Redis's sortGetKeys: the key, and the last STORE's key
// (skipping LIMIT's, GET's and BY's arguments, any other word alone).
func sortKeys(args [][]byte) []keyRef {
	keys := []keyRef{{pos: 1, flags: []string{"RO", "access"}}}
	store := 0
	for i := 2; i < len(args); i++ {
		switch {
		case bytes.EqualFold(args[i], []byte("limit")):
			i += 2
		case bytes.EqualFold(args[i], []byte("get")), bytes.EqualFold(args[i], []byte("by")):
			i++
		case bytes.EqualFold(args[i], []byte("store")) && i+1 < len(args):
			store = i + 1
		}
	}
	if store > 0 {
		keys = append(keys, keyRef{pos: store, flags: []string{"OW", "update"}})
	}
	return keys
}

func registerSort(t *Table) {
	t.Register([]Row{
		{Name: "sort", Run: func(c *Ctx) { cmdSort(c, false) }, Keys: sortKeys},
		{Name: "sort_ro", Run: func(c *Ctx) { cmdSort(c, true) }, Keys: sortROKeys},
	})
}

// sortPattern is a BY or GET pattern: "#" (the element itself), or a key
// name with a '*' the element replaces, and optionally "->field" naming a
// field of the hash at that key. Like sort.c, it reads the pattern as a C
// string where C string functions read it (up to a zero byte).
type sortPattern struct {
	raw  []byte
	self bool
	// star is the index of the '*' (-1: none, the pattern names no key).
	star int
	// keyEnd ends the key part; field is the hash field (nil: a string).
	keyEnd int
	field  []byte
}

func parseSortPattern(p []byte) sortPattern {
	sp := sortPattern{raw: p, star: -1, keyEnd: len(p)}
	if len(p) > 0 && p[0] == '#' && (len(p) == 1 || p[1] == 0) {
		sp.self = true
		return sp
	}
	cstr := p
	if i := bytes.IndexByte(p, 0); i >= 0 {
		cstr = p[:i]
	}
	sp.star = bytes.IndexByte(cstr, '*')
	if sp.star < 0 {
		return sp
	}
	if f := bytes.Index(cstr[sp.star+1:], []byte("->")); f >= 0 {
		at := sp.star + 1 + f
		if at+2 < len(cstr) {
			sp.keyEnd, sp.field = at, p[at+2:]
		}
	}
	return sp
}

// names reports whether the pattern names another key.
func (p *sortPattern) names() bool { return !p.self && p.star >= 0 }

// key is the key the pattern names for element e.
func (p *sortPattern) key(e []byte) []byte {
	k := make([]byte, 0, p.keyEnd-1+len(e))
	k = append(k, p.raw[:p.star]...)
	k = append(k, e...)
	return append(k, p.raw[p.star+1:p.keyEnd]...)
}

// sortOpts is a parsed SORT.
type sortOpts struct {
	key []byte
	// by is the last BY pattern (nil: none); dontsort is set once a BY
	// pattern without '*' was given, whatever came after it (sort.c).
	by       *sortPattern
	dontsort bool
	// LIMIT offset count; count -1: to the end.
	start, count int64
	gets         []sortPattern
	desc, alpha  bool
	store        []byte
	hasStore     bool
}

// parseSort parses SORT's options in sort.c's order: the first bad option
// is the error (a LIMIT's bad integers before anything else after it).
func parseSort(args [][]byte, readonly bool) (sortOpts, string) {
	o := sortOpts{key: args[1], count: -1}
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case bytes.EqualFold(a, []byte("asc")):
			o.desc = false
		case bytes.EqualFold(a, []byte("desc")):
			o.desc = true
		case bytes.EqualFold(a, []byte("alpha")):
			o.alpha = true
		case bytes.EqualFold(a, []byte("limit")) && left >= 2:
			start, ok := model.String2ll(args[j+1])
			if !ok {
				return o, MsgNotInt
			}
			count, ok := model.String2ll(args[j+2])
			if !ok {
				return o, MsgNotInt
			}
			o.start, o.count = start, count
			j += 2
		case !readonly && bytes.EqualFold(a, []byte("store")) && left >= 1:
			o.store, o.hasStore = args[j+1], true
			j++
		case bytes.EqualFold(a, []byte("by")) && left >= 1:
			p := parseSortPattern(args[j+1])
			o.by = &p
			if p.self || p.star < 0 {
				o.dontsort = true
			}
			j++
		case bytes.EqualFold(a, []byte("get")) && left >= 1:
			o.gets = append(o.gets, parseSortPattern(args[j+1]))
			j++
		default:
			return o, MsgSyntax
		}
	}
	return o, ""
}

func cmdSort(c *Ctx, readonly bool) {
	o, msg := parseSort(c.Args, readonly)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	if o.hasStore {
		defer c.lockKeys(o.store)()
	}
	var res sortResult
	err := model.RetryConflicts(c, func(int) error {
		var err error
		res, err = sortAttempt(c, &o)
		return err
	})
	switch {
	case err != nil:
		c.Fail(err)
	case res.badWeight:
		c.W.Error(msgSortNotDouble)
	case o.hasStore:
		if len(res.vals) > 0 {
			c.Notify(events.List, "sortstore", o.store)
			c.wake(o.store)
		} else {
			c.notifyEmptied(o.store)
		}
		c.W.Int(int64(len(res.vals)))
	default:
		c.W.Array(len(res.vals))
		for i, v := range res.vals {
			if res.missing != nil && res.missing[i] {
				c.W.Nil()
				continue
			}
			c.W.Bulk(v)
		}
	}
}

// sortResult is what one attempt found: the reply's (or the stored list's)
// elements, with missing[i] set for a GET that found nothing (a nil in
// the reply), or that a weight is not a number.
type sortResult struct {
	vals      [][]byte
	missing   []bool
	badWeight bool
}

// sortItem is an element with its weight: score when sorting numerically,
// cmp (nil: none) when sorting by a pattern's value alphabetically.
type sortItem struct {
	elem  []byte
	score float64
	cmp   []byte
}

func sortAttempt(c *Ctx, o *sortOpts) (sortResult, error) {
	var res sortResult
	s := &sortSnap{c: c, Reads: model.NewReads()}
	src, err := s.source(o)
	if err != nil {
		return res, err
	}
	dontsort, alpha, by := o.dontsort, o.alpha, o.by
	if dontsort && src.typ == model.TypeSet && (o.hasStore || c.InScript) {
		// A set's own order is not one every replica or script run
		// shares: sort.c sorts it alphabetically instead.
		dontsort, alpha, by = false, true, nil
	}
	start, end := sortLimit(o, src.n)
	var elems [][]byte
	if elems, start, end, err = s.elements(src, dontsort, o.desc, start, end); err != nil {
		return res, err
	}
	items := make([]sortItem, len(elems))
	for i, e := range elems {
		items[i].elem = e
	}
	if !dontsort {
		// Every element's weight; the GET keys of every element too when
		// all of them are returned (one round of reads for both).
		var pats []sortPattern
		if by != nil {
			pats = append(pats, *by)
		}
		if start == 0 && end == int64(len(items))-1 {
			pats = append(pats, o.gets...)
		}
		if err := s.prepare(pats, elems); err != nil {
			return res, err
		}
		if res.badWeight, err = s.weigh(items, by, alpha); err != nil || res.badWeight {
			if err == nil {
				err = s.Validate(c)
			}
			return res, err
		}
		sortItems(items, alpha, by != nil, o.hasStore, o.desc)
	}
	var out []sortItem
	if end >= start {
		out = items[start : end+1]
	}
	if err := s.gets(&res, out, o.gets); err != nil {
		return res, err
	}
	if !o.hasStore {
		return res, s.Validate(c)
	}
	return res, s.StoreList(c, o.store, res.vals)
}

// sortSource is SORT's source key as opened: a list (l) or a set or sorted
// set (cl) of type typ with n elements.
type sortSource struct {
	typ string
	l   *model.ListView
	cl  *model.Collection
	n   int64
}

// source reads the source key (and the STORE destination with it) and
// opens it; an absent key sorts as an empty list.
func (s *sortSnap) source(o *sortOpts) (sortSource, error) {
	var src sortSource
	first := [][]byte{o.key}
	if o.hasStore {
		first = append(first, o.store)
	}
	if err := s.Load(s.c, first); err != nil {
		return src, err
	}
	ks := s.State(o.key)
	src.typ = model.TypeList
	if ks.Live {
		switch ks.Type {
		case model.TypeList, model.TypeSet, model.TypeZSet:
			src.typ = ks.Type
		default:
			return src, model.ErrWrongType
		}
	}
	var err error
	if src.typ == model.TypeList {
		if src.l, err = model.ListFromItem(s.c, o.key, ks.Raw); err != nil {
			return src, err
		}
		if ks.Live {
			src.n = src.l.Len()
		}
		s.Multi = s.Multi || src.l.Large()
		return src, nil
	}
	if src.cl, err = model.FromItem(s.c, o.key, src.typ, ks.Raw); err != nil {
		return src, err
	}
	if src.cl.WrongType {
		return src, model.ErrConflict // changed type while rolled forward
	}
	s.Note(o.key, src.cl.KS)
	if src.cl.Exists() {
		src.n = src.cl.Len()
	}
	s.Multi = s.Multi || src.cl.Large()
	return src, nil
}

// sortLimit is LIMIT's range of ranks [start, end] among n elements,
// clamped as sort.c does (empty when end < start).
func sortLimit(o *sortOpts, n int64) (start, end int64) {
	start = min(max(o.start, 0), n)
	count := min(max(o.count, -1), n)
	end = n - 1
	if count >= 0 {
		end = start + count - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	return start, min(end, n-1)
}

// elements reads the elements to sort, and returns the range of ranks
// among them the reply takes. Without sorting, a list or a sorted set is
// read only over that range, in its own order (reversed when desc).
func (s *sortSnap) elements(src sortSource, dontsort, desc bool, start, end int64) (_ [][]byte, _, _ int64, err error) {
	var elems [][]byte
	switch {
	case src.typ == model.TypeList && dontsort:
		if end >= start {
			if elems, err = listSortRange(src.l, start, end, desc); err != nil {
				return nil, 0, 0, err
			}
			end, start = end-start, 0
		}
	case src.typ == model.TypeList:
		err = src.l.All(func(_ int64, v []byte) error {
			elems = append(elems, v)
			return nil
		})
	case src.typ == model.TypeZSet && dontsort:
		if end >= start {
			es, err := model.ZByRank(src.cl, start, end, desc)
			if err != nil {
				return nil, 0, 0, err
			}
			for _, e := range es {
				elems = append(elems, e.Member)
			}
			end, start = end-start, 0
		}
	default:
		if src.cl.Exists() {
			elems, err = model.SetMembersOf(src.cl)
		}
	}
	if src.cl != nil && (src.cl.PagesRead || src.cl.SawRolling) {
		s.Multi = true
	}
	return elems, start, end, err
}

// weigh sets each item's weight: its element, or the BY pattern's value
// for it, as a number (score) or, under ALPHA with BY, as bytes (cmp).
// badWeight reports a weight that is not a number.
func (s *sortSnap) weigh(items []sortItem, by *sortPattern, alpha bool) (badWeight bool, err error) {
	for i := range items {
		w := items[i].elem
		if by != nil {
			v, ok, err := s.value(by, w)
			if err != nil {
				return false, err
			}
			if !ok {
				continue // no weight: score 0, or sorted first by ALPHA
			}
			w = v
		}
		if alpha {
			if by != nil {
				items[i].cmp = w
			}
			continue
		}
		f, ok := sortWeight(w)
		badWeight = badWeight || !ok
		items[i].score = f
	}
	return badWeight, nil
}

// sortItems sorts weighed items as sort.c compares them: by score, then
// element; or under ALPHA by the BY value (missing ones first) or the
// element, collated, or as bytes for STORE (binary).
func sortItems(items []sortItem, alpha, byPattern, binary, desc bool) {
	slices.SortStableFunc(items, func(a, b sortItem) int {
		var r int
		switch {
		case !alpha:
			switch {
			case a.score > b.score:
				r = 1
			case a.score < b.score:
				r = -1
			default:
				r = bytes.Compare(a.elem, b.elem)
			}
		case byPattern:
			switch {
			case a.cmp == nil || b.cmp == nil:
				r = boolCmp(a.cmp != nil, b.cmp != nil)
			case binary:
				r = bytes.Compare(a.cmp, b.cmp)
			default:
				r = collate(a.cmp, b.cmp)
			}
		case binary:
			r = bytes.Compare(a.elem, b.elem)
		default:
			r = collate(a.elem, b.elem)
		}
		if desc {
			r = -r
		}
		return r
	})
}

// gets fills res with the reply's values for items: the elements, or, with
// GET patterns, each pattern's value per element (missing ones marked).
func (s *sortSnap) gets(res *sortResult, items []sortItem, gets []sortPattern) error {
	if len(gets) == 0 {
		for _, it := range items {
			res.vals = append(res.vals, it.elem)
		}
		return nil
	}
	elems := make([][]byte, len(items))
	for i, it := range items {
		elems[i] = it.elem
	}
	if err := s.prepare(gets, elems); err != nil {
		return err
	}
	for _, it := range items {
		for g := range gets {
			v, ok, err := s.value(&gets[g], it.elem)
			if err != nil {
				return err
			}
			if !ok {
				v = []byte{}
				if res.missing == nil {
					res.missing = make([]bool, len(items)*len(gets))
				}
				res.missing[len(res.vals)] = true
			}
			res.vals = append(res.vals, v)
		}
	}
	return nil
}

// listSortRange returns the elements of ranks [start, end] of l, counted
// from the tail when desc (in that order).
func listSortRange(l *model.ListView, start, end int64, desc bool) ([][]byte, error) {
	n := l.Len()
	from, to := start, end
	if desc {
		from, to = n-1-end, n-1-start
	}
	vals, err := l.Range(from, to)
	if err != nil {
		return nil, err
	}
	if desc {
		slices.Reverse(vals)
	}
	return vals, nil
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// collate is strcoll in the C (and C.UTF-8) locale redis-server runs
// under: byte order, each string ending at its first zero byte.
func collate(a, b []byte) int {
	if i := bytes.IndexByte(a, 0); i >= 0 {
		a = a[:i]
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return bytes.Compare(a, b)
}

// sortWeight reads a weight as sort.c does: strtod must take the whole
// string (up to a zero byte; an empty string is 0), and the result must
// be in range and not NaN.
func sortWeight(b []byte) (float64, bool) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return 0, true
	}
	s := string(b)
	f, n := lualib.Strtod(s)
	if n != len(s) || math.IsNaN(f) {
		return f, false
	}
	return f, !strtodRange(s, f)
}

// strtodRange reports whether strtod sets ERANGE reading s (all of it a
// number) as f: an overflow to infinity, or an underflow of a nonzero
// number to zero or below the normal range.
func strtodRange(s string, f float64) bool {
	t := s
	for len(t) > 0 && (t[0] == ' ' || (t[0] >= '\t' && t[0] <= '\r') || t[0] == '+' || t[0] == '-') {
		t = t[1:]
	}
	if math.IsInf(f, 0) {
		return len(t) == 0 || t[0]|0x20 != 'i'
	}
	if f != 0 && math.Abs(f) >= 0x1p-1022 {
		return false
	}
	exp := byte('e')
	if len(t) > 1 && t[0] == '0' && t[1]|0x20 == 'x' {
		t, exp = t[2:], 'p'
	}
	for i := 0; i < len(t) && t[i]|0x20 != exp; i++ {
		if t[i] != '0' && t[i] != '.' {
			return true
		}
	}
	return false
}

// sortSnap is what one attempt of SORT read: the key items of the keys
// it looked at (model.Reads) and the values of the hash fields its
// patterns name.
type sortSnap struct {
	c *Ctx
	*model.Reads
	// fields holds, per hash key, the fields read (nil value: absent).
	fields map[string]map[string][]byte
}

// prepare reads what pats name for elems: the key items, then the fields
// of the hashes among them.
func (s *sortSnap) prepare(pats []sortPattern, elems [][]byte) error {
	var keys [][]byte
	fields := map[string][][]byte{}
	var hashes [][]byte
	for p := range pats {
		pat := &pats[p]
		if !pat.names() {
			continue
		}
		for _, e := range elems {
			k := pat.key(e)
			keys = append(keys, k)
			if pat.field != nil {
				if _, ok := fields[string(k)]; !ok {
					hashes = append(hashes, k)
				}
				fields[string(k)] = append(fields[string(k)], pat.field)
			}
		}
	}
	if err := s.Load(s.c, keys); err != nil {
		return err
	}
	for _, k := range hashes {
		st := s.State(k)
		if !st.Live || st.Type != model.TypeHash {
			continue
		}
		var want [][]byte
		for _, f := range model.Dedupe(fields[string(k)]) {
			if _, ok := s.fields[string(k)][string(f)]; !ok {
				want = append(want, f)
			}
		}
		if len(want) == 0 {
			continue
		}
		cl, err := model.FromItem(s.c, k, model.TypeHash, st.Raw)
		if err != nil {
			return err
		}
		s.Note(k, cl.KS)
		if cl.WrongType || !cl.Exists() {
			return model.ErrConflict // changed while rolled forward
		}
		vals, present, err := cl.Lookup(want)
		if err == nil {
			err = model.LoadValues(s.c, vals)
		}
		if err != nil {
			return err
		}
		if cl.Large() {
			s.Multi = true
		}
		if s.fields == nil {
			s.fields = map[string]map[string][]byte{}
		}
		fm := s.fields[string(k)]
		if fm == nil {
			fm = map[string][]byte{}
			s.fields[string(k)] = fm
		}
		for i, f := range want {
			fm[string(f)] = nil
			if present[i] {
				fm[string(f)] = model.ValueBytes(vals[i])
				if fm[string(f)] == nil {
					fm[string(f)] = []byte{}
				}
			}
		}
	}
	return nil
}

// value is what pattern p gives for element e (sort.c's
// lookupKeyByPattern): e itself for "#", the string at the key it names,
// or the field of the hash there; ok false when there is none. The reads
// were made by prepare.
func (s *sortSnap) value(p *sortPattern, e []byte) (_ []byte, ok bool, _ error) {
	if p.self {
		return e, true, nil
	}
	if p.star < 0 {
		return nil, false, nil
	}
	k := p.key(e)
	st := s.State(k)
	if !st.Live {
		return nil, false, nil
	}
	if p.field != nil {
		if st.Type != model.TypeHash {
			return nil, false, nil
		}
		v := s.fields[string(k)][string(p.field)]
		return v, v != nil, nil
	}
	if st.Type != model.TypeString {
		return nil, false, nil
	}
	v, err := st.StringValue()
	if err != nil {
		return nil, false, err
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}
