package commands

// GEO commands: positions kept in a sorted set, each member's score the
// 52-bit geohash of its longitude and latitude (internal/geohash has the
// arithmetic). This file parses their arguments, runs a search over a
// geoSource and writes the replies, as Redis 7.0's geo.c does; the sorted
// set (zsets.go) is the source, read through its order, and a stored
// result is written as ZRANGESTORE writes one.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/internal/geohash"
	"github.com/redamo/redamo/model"
)

// ---- GEOADD ------------------------------------------------------------------

// geoAddArgs is a parsed GEOADD: the ZADD it amounts to.
type geoAddArgs struct {
	nx, xx, ch bool
	scores     []float64
	members    [][]byte
}

// parseGeoAdd parses GEOADD key [NX|XX] [CH] lon lat member ...: args is
// the whole command (args[0] the name), at least 5 of them.
func parseGeoAdd(args [][]byte) (geoAddArgs, string) {
	var a geoAddArgs
	i := 2
	for ; i < len(args); i++ {
		switch {
		case argIs(args[i], "nx"):
			a.nx = true
		case argIs(args[i], "xx"):
			a.xx = true
		case argIs(args[i], "ch"):
			a.ch = true
		default:
			goto positions
		}
	}
positions:
	// No triple at all is ZADD's syntax error, which GEOADD hands it.
	if (len(args)-i)%3 != 0 || (a.nx && a.xx) || i == len(args) {
		return a, MsgSyntax
	}
	for ; i < len(args); i += 3 {
		lon, lat, msg := parseLonLat(args[i], args[i+1])
		if msg != "" {
			return a, msg
		}
		a.scores = append(a.scores, float64(geohash.Encode(lon, lat)))
		a.members = append(a.members, args[i+2])
	}
	return a, ""
}

// parseLonLat is extractLongLatOrReply.
func parseLonLat(lonArg, latArg []byte) (lon, lat float64, msg string) {
	lon, ok := string2d(lonArg)
	if !ok {
		return 0, 0, MsgNotFloat
	}
	if lat, ok = string2d(latArg); !ok {
		return 0, 0, MsgNotFloat
	}
	return lon, lat, geohash.Validate(lon, lat)
}

// parseGeoUnit is extractUnitOrReply: meters per unit.
func parseGeoUnit(arg []byte) (float64, string) {
	if f, ok := geohash.Unit(string(arg)); ok {
		return f, ""
	}
	return 0, MsgGeoUnit
}

// ---- GEOPOS, GEOHASH, GEODIST -----------------------------------------------

// geoScore is one member's score, if the member exists.
type geoScore struct {
	score float64
	ok    bool
}

// writeGeoPos writes GEOPOS's reply: each member's position, or a null
// array for a missing one.
func writeGeoPos(w Writer, scores []geoScore) {
	w.Array(len(scores))
	for _, s := range scores {
		if !s.ok {
			w.NilArray()
			continue
		}
		lon, lat := geohash.Decode(s.score)
		w.Array(2)
		w.HumanDouble(lon)
		w.HumanDouble(lat)
	}
}

// writeGeoHash writes GEOHASH's reply: each member's 11-character geohash,
// or a null for a missing one.
func writeGeoHash(w Writer, scores []geoScore) {
	w.Array(len(scores))
	for _, s := range scores {
		if !s.ok {
			w.Nil()
			continue
		}
		w.BulkString(geohash.HashString(geohash.Decode(s.score)))
	}
}

// parseGeoDist parses GEODIST key m1 m2 [unit] (args the whole command, at
// least 4): meters per unit. Its errors come before the key is read.
func parseGeoDist(args [][]byte) (float64, string) {
	switch {
	case len(args) == 5:
		return parseGeoUnit(args[4])
	case len(args) > 5:
		return 0, MsgSyntax
	}
	return 1, ""
}

// writeGeoDist writes GEODIST's reply for two members' scores (a null when
// either is missing, as for a missing key).
func writeGeoDist(w Writer, a, b geoScore, toMeters float64) {
	if !a.ok || !b.ok {
		w.Nil()
		return
	}
	lon1, lat1 := geohash.Decode(a.score)
	lon2, lat2 := geohash.Decode(b.score)
	w.BulkString(formatGeoDistance(geohash.Distance(lon1, lat1, lon2, lat2) / toMeters))
}

