package dynamo

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/redamo/redamo/dynastore"
)

// DynamoDB's clock is the time reference of every instance on a table
// (dynastore.Clocked). Each instance learns how far its own clock is from
// it, from the Date header of DynamoDB's responses.
//
// A response's Date is the server's clock as it replied, truncated to the
// second (as HTTP servers format it; TestClockAgainstDynamoDBLocal checks
// it on DynamoDB Local). A request sent at local time send whose response
// came back at recv was answered at some local time in [send, recv], when
// the server's clock read somewhere in [Date, Date+1s). So the offset
// (server time minus local time) lies in
//
//	[Date − recv, Date + 1s − send]
//
// and every response narrows the offset to the intersection of such
// intervals. One alone is a second wide plus the round trip; responses
// whose round trips fall at different phases of the server's second cut
// it down towards the round trip.
//
// The offset applied is 0 while the intersection holds it, its middle
// otherwise; the uncertainty is how far the intersection reaches from it
// (the half-width, for the middle). Not always the middle: while the
// interval is still wide (a second, at start) the middle may be half a
// second from a local clock that is right, as NTP usually keeps it, and
// moving such a clock would make instances agree less, not more. A local
// clock every measurement allows to be right is kept; one they prove
// wrong gets the middle, the best bound. (When 0 leaves a narrowing
// interval the offset jumps by half its width, by then small.)
//
// Only recent samples count: those of the last clockWindow, kept in
// buckets of clockSlot (the intersection of each bucket's samples), so
// memory and work are bounded whatever the traffic. The local clock's
// rate may be off from DynamoDB's: an older bucket's interval is widened
// by clockDrift for each slot of its age (the drift within one slot is
// neglected). A sample that disagrees with the recent ones (its interval
// misses their intersection: the local clock was stepped, or slewed
// faster than clockDrift) drops the buckets it disagrees with, oldest
// first, down to all of them: the estimate then starts again from the
// newest sample.
//
// What that bounds: assuming DynamoDB's clocks are right (AWS keeps its
// fleet's clocks synchronized far more tightly than a second), each
// instance's corrected clock is within its uncertainty of DynamoDB's, so
// two instances differ by at most the sum of their uncertainties. Right
// after start, with samples of one phase, that is up to about a second
// each (the Date's resolution: the interval is a second wide and the
// local clock may sit at one end of it); the calibration below brings it
// down to about the round trip within seconds, and normal traffic, whose
// requests fall at every phase, keeps it there. The published estimate is
// as of the newest sample: while no response arrives it is not aged (the
// idle probe sends one a minute).

// Parameters of the clock's estimation.
const (
	// dateResolution is the resolution of a response's Date.
	dateResolution = time.Second
	// clockWindow is how long a sample counts; clockSlot the width of the
	// buckets samples are kept in.
	clockWindow = 10 * time.Minute
	clockSlot   = 10 * time.Second
	clockSlots  = int64(clockWindow / clockSlot)
	// clockDrift is how far the local clock is assumed to drift from
	// DynamoDB's in one clockSlot (50 parts per million).
	clockDrift = clockSlot / 20000
	// clockProbes is how many requests the calibration sends at most:
	// after the first, each about halves the interval, so the last ones
	// take it from a second to about a millisecond (plus the round trip).
	clockProbes = 10
	// clockIdle is how long the store waits without any response before
	// it sends a probe of its own, and the shortest pause between two
	// calibrations.
	clockIdle = time.Minute
)

// ClockLabel is the request label of the requests the store sends to
// measure DynamoDB's clock (Config.ClockProbes).
const ClockLabel = "clock"

// clockProbeKey is the item the probes read: its pk starts with a byte
// none of redamo's namespaces uses, so it never exists and each probe is
// a GetItem of nothing (one read unit).
var clockProbeKey = dynastore.Key{PK: []byte("\x01clock"), SK: []byte{0}}

// clockBounds is an interval of offsets, lo ≤ offset ≤ hi.
type clockBounds struct{ lo, hi time.Duration }

// intersect returns b ∩ o, and false when it is empty.
func (b clockBounds) intersect(o clockBounds) (clockBounds, bool) {
	x := clockBounds{lo: max(b.lo, o.lo), hi: min(b.hi, o.hi)}
	return x, x.lo <= x.hi
}

// clockBucket holds the samples of one clockSlot.
type clockBucket struct {
	idx int64       // the slot: clockSlot periods since the estimator's base
	b   clockBounds // the intersection of its samples' intervals
	n   int         // samples; 0: empty
}

// clockEstimate is what the estimator publishes.
type clockEstimate struct {
	offset, uncertainty time.Duration
}

