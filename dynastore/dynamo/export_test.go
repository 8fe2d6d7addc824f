package dynamo

import "time"

// ClockCalibrated is closed once the store's first calibration of the
// clock is over (at once without Config.ClockProbes).
func (s *Store) ClockCalibrated() <-chan struct{} { return s.calibrated }

// ClockBounds returns the interval the clock's offset is known to lie in.
func (s *Store) ClockBounds() (lo, hi time.Duration) {
	b := s.clock.bounds()
	return b.lo, b.hi
}
