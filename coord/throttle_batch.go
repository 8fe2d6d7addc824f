package coord

import (
	"strconv"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Coalescing CL.THROTTLE on a hot key (model.Coalescer): the calls on one
// key that arrive while a call's request is in flight are decided in
// order, at one clock reading taken after the batch closed, from one read
// of the key, and applied by one write conditioned on the item as read
// (planGuard's). Each is answered what it would have been answered had
// the batch's calls run one after another at that instant. A call on its
// own keeps its single-request forms (throttle).

// throttleOp is one call of a batch.
type throttleOp struct {
	q   GCRAQuota
	clk ThrottleClock
}

// throttleCoalesced is throttle through the process's lane for key.
func (s *Service) throttleCoalesced(c model.Scope, key []byte, q GCRAQuota, clk ThrottleClock) (gcraResult, error) {
	if !model.Coalescable(c) || model.UnitTxn(c) != nil || !model.KeyFits(key) {
		return s.throttle(c, key, q, clk)
	}
	lane := strconv.Itoa(c.DB()) + ":" + string(key)
	return s.throttles.Do(c, lane, throttleOp{q, clk}, func(ops []throttleOp) ([]gcraResult, []error) {
		if len(ops) == 1 {
			r, err := s.throttle(c, key, q, clk)
			return []gcraResult{r}, []error{err}
		}
		return s.throttleBatch(model.Detached(c), key, ops)
	})
}

// throttleBatch decides ops in order from one read of key and applies the
// outcome with one conditioned write, read again on a conflict.
func (s *Service) throttleBatch(c model.Scope, key []byte, ops []throttleOp) ([]gcraResult, []error) {
	k := model.ItemKey(c.DB(), key)
	st := c.Data()
	slot, tag := s.tats.slot(c.DB(), key)
	clk := ops[0].clk
	res := make([]gcraResult, len(ops))
	errs := make([]error, len(ops))
	var snap dynastore.Item
	known := false
	err := model.RetryConflicts(c, func(int) error {
		if !known {
			var err error
			if snap, err = st.Get(c, k); err != nil {
				return err
			}
			known = true
		}
		// After the read and after every call of the batch was made.
		clk.Again()
		now := clk.Now()
		cur, wrote := snap, false
		var last gcraResult
		var lastTAT storedTAT
		for i, op := range ops {
			r, tat, err := decideOn(cur, op.q, now)
			res[i], errs[i] = r, err
			lastTAT = tat
			if err != nil || r.limited {
				continue
			}
			cur, wrote, last = tatItem(c.DB(), key, r), true, r
			lastTAT = storedTAT{r.tat, true}
			if r.expiry() == expireNeverAndFail {
				errs[i] = ErrTATExpire
			}
		}
		if !wrote {
			slot.remember(tag, lastTAT)
			return nil
		}
		_, err := st.Put(c, tatItem(c.DB(), key, last), dynastore.WriteOptions{
			Cond:         model.KeyState{Raw: snap}.Guard(),
			OldOnFailure: true,
			Handover:     true,
		})
		if err == nil {
			slot.remember(tag, lastTAT)
			return nil
		}
		now2, failed := model.CondFailed(err)
		if !failed {
			return err
		}
		snap = now2
		return model.ErrConflict
	})
	if err != nil {
		for i := range errs {
			res[i], errs[i] = gcraResult{}, err
		}
	}
	return res, errs
}