// formatGeoDistance is addReplyDoubleDistance's text, fixedpoint_d2string
// with 4 decimals: the value times 10^4 rounded (llrint: to even on ties),
// its digits with a point before the last 4.
func formatGeoDistance(d float64) string {
	if d == 0 {
		return "0.0000"
	}
	r := math.RoundToEven(d * 10000)
	var v uint64
	neg := false
	switch {
	case r >= 1<<63 || r < -(1<<63) || math.IsNaN(r):
		// llrint's result for these is LLONG_MIN.
		neg, v = true, 1<<63
	case r < 0:
		neg, v = true, uint64(-int64(r))
	default:
		v = uint64(int64(r))
	}
	digits := strconv.FormatUint(v, 10)
	for len(digits) < 5 {
		digits = "0" + digits
	}
	s := digits[:len(digits)-4] + "." + digits[len(digits)-4:]
	if neg {
		s = "-" + s
	}
	return s
}

// ---- GEOSEARCH and GEORADIUS --------------------------------------------------

// geoFlags says which of the search commands is parsed (georadiusGeneric's
// flags).
type geoFlags uint8

const (
	geoFromLonLat  geoFlags = 1 << iota // GEORADIUS: lon lat radius unit
	geoFromMember                       // GEORADIUSBYMEMBER: member radius unit
	geoNoStore                          // the _RO forms: no STORE/STOREDIST
	geoSearchCmd                        // GEOSEARCH syntax
	geoSearchStore                      // GEOSEARCHSTORE: a destination first
)

// geoSearchFlags maps each search command to its flags.
var geoSearchFlags = map[string]geoFlags{
	"georadius":            geoFromLonLat,
	"georadius_ro":         geoFromLonLat | geoNoStore,
	"georadiusbymember":    geoFromMember,
	"georadiusbymember_ro": geoFromMember | geoNoStore,
	"geosearch":            geoSearchCmd,
	"geosearchstore":       geoSearchCmd | geoSearchStore,
}

// Sort orders of a search.
const (
	geoSortNone = iota
	geoSortAsc
	geoSortDesc
)

// geoQuery is a parsed search.
type geoQuery struct {
	shape geohash.Shape
	// store is the destination key (GEOSEARCHSTORE, STORE, STOREDIST), nil
	// for a reply to the client; storeDist stores distances, not scores.
	store     []byte
	storeDist bool
	withDist  bool
	withHash  bool
	withCoord bool
	sort      int
	// count is the most results (0: all); with any, the scan stops once it
	// has count matches.
	count int64
	any   bool
}

// geoMemberScore looks a member up in the source sorted set.
type geoMemberScore func(member []byte) (score float64, ok bool, err error)

