package dynamo

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// simServer answers like DynamoDB whose clock is offset from ours: the
// Date of a reply is its clock, truncated to the second, at some moment
// between the request's send and its response's receipt.
type simServer struct {
	offset time.Duration
	rng    *rand.Rand
}

// exchange returns the Date of the reply to a request sent at send whose
// response takes rtt to come back.
func (s simServer) exchange(send time.Time, rtt time.Duration) string {
	at := send.Add(time.Duration(s.rng.Int64N(int64(rtt) + 1))).Add(s.offset)
	return at.UTC().Format(http.TimeFormat)
}

// simBase is the local time simulations start at (no monotonic reading).
var simBase = time.Unix(1_800_000_000, 0)

// requireContains checks that the estimate's interval holds the true offset.
func requireContains(t *testing.T, e *clockEstimator, truth time.Duration) (offset, uncertainty time.Duration) {
	t.Helper()
	off, unc, ok := e.estimate()
	require.True(t, ok)
	require.LessOrEqual(t, off-unc, truth, "estimate %v ± %v", off, unc)
	require.GreaterOrEqual(t, off+unc, truth, "estimate %v ± %v", off, unc)
	return off, unc
}

var clockCases = []struct {
	name        string
	offset, rtt time.Duration
}{
	{"same clock, loopback", 0, 500 * time.Microsecond},
	{"ahead, same region", 1234567 * time.Microsecond, 5 * time.Millisecond},
	{"behind by minutes", -3*time.Minute - 250*time.Millisecond, 20 * time.Millisecond},
	{"behind by less than a second", -400 * time.Millisecond, 80 * time.Millisecond},
	{"slow network", 42 * time.Millisecond, 300 * time.Millisecond},
}

// One sample bounds the offset to a second and a round trip; samples of
// traffic that falls at every phase of the server's second (a minute of
// it) narrow it to about the round trip.
func TestClockConvergesOnTraffic(t *testing.T) {
	for i, tc := range clockCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := simServer{offset: tc.offset, rng: rand.New(rand.NewPCG(uint64(i), 1))}
			e := newClockEstimator(simBase)
			send := simBase
			e.add(send, send.Add(tc.rtt), srv.exchange(send, tc.rtt))
			requireContains(t, e, tc.offset)
			b := e.bounds()
			require.Equal(t, time.Second+tc.rtt, b.hi-b.lo)

			for range 3000 {
				send = send.Add(time.Duration(srv.rng.Int64N(int64(40 * time.Millisecond))))
				rtt := tc.rtt/2 + time.Duration(srv.rng.Int64N(int64(tc.rtt/2)+1))
				e.add(send, send.Add(rtt), srv.exchange(send, rtt))
				requireContains(t, e, tc.offset)
			}
			_, unc := requireContains(t, e, tc.offset)
			// The round trip, and the gaps between the phases of the
			// samples of the last slots (the older ones are widened).
			b = e.bounds()
			require.LessOrEqual(t, (b.hi-b.lo)/2, tc.rtt+time.Millisecond, "interval after 3000 samples: %v", b)
			require.LessOrEqual(t, unc, b.hi-b.lo)
			t.Logf("after 3000 samples: interval %v wide, uncertainty %v", b.hi-b.lo, unc)
			require.Equal(t, 3001, e.samples())
		})
	}
}

// The calibration's probes, each timed by plan, about halve the interval
// each: the first bounds it to a second, the others take it down to about
// the round trip.
func TestClockCalibrationPlan(t *testing.T) {
	for i, tc := range clockCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := simServer{offset: tc.offset, rng: rand.New(rand.NewPCG(uint64(i), 2))}
			e := newClockEstimator(simBase)
			now := simBase
			probes := 0
			for range clockProbes {
				wait, done := e.plan(now)
				if done {
					break
				}
				require.GreaterOrEqual(t, wait, time.Duration(0))
				require.Less(t, wait, time.Second)
				send := now.Add(wait)
				e.add(send, send.Add(tc.rtt), srv.exchange(send, tc.rtt))
				probes++
				requireContains(t, e, tc.offset)
				now = send.Add(tc.rtt)
			}
			_, unc := requireContains(t, e, tc.offset)
			b := e.bounds()
			t.Logf("%d probes: interval %v wide, uncertainty %v", probes, b.hi-b.lo, unc)
			require.LessOrEqual(t, (b.hi-b.lo)/2, tc.rtt+2*time.Millisecond)
		})
	}
}