// clockEstimator turns samples into an estimate of the offset. It is safe
// for concurrent use; reading the estimate takes no lock.
type clockEstimator struct {
	// base is the reading slots are counted from (on the monotonic clock).
	base time.Time
	est  atomic.Pointer[clockEstimate]
	// disagreed is told, without blocking, when a sample dropped older
	// ones: the calibration may run again.
	disagreed chan struct{}

	mu      sync.Mutex
	buckets [clockSlots]clockBucket // by slot modulo clockSlots
	cur     int64                   // the newest slot
	all     clockBounds             // the buckets' intersection (n > 0)
	n       int                     // samples in the buckets
	// date and dateAt are the last Date parsed: most responses of a
	// second carry the same.
	date   string
	dateAt time.Time
	// last is when the newest sample came, rtt its round trip.
	last time.Time
	rtt  time.Duration
}

func newClockEstimator(base time.Time) *clockEstimator {
	return &clockEstimator{base: base, disagreed: make(chan struct{}, 1)}
}

// estimate returns the published estimate; ok false before any sample.
func (e *clockEstimator) estimate() (offset, uncertainty time.Duration, ok bool) {
	p := e.est.Load()
	if p == nil {
		return 0, 0, false
	}
	return p.offset, p.uncertainty, true
}

// bounds returns the interval the offset is known to lie in (zero
// before any sample).
func (e *clockEstimator) bounds() clockBounds {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.all
}

// samples returns how many samples the estimate rests on.
func (e *clockEstimator) samples() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

// lastSample returns when the newest sample came (zero: none yet).
func (e *clockEstimator) lastSample() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}

// add records a response with header Date date to a request sent at send
// whose response arrived at recv (local readings).
func (e *clockEstimator) add(send, recv time.Time, date string) {
	rtt := recv.Sub(send)
	if rtt < 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if date != e.date {
		t, err := http.ParseTime(date)
		if err != nil {
			return
		}
		e.date, e.dateAt = date, t
	}
	// dateAt has no monotonic reading: these are wall-clock differences.
	e.insert(clockBounds{lo: e.dateAt.Sub(recv), hi: e.dateAt.Add(dateResolution).Sub(send)}, recv)
	e.last, e.rtt = recv, rtt
}

// insert adds a sample's interval b, taken at local time at. The caller
// holds mu.
func (e *clockEstimator) insert(b clockBounds, at time.Time) {
	// A sample a concurrent request took a moment before the newest goes
	// with the newest.
	if slot := int64(at.Sub(e.base) / clockSlot); slot > e.cur {
		e.cur = slot
		e.rebuild(clockBounds{}, false) // every bucket aged
	}
	if e.n == 0 {
		e.all = b
	} else if x, ok := e.all.intersect(b); ok {
		e.all = x
	} else if e.rebuild(b, true) {
		select {
		case e.disagreed <- struct{}{}:
		default:
		}
	}
	bk := &e.buckets[bucketOf(e.cur)]
	if bk.n == 0 || bk.idx != e.cur {
		*bk = clockBucket{idx: e.cur, b: b}
	} else {
		// Not empty: all, which agrees with b, lies within the current
		// bucket (it is not widened).
		bk.b, _ = bk.b.intersect(b)
	}
	bk.n++
	e.n++
	e.publish()
}

// rebuild recomputes the intersection of the buckets in the window, newest
// first, each widened by the drift its age allows, starting from b when
// withB is set. A bucket that disagrees with the newer ones (and b) is
// dropped with every older one; buckets out of the window are dropped
// too. It reports whether any bucket was dropped for disagreeing. The
// caller holds mu.
func (e *clockEstimator) rebuild(b clockBounds, withB bool) (dropped bool) {
	acc, have, n := b, withB, 0
	for age := range clockSlots {
		bk := &e.buckets[bucketOf(e.cur-age)]
		if bk.n == 0 {
			continue
		}
		if bk.idx != e.cur-age || dropped {
			*bk = clockBucket{}
			continue
		}
		w := time.Duration(age) * clockDrift
		wb := clockBounds{lo: bk.b.lo - w, hi: bk.b.hi + w}
		if !have {
			acc, have = wb, true
		} else if x, ok := acc.intersect(wb); ok {
			acc = x
		} else {
			dropped = true
			*bk = clockBucket{}
			continue
		}
		n += bk.n
	}
	e.all, e.n = acc, n
	return dropped
}

func bucketOf(slot int64) int64 {
	return (slot%clockSlots + clockSlots) % clockSlots
}