// parseGeoQuery parses a GEORADIUS, GEORADIUSBYMEMBER (and _RO), GEOSEARCH
// or GEOSEARCHSTORE command (args the whole command, arity already checked)
// with Redis's checks in Redis's order. Redis reads the source key before
// parsing, so the caller has: it replied WRONGTYPE for another type, and
// passes the sorted set's member lookup, nil when the key does not exist.
// Without a key the centre member is not looked up (nor, for
// GEORADIUSBYMEMBER, the radius parsed) but the rest is checked; the caller
// then replies an empty array, or when storing deletes the destination and
// replies 0. Errors are replies (redisError) or the lookup's.
func parseGeoQuery(args [][]byte, flags geoFlags, lookup geoMemberScore) (geoQuery, error) {
	var q geoQuery
	fail := func(msg string) (geoQuery, error) { return q, redisError(msg) }
	centre := func(member []byte) error {
		score, ok, err := lookup(member)
		if err != nil {
			return err
		}
		if !ok {
			return redisError(MsgGeoMember)
		}
		q.shape.Lon, q.shape.Lat = geohash.Decode(score)
		return nil
	}
	radius := func(a [][]byte) string {
		r, ok := string2d(a[0])
		if !ok {
			return MsgGeoRadius
		}
		if r < 0 {
			return MsgGeoNegRadius
		}
		q.shape.Box, q.shape.Radius = false, r
		toMeters, msg := parseGeoUnit(a[1])
		q.shape.ToMeters = toMeters
		return msg
	}

	var base int
	switch {
	case flags&geoFromLonLat != 0:
		base = 6
		lon, lat, msg := parseLonLat(args[2], args[3])
		if msg != "" {
			return fail(msg)
		}
		q.shape.Lon, q.shape.Lat = lon, lat
		if msg := radius(args[4:6]); msg != "" {
			return fail(msg)
		}
	case flags&geoFromMember != 0:
		base = 5
		if lookup != nil {
			if err := centre(args[2]); err != nil {
				return q, err
			}
			if msg := radius(args[3:5]); msg != "" {
				return fail(msg)
			}
		}
	default:
		base = 2
		if flags&geoSearchStore != 0 {
			base = 3
			q.store = args[1]
		}
	}

	search := flags&geoSearchCmd != 0
	canStore := flags&geoNoStore == 0 && !search
	var fromMember, fromLonLat, byRadius, byBox bool
	rest := args[base:]
	for i := 0; i < len(rest); i++ {
		more := len(rest) - 1 - i // arguments after this one
		a := rest[i]
		switch {
		case argIs(a, "withdist"):
			q.withDist = true
		case argIs(a, "withhash"):
			q.withHash = true
		case argIs(a, "withcoord"):
			q.withCoord = true
		case argIs(a, "any"):
			q.any = true
		case argIs(a, "asc"):
			q.sort = geoSortAsc
		case argIs(a, "desc"):
			q.sort = geoSortDesc
		case argIs(a, "count") && more >= 1:
			n, ok := model.String2ll(rest[i+1])
			if !ok {
				return fail(MsgNotInt)
			}
			if n <= 0 {
				return fail(MsgGeoCount)
			}
			q.count = n
			i++
		case (argIs(a, "store") || argIs(a, "storedist")) && more >= 1 && canStore:
			q.store, q.storeDist = rest[i+1], argIs(a, "storedist")
			i++
		case argIs(a, "storedist") && flags&geoSearchStore != 0:
			q.storeDist = true
		case argIs(a, "frommember") && more >= 1 && search && !fromLonLat:
			if lookup != nil {
				if err := centre(rest[i+1]); err != nil {
					return q, err
				}
			}
			fromMember = true
			i++
		case argIs(a, "fromlonlat") && more >= 2 && search && !fromMember:
			lon, lat, msg := parseLonLat(rest[i+1], rest[i+2])
			if msg != "" {
				return fail(msg)
			}
			q.shape.Lon, q.shape.Lat = lon, lat
			fromLonLat = true
			i += 2
		case argIs(a, "byradius") && more >= 2 && search && !byBox:
			if msg := radius(rest[i+1 : i+3]); msg != "" {
				return fail(msg)
			}
			byRadius = true
			i += 2
		case argIs(a, "bybox") && more >= 3 && search && !byRadius:
			w, ok := string2d(rest[i+1])
			if !ok {
				return fail(MsgGeoWidth)
			}
			h, ok := string2d(rest[i+2])
			if !ok {
				return fail(MsgGeoHeight)
			}
			if h < 0 || w < 0 {
				return fail(MsgGeoNegBox)
			}
			toMeters, msg := parseGeoUnit(rest[i+3])
			if msg != "" {
				return fail(msg)
			}
			q.shape.Box, q.shape.Width, q.shape.Height, q.shape.ToMeters = true, w, h, toMeters
			byBox = true
			i += 3
		default:
			return fail(MsgSyntax)
		}
	}

	if q.store != nil && (q.withDist || q.withHash || q.withCoord) {
		what := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		return fail(fmt.Sprintf(MsgGeoStoreWith, what))
	}
	if search && !fromMember && !fromLonLat {
		return fail(fmt.Sprintf(MsgGeoFrom, args[0]))
	}
	if search && !byRadius && !byBox {
		return fail(fmt.Sprintf(MsgGeoBy, args[0]))
	}
	if q.any && q.count == 0 {
		return fail(MsgGeoAnyCount)
	}
	// Only the nearest make sense as the first COUNT (but ANY takes the
	// first found).
	if q.count != 0 && q.sort == geoSortNone && !q.any {
		q.sort = geoSortAsc
	}
	return q, nil
}

