package commands

import (
	"time"

	"github.com/redamo/redamo/model"
)

// The server's clock is the store's: expiry is decided by comparing
// deadlines with "now", and every instance on one table must agree on it.
// A store that measures how far the local clock is from its own
// (model.Clocked: DynamoDB, from the Date of its responses) has its
// offset added to every reading; the embedded store's clock is the local
// one. Instances then differ by at most the sum of their uncertainties.

// unmeasuredClock is the uncertainty claimed while the store has measured
// nothing yet (or does not say): a conservative bound, not a measurement.
const unmeasuredClock = time.Second

// Now reads the server's clock: the local clock corrected by the store's
// offset, or Clock in tests.
func (s *Server) Now() time.Time {
	now, _ := s.readClock()
	return now
}

// readClock returns Now and the local reading it derives from (zero on a
// test clock).
func (s *Server) readClock() (now, local time.Time) {
	if s.Clock != nil {
		return s.Clock(), time.Time{}
	}
	local = time.Now()
	return local.Add(s.clockOffset()), local
}

// clock returns the store as a model.Clocked, nil if it is not one.
func (s *Server) clock() model.Clocked {
	s.clockOnce.Do(func() { s.clocked = s.Store.Clock() })
	return s.clocked
}

// clockOffset is what Now adds to the local clock: the store's time minus
// local time, 0 while it is unknown.
func (s *Server) clockOffset() time.Duration {
	if c := s.clock(); c != nil {
		if off, _, ok := c.ClockOffset(); ok {
			return off
		}
	}
	return 0
}

// ClockUncertainty bounds how far Now may be from the store's clock: 0 on
// a test clock or the embedded store, the store's estimate otherwise, and
// a conservative second while it has none. Two instances' clocks differ by
// at most the sum of theirs.
func (s *Server) ClockUncertainty() time.Duration {
	if s.Clock != nil {
		return 0
	}
	if c := s.clock(); c != nil {
		if _, unc, ok := c.ClockOffset(); ok {
			return unc
		}
	}
	return unmeasuredClock
}

// clockSamples returns how many measurements the store's estimate rests on.
func (s *Server) clockSamples() int {
	if c := s.clock(); c != nil {
		return c.ClockSamples()
	}
	return 0
}