// publish makes the intersection the estimate readers see: 0 if it holds
// it, else its middle, and how far the true offset may be from that. The
// caller holds mu and there is at least one sample.
func (e *clockEstimator) publish() {
	var off time.Duration
	if e.all.lo > 0 || e.all.hi < 0 {
		off = e.all.lo + (e.all.hi-e.all.lo)/2
	}
	unc := max(off-e.all.lo, e.all.hi-off)
	if p := e.est.Load(); p != nil && p.offset == off && p.uncertainty == unc {
		return
	}
	e.est.Store(&clockEstimate{offset: off, uncertainty: unc})
}

// plan says how long to wait, from local time now, before sending a probe
// so that it tells the most: the server's second should turn in the
// middle of its round trip if the offset is the middle of the current
// interval. Then its Date moves one end of the interval to within half a
// round trip of that middle, whichever side the offset is on, so each
// probe about halves the interval, down to about the round trip. done
// says that it is there already. With nothing measured yet, a probe goes
// at once.
func (e *clockEstimator) plan(now time.Time) (wait time.Duration, done bool) {
	e.mu.Lock()
	all, n, rtt := e.all, e.n, e.rtt
	e.mu.Unlock()
	if n == 0 {
		return 0, false
	}
	mid := all.lo + (all.hi-all.lo)/2
	// The server's clock at the middle of a round trip started now, if
	// the offset is mid; wait for the next turn of its second.
	at := now.Add(mid + rtt/2).UnixNano()
	wait = time.Duration((int64(dateResolution) - at%int64(dateResolution)) % int64(dateResolution))
	return wait, (all.hi-all.lo)/2 <= max(rtt, time.Millisecond)
}

// clockClient samples the Date of every response that passes through it.
type clockClient struct {
	next  aws.HTTPClient
	clock *clockEstimator
}

// Do implements aws.HTTPClient.
func (c *clockClient) Do(req *http.Request) (*http.Response, error) {
	send := time.Now()
	resp, err := c.next.Do(req)
	if err == nil {
		if d := resp.Header["Date"]; len(d) > 0 {
			c.clock.add(send, time.Now(), d[0])
		}
	}
	return resp, err
}

// CloseIdleConnections closes the wrapped client's idle connections.
func (c *clockClient) CloseIdleConnections() {
	if ci, ok := c.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// sendsDirect reports whether hc sends through a directClient (behind the
// clock's sampler or not), which lets the direct path lend it a request's
// body (see doDetached).
func sendsDirect(hc aws.HTTPClient) bool {
	for {
		switch c := hc.(type) {
		case *directClient:
			return true
		case *clockClient:
			hc = c.next
		default:
			return false
		}
	}
}

// ---- probes ----------------------------------------------------------------------

// ClockOffset implements dynastore.Clocked: DynamoDB's clock minus the
// local one, as the Date of its responses tell.
func (s *Store) ClockOffset() (offset, uncertainty time.Duration, ok bool) {
	return s.clock.estimate()
}

// ClockSamples implements dynastore.Clocked.
func (s *Store) ClockSamples() int { return s.clock.samples() }

// startClockProbes starts the requests the store sends to measure the
// clock: a calibration now, another when samples disagreed (at most one
// per clockIdle), and a probe when no response came for clockIdle. Close
// stops them.
func (s *Store) startClockProbes() {
	ctx, cancel := context.WithCancel(dynastore.WithLabel(context.Background(), ClockLabel))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.runClockProbes(ctx)
	}()
	s.stopClock = func() {
		cancel()
		<-done
	}
}

func (s *Store) runClockProbes(ctx context.Context) {
	s.calibrateClock(ctx)
	close(s.calibrated)
	last := time.Now()
	pending := false
	tick := time.NewTicker(clockIdle)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.clock.disagreed:
			pending = true
		case <-tick.C:
			if time.Since(s.clock.lastSample()) >= clockIdle {
				if wait, _ := s.clock.plan(time.Now()); sleep(ctx, wait) {
					s.probeClock(ctx)
				}
			}
		}
		if pending && time.Since(last) >= clockIdle {
			s.calibrateClock(ctx)
			last, pending = time.Now(), false
		}
	}
}

// calibrateClock sends up to clockProbes probes, each timed by plan.
func (s *Store) calibrateClock(ctx context.Context) {
	for range clockProbes {
		wait, done := s.clock.plan(time.Now())
		if done || !sleep(ctx, wait) {
			return
		}
		s.probeClock(ctx)
	}
}

// probeClock sends one request for its response's Date.
func (s *Store) probeClock(ctx context.Context) {
	if _, err := s.Get(ctx, clockProbeKey); err != nil && ctx.Err() == nil {
		s.log.Debug("DynamoDB clock probe failed", "err", err)
	}
}

// sleep waits for d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