// geoSource is what a GEO search reads of a sorted set.
type geoSource interface {
	// scoreRange calls fn for each member whose score s is min <= s < max
	// (Redis's membersOfGeoHashBox: min inclusive, max exclusive), in the
	// sorted set's order: by score, then by member bytes. It stops at fn's
	// first error and returns it; errStopScan stops it without an error.
	// member is only valid during the call.
	scoreRange(min, max float64, fn func(member []byte, score float64) error) error
}

// errStopScan ends a geoSource scan early, with no error.
var errStopScan = errors.New("stop scan")

// geoPoint is one search result.
type geoPoint struct {
	member []byte
	// dist is in the query's unit once geoSearch returns.
	dist     float64
	score    float64
	lon, lat float64
}

// geoSearch runs a query over src: the members inside its shape, scanned
// cell by cell as Redis does, sorted and cut to COUNT as Redis does, with
// distances in the query's unit.
func geoSearch(q *geoQuery, src geoSource) ([]geoPoint, error) {
	var pts []geoPoint
	limit := 0
	if q.any {
		limit = int(min(q.count, math.MaxInt32))
	}
	full := func() bool { return limit > 0 && len(pts) >= limit }
	for _, r := range q.shape.Ranges() {
		if full() {
			break
		}
		err := src.scoreRange(float64(r.Min), float64(r.Max), func(member []byte, score float64) error {
			lon, lat := geohash.Decode(score)
			if d, ok := q.shape.Contains(lon, lat); ok {
				pts = append(pts, geoPoint{append([]byte(nil), member...), d, score, lon, lat})
			}
			if full() {
				return errStopScan
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopScan) {
			return nil, err
		}
	}

	n := len(pts)
	if q.count > 0 && int64(n) > q.count {
		n = int(q.count)
	}
	if q.sort != geoSortNone {
		cmp := func(a, b *geoPoint) int {
			c := 0
			switch {
			case a.dist > b.dist:
				c = 1
			case a.dist == b.dist:
			default:
				c = -1
			}
			if q.sort == geoSortDesc {
				c = -c
			}
			return c
		}
		if n == len(pts) {
			mergeSort(pts, cmp)
		} else {
			partialQuickSort(pts, cmp, 0, n-1)
		}
	}
	pts = pts[:n]
	for i := range pts {
		pts[i].dist /= q.shape.ToMeters
	}
	return pts, nil
}

// mergeSort sorts as glibc's qsort does for arrays it can buffer (a
// top-down merge sort, stable), so equal distances keep the scan order
// and the comparator is called as glibc calls it.
func mergeSort(p []geoPoint, cmp func(a, b *geoPoint) int) {
	tmp := make([]geoPoint, len(p))
	var msort func(b []geoPoint)
	msort = func(b []geoPoint) {
		if len(b) <= 1 {
			return
		}
		n1 := len(b) / 2
		b1, b2 := b[:n1], b[n1:]
		msort(b1)
		msort(b2)
		out := tmp[:0]
		for len(b1) > 0 && len(b2) > 0 {
			if cmp(&b1[0], &b2[0]) <= 0 {
				out, b1 = append(out, b1[0]), b1[1:]
			} else {
				out, b2 = append(out, b2[0]), b2[1:]
			}
		}
		out = append(out, b1...)
		copy(b, out)
	}
	msort(p)
}

// partialQuickSort is Redis's pqsort (the BSD quicksort that only recurses
// into parts overlapping positions lo..hi): Redis uses it when COUNT keeps
// fewer results than matched, and equal distances end up in its order.
func partialQuickSort(p []geoPoint, cmp func(a, b *geoPoint) int, lo, hi int) {
	med3 := func(a, b, c int) int {
		if cmp(&p[a], &p[b]) < 0 {
			if cmp(&p[b], &p[c]) < 0 {
				return b
			}
			if cmp(&p[a], &p[c]) < 0 {
				return c
			}
			return a
		}
		if cmp(&p[b], &p[c]) > 0 {
			return b
		}
		if cmp(&p[a], &p[c]) < 0 {
			return a
		}
		return c
	}
	swap := func(a, b int) { p[a], p[b] = p[b], p[a] }
	vecswap := func(a, b, n int) {
		for k := 0; k < n; k++ {
			swap(a+k, b+k)
		}
	}
	// sorts p[base:base+n]
	var qs func(base, n int)
	qs = func(base, n int) {
		for {
			if n < 7 {
				for m := base + 1; m < base+n; m++ {
					for l := m; l > base && cmp(&p[l-1], &p[l]) > 0; l-- {
						swap(l, l-1)
					}
				}
				return
			}
			m := base + n/2
			if n > 7 {
				l, r := base, base+n-1
				if n > 40 {
					d := n / 8
					l = med3(l, l+d, l+2*d)
					m = med3(m-d, m, m+d)
					r = med3(r-2*d, r-d, r)
				}
				m = med3(l, m, r)
			}
			swap(base, m)
			a, b := base+1, base+1
			c, d := base+n-1, base+n-1
			for {
				for b <= c {
					r := cmp(&p[b], &p[base])
					if r > 0 {
						break
					}
					if r == 0 {
						swap(a, b)
						a++
					}
					b++
				}
				for b <= c {
					r := cmp(&p[c], &p[base])
					if r < 0 {
						break
					}
					if r == 0 {
						swap(c, d)
						d--
					}
					c--
				}
				if b > c {
					break
				}
				swap(b, c)
				b++
				c--
			}
			end := base + n
			r := min(a-base, b-a)
			vecswap(base, b-r, r)
			r = min(d-c, end-d-1)
			vecswap(b, end-r, r)
			overlaps := func(s, k int) bool { return !(hi < s || lo >= s+k) }
			if r := b - a; r > 1 && overlaps(base, r) {
				qs(base, r)
			}
			r = d - c
			if r <= 1 {
				return
			}
			base, n = end-r, r
			if !overlaps(base, n) {
				return
			}
		}
	}
	qs(0, len(p))
}

// writeGeoResults writes a search's reply to the client: each member, or
// with WITHDIST, WITHHASH, WITHCOORD an array of the member and those, in
// that order.
func writeGeoResults(w Writer, q *geoQuery, pts []geoPoint) {
	extra := 0
	for _, on := range []bool{q.withDist, q.withHash, q.withCoord} {
		if on {
			extra++
		}
	}
	w.Array(len(pts))
	for _, p := range pts {
		if extra > 0 {
			w.Array(extra + 1)
		}
		w.Bulk(p.member)
		if q.withDist {
			w.BulkString(formatGeoDistance(p.dist))
		}
		if q.withHash {
			w.Int(int64(p.score))
		}
		if q.withCoord {
			w.Array(2)
			w.HumanDouble(p.lon)
			w.HumanDouble(p.lat)
		}
	}
}

// geoStoreScore is the score a stored result gets: its distance for
// STOREDIST, else its geohash score.
func geoStoreScore(q *geoQuery, p *geoPoint) float64 {
	if q.storeDist {
		return p.dist
	}
	return p.score
}

// ---- handlers ------------------------------------------------------------------

func registerGeo(t *Table) {
	t.Register([]Row{
		{Name: "geoadd", Run: cmdGeoadd},
		{Name: "geopos", Run: cmdGeopos},
		{Name: "geodist", Run: cmdGeodist},
		{Name: "geohash", Run: cmdGeohash},
		{Name: "georadius", Run: cmdGeoSearch},
		{Name: "georadius_ro", Run: cmdGeoSearch},
		{Name: "georadiusbymember", Run: cmdGeoSearch},
		{Name: "georadiusbymember_ro", Run: cmdGeoSearch},
		{Name: "geosearch", Run: cmdGeoSearch},
		{Name: "geosearchstore", Run: cmdGeoSearch},
	})
}

func cmdGeoadd(c *Ctx) {
	a, msg := parseGeoAdd(c.Args)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	zaddApply(c, c.Args[1], model.ZAddFlags{NX: a.nx, XX: a.xx, CH: a.ch}, a.members, a.scores)
}

// geoScoresOf looks members up in key's sorted set (absent: not ok).
func geoScoresOf(c *Ctx, key []byte, members [][]byte) ([]geoScore, error) {
	scores, present, err := model.ZScores(c, key, members)
	if err != nil {
		return nil, err
	}
	out := make([]geoScore, len(members))
	for i := range members {
		out[i] = geoScore{score: scores[i], ok: present[i]}
	}
	return out, nil
}

func cmdGeopos(c *Ctx) {
	scores, err := geoScoresOf(c, c.Args[1], c.Args[2:])
	if err != nil {
		c.Fail(err)
		return
	}
	writeGeoPos(c.W, scores)
}

func cmdGeohash(c *Ctx) {
	scores, err := geoScoresOf(c, c.Args[1], c.Args[2:])
	if err != nil {
		c.Fail(err)
		return
	}
	writeGeoHash(c.W, scores)
}

func cmdGeodist(c *Ctx) {
	toMeters, msg := parseGeoDist(c.Args)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	scores, err := geoScoresOf(c, c.Args[1], c.Args[2:4])
	if err != nil {
		c.Fail(err)
		return
	}
	writeGeoDist(c.W, scores[0], scores[1], toMeters)
}

// zsetGeoSource is a sorted set as a geoSource: a score range is a range
// of its order.
type zsetGeoSource struct{ v model.ZView }

func (s zsetGeoSource) scoreRange(min, max float64, fn func(member []byte, score float64) error) error {
	err := s.v.Range(min, max, fn)
	if errors.Is(err, errStopScan) {
		return nil
	}
	return err
}

// geoQueryOn parses the command against the sorted set v as read and runs
// its search (no results when the key does not exist).
func geoQueryOn(c *Ctx, v model.ZView, flags geoFlags) (geoQuery, []geoPoint, error) {
	var lookup geoMemberScore
	if v.Exists() {
		lookup = v.Score
	}
	q, err := parseGeoQuery(c.Args, flags, lookup)
	if err != nil || !v.Exists() {
		return q, nil, err
	}
	pts, err := geoSearch(&q, zsetGeoSource{v})
	return q, pts, err
}

// cmdGeoSearch runs GEOSEARCH, GEOSEARCHSTORE, GEORADIUS,
// GEORADIUSBYMEMBER and the _RO forms. A search that stores replaces its
// destination in one transaction that checks the source unchanged.
func cmdGeoSearch(c *Ctx) {
	flags := geoSearchFlags[strings.ToLower(string(c.Args[0]))]
	src := c.Args[1]
	if flags&geoSearchStore != 0 {
		src = c.Args[2]
	}
	// The destination, if any, whatever else the arguments hold: the
	// search proper checks them in Redis's order, the key read first.
	pre, _ := parseGeoQuery(c.Args, flags, nil)
	if pre.store == nil {
		var q geoQuery
		var pts []geoPoint
		err := model.ZRead(c, src, func(v model.ZView) (err error) {
			q, pts, err = geoQueryOn(c, v, flags)
			return err
		})
		if err != nil {
			c.Fail(err)
			return
		}
		writeGeoResults(c.W, &q, pts)
		return
	}
	params := c.Srv.encoding().params
	n, err := model.ZStoreFrom(c, pre.store, src, params.zsetEntries, params.zsetValue, func(v model.ZView) ([]model.Entry, error) {
		q, pts, err := geoQueryOn(c, v, flags)
		if err != nil {
			return nil, err
		}
		out := make([]model.Entry, len(pts))
		for i := range pts {
			out[i] = model.Entry{Member: pts[i].member, Score: geoStoreScore(&q, &pts[i])}
		}
		return out, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	// Unlike the sorted set STORE commands, Redis reports before it
	// replies.
	if n > 0 {
		event := "georadiusstore"
		if flags&(geoSearchCmd|geoSearchStore) != 0 {
			event = "geosearchstore"
		}
		c.Notify(events.ZSet, event, pre.store)
	} else {
		c.notifyEmptied(pre.store)
	}
	c.W.Int(n)
}