// A sample that disagrees with every recent one (the local clock was
// stepped) starts the estimate again from it.
func TestClockResetsOnDisagreement(t *testing.T) {
	srv := simServer{offset: 250 * time.Millisecond, rng: rand.New(rand.NewPCG(3, 3))}
	e := newClockEstimator(simBase)
	send := simBase
	for range 200 {
		send = send.Add(37 * time.Millisecond)
		e.add(send, send.Add(time.Millisecond), srv.exchange(send, time.Millisecond))
	}
	requireContains(t, e, srv.offset)
	require.Equal(t, 200, e.samples())
	require.Empty(t, e.disagreed)

	srv.offset -= 3 * time.Second // our clock jumped 3 s ahead
	send = send.Add(37 * time.Millisecond)
	e.add(send, send.Add(time.Millisecond), srv.exchange(send, time.Millisecond))
	requireContains(t, e, srv.offset)
	require.Equal(t, 1, e.samples())
	b := e.bounds()
	require.Equal(t, time.Second+time.Millisecond, b.hi-b.lo)
	require.Len(t, e.disagreed, 1, "the calibration is told")
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// slotAt is a local time in slot n.
func slotAt(n int64) time.Time { return simBase.Add(time.Duration(n)*clockSlot + time.Second) }

func insert(e *clockEstimator, b clockBounds, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.insert(b, at)
}

func requireBounds(t *testing.T, e *clockEstimator, lo, hi time.Duration, samples int) {
	t.Helper()
	require.Equal(t, clockBounds{lo, hi}, e.bounds())
	require.Equal(t, samples, e.samples())
}

// A local clock the measurements allow to be right is not moved; one
// they prove wrong is moved to the middle of the interval.
func TestClockOffsetKeepsARightClock(t *testing.T) {
	for _, tc := range []struct {
		lo, hi, offset, uncertainty time.Duration
	}{
		{ms(-300), ms(700), 0, ms(700)},
		{ms(-1), ms(1), 0, ms(1)},
		{ms(0), ms(0), 0, 0},
		{ms(0), ms(2), 0, ms(2)},
		{ms(100), ms(300), ms(200), ms(100)},
		{ms(-300), ms(-100), ms(-200), ms(100)},
		{ms(0.001), ms(2), ms(1.0005), ms(0.9995)},
	} {
		e := newClockEstimator(simBase)
		insert(e, clockBounds{tc.lo, tc.hi}, slotAt(0))
		off, unc, ok := e.estimate()
		require.True(t, ok)
		require.Equal(t, [2]time.Duration{tc.offset, tc.uncertainty}, [2]time.Duration{off, unc}, "[%v, %v]", tc.lo, tc.hi)
	}
}

// Older samples count with the drift their age allows, and not at all
// once out of the window.
func TestClockWindowAgeing(t *testing.T) {
	e := newClockEstimator(simBase)
	insert(e, clockBounds{ms(-1), ms(1)}, slotAt(0))
	insert(e, clockBounds{ms(-400), ms(600)}, slotAt(1))
	// Slot 0 widened by one slot's drift.
	requireBounds(t, e, ms(-1.5), ms(1.5), 2)
	insert(e, clockBounds{ms(-400), ms(600)}, slotAt(30))
	requireBounds(t, e, ms(-16), ms(16), 3)
	// Slot 0 is out of the window: what is left is slot 1's interval
	// widened by 59 slots' drift, slot 30's by 30 slots', and the new
	// sample.
	insert(e, clockBounds{ms(-500), ms(20)}, slotAt(60))
	requireBounds(t, e, ms(-415), ms(20), 3)
	// Then slot 1 goes too.
	insert(e, clockBounds{ms(-1000), ms(0)}, slotAt(61))
	requireBounds(t, e, ms(-415.5), ms(0), 3)
	// Ten minutes later only the newest counts.
	insert(e, clockBounds{ms(-300), ms(700)}, slotAt(61+clockSlots))
	requireBounds(t, e, ms(-300), ms(700), 1)
}

// A sample that disagrees only with older buckets (the clocks drifted
// apart faster than assumed) drops those and keeps the newer ones.
func TestClockDropsOnlyWhatDisagrees(t *testing.T) {
	e := newClockEstimator(simBase)
	insert(e, clockBounds{ms(-10), ms(10)}, slotAt(0))
	insert(e, clockBounds{ms(-500), ms(500)}, slotAt(5))
	requireBounds(t, e, ms(-12.5), ms(12.5), 2)
	insert(e, clockBounds{ms(100), ms(600)}, slotAt(5))
	requireBounds(t, e, ms(100), ms(500), 2)
	require.Len(t, e.disagreed, 1)
	<-e.disagreed
	// One that disagrees with the newest bucket too starts again.
	insert(e, clockBounds{ms(-2000), ms(-1500)}, slotAt(5))
	requireBounds(t, e, ms(-2000), ms(-1500), 1)
	require.Len(t, e.disagreed, 1)
}

// The client wrapper samples every response with a Date, and only those.
func TestClockClientSamplesDate(t *testing.T) {
	noDate := false
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if noDate {
			w.Header()["Date"] = nil // net/http adds one otherwise
		}
	}))
	defer hs.Close()
	e := newClockEstimator(time.Now())
	c := &clockClient{next: hs.Client(), clock: e}
	get := func() {
		req, err := http.NewRequest(http.MethodGet, hs.URL, nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}
	get()
	off, _, ok := e.estimate()
	require.True(t, ok)
	require.Equal(t, 1, e.samples())
	b := e.bounds()
	require.LessOrEqual(t, b.lo, time.Duration(0), "the server runs on our clock")
	require.GreaterOrEqual(t, b.hi, time.Duration(0), "the server runs on our clock")
	require.Zero(t, off)
	noDate = true
	get()
	require.Equal(t, 1, e.samples())

	require.True(t, sendsDirect(&clockClient{next: newDirectClient(sdkHTTPClient())}))
	require.False(t, sendsDirect(c))
}

// BenchmarkClockSample is the cost the sampler adds to every response:
// most responses of a second carry the Date of the one before.
func BenchmarkClockSample(b *testing.B) {
	e := newClockEstimator(time.Now())
	date := time.Now().UTC().Format(http.TimeFormat)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			send := time.Now()
			e.add(send, time.Now(), date)
		}
	})
}
