// Package faithful is the embedded store's AWS-faithful mode: a layer over
// dynastore/memory that answers as DynamoDB does where DynamoDB Local and
// the plain embedded store are kinder than AWS, so that redamo (and its
// multi-instance invariant tests) meet on one machine what they meet on
// a real table:
//
//   - latency per kind of call, drawn from typical ranges with a tail
//     (Latencies), scaled by Options.Scale so tests run faster;
//   - the windows that latency opens: a request is in flight from its
//     arrival to its answer and is applied at one point inside; DynamoDB's
//     transaction conflict rules hold between requests in flight (see
//     flights.enter): a single write to an item of an in-flight
//     transaction fails with TransactionConflictException, overlapping
//     transactions and a transaction meeting a single write are canceled
//     with TransactionConflict reasons, a TransactGetItems is canceled by
//     any write on its items while it is in flight;
//   - capacity (Capacity): one budget per partition key of 3,000 read or
//     1,000 write units per second as a linear combination, the table's
//     on-demand ceiling and its growth to twice the previous peak after
//     30 minutes; units from item sizes (1 KB a write unit, 4 KB a strongly
//     consistent read unit) and doubled for transactions, as the memory
//     store accounts them. A request over budget is throttled at once, as
//     ProvisionedThroughputExceededException or, in a transaction,
//     ThrottlingError cancellation reasons;
//   - faults (Faults): 500 after the request was applied, 503 before,
//     timeouts after, connection resets before and after. They are drawn
//     here rather than through dynastore/faults, whose rules are per
//     operation and before or after the whole call: a simulated attempt
//     needs one draw among five kinds, inside its window, and must know
//     whether the memory store applied what it asked.
//
// Every call goes through the DynamoDB backend's retry policy
// (dynastore/retry, with the backend's defaults): each simulated attempt's
// error says whether it was applied, so a single write whose outcome is
// unknown is not repeated and a transaction is (its client token makes it
// idempotent: a transaction applied by an attempt whose answer was lost
// is not applied again). Randomness comes from one seeded source.
//
// Where each figure comes from (Amazon DynamoDB Developer Guide, under
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/):
//
//   - 3,000 RCU / 1,000 WCU per partition: bp-partition-key-design.html and
//     warm-throughput-scenarios.html ("each individual partition is limited
//     to 1,000 write units per second and 3,000 read units per second");
//     one budget for both, as a partition's throughput is shared;
//   - units: HowItWorks.ReadWriteCapacityMode.html and
//     on-demand-capacity-mode.html (a read unit is one strongly consistent
//     read of up to 4 KB, a write unit one write of up to 1 KB);
//   - transactions at twice the units: transaction-apis.html, "Capacity
//     management for transactions" (two underlying reads or writes of
//     every item);
//   - a new on-demand table's 4,000 writes and 12,000 reads per second, and
//     throttling above twice the previous peak within 30 minutes:
//     on-demand-capacity-mode.html, "Initial throughput and scaling
//     properties", and pre-warming-on-demand-capacity-mode.html;
//   - the conflict rules and their exceptions: transaction-apis.html,
//     "Transaction conflict handling in DynamoDB", and the API reference's
//     TransactWriteItems and TransactGetItems (TransactionCanceledException
//     reasons TransactionConflict and ThrottlingError);
//   - throttling and 5xx errors retried by the client:
//     Programming.Errors.html;
//   - latencies: typical figures, not documented limits ("single-digit
//     millisecond" for item reads and writes; transactions several times
//     that), hence a setting.
//
// It is a layer over the memory store rather than options of it: it owns
// its memory store and reads, through that store's Observer, the units
// each request consumed, and the memory store stays as fast as it is.
package faithful

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/dynastore/retry"
)

// Options configure a Store. The zero value is AWS's figures without
// faults.
type Options struct {
	// Observer receives one dynastore.Request per call, after its retries
	// (nil: none).
	Observer dynastore.Observer
	// Seed drives latencies and faults.
	Seed uint64
	// Scale compresses the store's time (0: 1, AWS's own); tests use a
	// fraction. Every latency is multiplied by it, and capacity is
	// measured on a clock that runs 1/Scale times as fast (a partition
	// serves 1/Scale times its units per second of wall time, the peak
	// window is Scale times as long), so that clients meet the limits at
	// the same concurrency as on AWS. The retry policy is not scaled: it
	// is the DynamoDB backend's own.
	Scale float64
	// Latencies, Capacity and Policy default to DefaultLatencies,
	// DefaultCapacity and DefaultPolicy.
	Latencies *Latencies
	Capacity  *Capacity
	Policy    *retry.Policy
	// Faults are off unless set (DefaultFaults: rare, as on AWS).
	Faults Faults
}

// Store is the AWS-faithful dynastore.Store. It is safe for concurrent use.
type Store struct {
	mem    *memory.Store
	obs    dynastore.Observer
	lat    Latencies
	scale  float64
	policy retry.Policy

	// rngMu guards rng and faults.
	rngMu  sync.Mutex
	rng    *rand.Rand
	faults Faults

	flights flights
	budget  *budget
	// now is the clock of capacity, time compressed by Scale (tests
	// freeze it).
	now func() time.Time
	// held, when set, runs while a request of kind is in flight, after it
	// applied: tests make requests meet there.
	held func(kind flightKind)
}

var (
	_ dynastore.Store          = (*Store)(nil)
	_ dynastore.SnapshotReader = (*Store)(nil)
	_ dynastore.Clocked        = (*Store)(nil)
)

// New returns an empty faithful store.
func New(o Options) *Store {
	s := &Store{
		obs:    o.Observer,
		lat:    DefaultLatencies,
		scale:  o.Scale,
		faults: o.Faults,
		policy: DefaultPolicy,
		rng:    rand.New(rand.NewPCG(o.Seed, o.Seed^0x5851f42d4c957f2d)),
	}
	if s.scale <= 0 {
		s.scale = 1
	}
	s.now = compressed(time.Now, s.scale)
	if o.Latencies != nil {
		s.lat = *o.Latencies
	}
	if o.Policy != nil {
		s.policy = *o.Policy
	}
	if s.policy.Quota == nil {
		s.policy.Quota = retry.NewQuota(retry.QuotaTokens)
	}
	c := DefaultCapacity
	if o.Capacity != nil {
		c = *o.Capacity
	}
	s.budget = newBudget(c, s.now())
	s.mem = memory.New(memory.Options{Observer: meter{}})
	return s
}

// compressed is a clock that runs 1/scale times as fast as wall.
func compressed(wall func() time.Time, scale float64) func() time.Time {
	start := wall()
	return func() time.Time {
		return start.Add(time.Duration(float64(wall().Sub(start)) / scale))
	}
}

// Memory returns the memory store under the layer: what tests read to
// check a state without latency or faults.
func (s *Store) Memory() *memory.Store { return s.mem }

// ---- the meter: what the memory store consumed ------------------------------

// units is what one attempt's requests to the memory store consumed and
// how the last one ended.
type units struct {
	rcu, wcu float64
	ran      bool
	err      error
}

type unitsKey struct{}

// meter is the memory store's Observer: it adds each request's units to
// the attempt that made it.
type meter struct{}

func (meter) Observe(ctx context.Context, r dynastore.Request) {
	if u, ok := ctx.Value(unitsKey{}).(*units); ok {
		u.rcu += r.RCU
		u.wcu += r.WCU
		u.ran, u.err = true, r.Err
	}
}

func (meter) IgnoresDuration() bool { return true }

// ---- draws -------------------------------------------------------------------

// window draws a call's latency and the point inside it where it applies.
func (s *Store) window(sp Span) (d, at time.Duration) {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	d = sp.Min
	if sp.Max > sp.Min {
		d += time.Duration(s.rng.Int64N(int64(sp.Max - sp.Min)))
	}
	if s.lat.TailRate > 0 && s.rng.Float64() < s.lat.TailRate {
		d = time.Duration(float64(d) * s.lat.TailFactor)
	}
	d = time.Duration(float64(d) * s.scale)
	return d, time.Duration(float64(d) * (0.2 + 0.6*s.rng.Float64()))
}

// fault kinds, each an attempt's outcome as the retry policy must read it.
var (
	errInternal    = errors.New("InternalServerError (HTTP 500)")
	errUnavailable = errors.New("ServiceUnavailable (HTTP 503)")
	errTimeout     = errors.New("request timed out")
	errResetBefore = errors.New("connection reset before the request was sent")
	errResetAfter  = errors.New("connection reset by peer")
)

// SetFaults replaces the fault rates from the next attempt on: a test
// sets up its data without faults, then turns them on.
func (s *Store) SetFaults(f Faults) {
	s.rngMu.Lock()
	s.faults = f
	s.rngMu.Unlock()
}

// drawFault picks this attempt's fault: one before the request applies
// (before true), one after, or none.
func (s *Store) drawFault() (err error, before bool) {
	s.rngMu.Lock()
	f := s.faults
	if f == (Faults{}) {
		s.rngMu.Unlock()
		return nil, false
	}
	x := s.rng.Float64()
	s.rngMu.Unlock()
	for _, c := range []struct {
		p      float64
		err    error
		before bool
	}{
		{f.Unavailable, errUnavailable, true},
		{f.ResetBefore, errResetBefore, true},
		{f.InternalError, errInternal, false},
		{f.Timeout, errTimeout, false},
		{f.ResetAfter, errResetAfter, false},
	} {
		if x < c.p {
			return c.err, c.before
		}
		x -= c.p
	}
	return nil, false
}

// ---- one call ----------------------------------------------------------------

// call runs one logical request through the retry policy and reports it
// to the Observer once. attempt makes one simulated attempt, adding what
// it consumed to u.
func (s *Store) call(ctx context.Context, op string, m retry.Mode, attempt func(actx context.Context, u *units) error) error {
	start := time.Now()
	var u units
	n, err := s.policy.Run(ctx, op, m, func(actx context.Context) error {
		return attempt(actx, &u)
	})
	if s.obs != nil {
		s.obs.Observe(ctx, dynastore.Request{
			Label:    dynastore.Label(ctx),
			Op:       op,
			Attempts: n,
			RCU:      u.rcu,
			WCU:      u.wcu,
			Duration: time.Since(start),
			Err:      err,
		})
	}
	return err
}

// request is what an attempt asks of the memory store, in its window.
type request struct {
	span  Span
	write bool
	tx    bool // TransactWriteItems or TransactGetItems
	kind  flightKind
	keys  []dynastore.Key // items, for conflicts (nil: none)
	pks   []string        // partitions, for capacity (nil: the table only)
	// applied, when set, answers instead of the memory store: a
	// transaction whose token already applied.
	applied *bool
}

// attempt is one simulated attempt: admission, conflicts, the window,
// the memory store's request at one point of it, and a fault. apply is
// the request to the memory store.
func (s *Store) attempt(actx context.Context, u *units, r request, apply func(ctx context.Context) error) error {
	d, at := s.window(r.span)
	minUnits := 1.0
	if r.tx {
		minUnits = dynastore.TxCapacityFactor
	}
	if parts, table := s.budget.admit(r.pks, r.write, minUnits, s.now()); parts != nil || table {
		_ = sleep(actx, d)
		return throttled(r, parts, table)
	}
	var fl *flight
	if r.kind != 0 {
		var conflicts []bool
		fl, conflicts = s.flights.enter(r.kind, r.keys)
		if fl == nil {
			_ = sleep(actx, d)
			return conflict(r, func(i int) bool { return conflicts[i] })
		}
	}
	fault, before := s.drawFault()
	err := s.inWindow(actx, u, d, at, fault, before, r, apply)
	if s.held != nil {
		s.held(r.kind)
	}
	if fl != nil {
		if doomed, where := s.flights.leave(fl); doomed && r.kind == flightTxGet && err == nil {
			return conflict(r, func(i int) bool { return where[i] })
		}
	}
	return err
}

func (s *Store) inWindow(actx context.Context, u *units, d, at time.Duration, fault error, before bool, r request, apply func(ctx context.Context) error) error {
	if err := sleep(actx, at); err != nil {
		return failure(err, retry.Unknown, dynastore.ErrUnavailable)
	}
	if fault != nil && before {
		_ = sleep(actx, d-at)
		return failure(fault, retry.Unapplied, dynastore.ErrUnavailable)
	}
	var err error
	if r.applied != nil && *r.applied {
		err = nil
	} else {
		mu := &units{}
		err = apply(context.WithValue(actx, unitsKey{}, mu))
		u.rcu += mu.rcu
		u.wcu += mu.wcu
		s.budget.charge(r.pks, mu.rcu, mu.wcu, s.now())
		if r.applied != nil && mu.ran && mu.err == nil {
			*r.applied = true
		}
	}
	switch fault {
	case nil:
	case errTimeout:
		<-actx.Done()
		return failure(fault, retry.Unknown, dynastore.ErrUnavailable)
	default:
		_ = sleep(actx, d-at)
		return failure(fault, retry.Unknown, dynastore.ErrUnavailable)
	}
	if serr := sleep(actx, d-at); serr != nil && err == nil {
		// Applied, but the answer came after the attempt's time.
		return failure(serr, retry.Unknown, dynastore.ErrUnavailable)
	}
	return err
}

// throttled is an attempt refused for capacity: for a transaction a
// cancellation with ThrottlingError reasons at the items over budget (all
// of them when the table is), else ProvisionedThroughputExceededException.
func throttled(r request, parts []bool, table bool) error {
	if r.tx {
		rs := make([]dynastore.TxReason, len(r.keys))
		for i := range rs {
			rs[i].Code = dynastore.ReasonNone
			if table || parts[i] {
				rs[i].Code = dynastore.ReasonThrottled
			}
		}
		return failure(&dynastore.TxCanceledError{Reasons: rs}, retry.Unapplied, dynastore.ErrThrottled)
	}
	what := "ProvisionedThroughputExceededException: the partition's throughput was exceeded"
	if table {
		what = "ThrottlingException: the table's on-demand throughput was exceeded"
	}
	return failure(errors.New(what), retry.Unapplied, dynastore.ErrThrottled)
}

// conflict is an attempt refused by a request in flight: a cancellation
// with TransactionConflict reasons for a transaction, else
// TransactionConflictException.
func conflict(r request, at func(i int) bool) error {
	if r.tx {
		return failure(conflictReasons(len(r.keys), at), retry.Unapplied, dynastore.ErrTxConflict)
	}
	return failure(fmt.Errorf("TransactionConflictException: the item is being written by a transaction: %w", dynastore.ErrTxConflict),
		retry.Unapplied, dynastore.ErrTxConflict)
}

// final marks a memory store's answer as the request's (a condition
// failure, a validation error): not retried.
func final(err error) error {
	if err == nil {
		return nil
	}
	var f *retry.Failure
	if errors.As(err, &f) {
		return err
	}
	return failure(err, retry.Final, nil)
}

// ---- dynastore.Store ---------------------------------------------------------

func (s *Store) write(ctx context.Context, op string, k dynastore.Key, apply func(ctx context.Context) error) error {
	return s.call(ctx, op, retry.Once, func(actx context.Context, u *units) error {
		return final(s.attempt(actx, u, request{
			span: s.lat.Write, write: true, kind: flightWrite,
			keys: []dynastore.Key{k}, pks: []string{string(k.PK)},
		}, apply))
	})
}

// Get implements dynastore.Store.
func (s *Store) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	var it dynastore.Item
	err := s.call(ctx, dynastore.OpGetItem, retry.Idempotent, func(actx context.Context, u *units) error {
		return final(s.attempt(actx, u, request{span: s.lat.Get, pks: []string{string(k.PK)}}, func(ctx context.Context) (err error) {
			it, err = s.mem.Get(ctx, k)
			return err
		}))
	})
	if err != nil {
		return nil, err
	}
	return it, nil
}

// BatchGet implements dynastore.Store: MaxBatchGet keys per request, as
// BatchGetItem takes them. Keys whose partition is over budget are left
// unprocessed and asked again after the policy's backoff, as the DynamoDB
// backend does with UnprocessedKeys.
func (s *Store) BatchGet(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	out := make([]dynastore.Item, len(keys))
	for lo := 0; lo < len(keys); lo += dynastore.MaxBatchGet {
		hi := min(lo+dynastore.MaxBatchGet, len(keys))
		if err := s.batchGet(ctx, keys[lo:hi], out[lo:hi]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) batchGet(ctx context.Context, keys []dynastore.Key, out []dynastore.Item) error {
	pending := make([]int, len(keys))
	for i := range pending {
		pending[i] = i
	}
	return s.call(ctx, dynastore.OpBatchGetItem, retry.Idempotent, func(actx context.Context, u *units) error {
		pks := make([]string, len(pending))
		for j, i := range pending {
			pks[j] = string(keys[i].PK)
		}
		parts, table := s.budget.admit(pks, false, 1, s.now())
		var ask, left []int
		for j, i := range pending {
			if table || (parts != nil && parts[j]) {
				left = append(left, i)
			} else {
				ask = append(ask, i)
			}
		}
		r := request{span: s.lat.BatchGet}
		if len(ask) == 0 {
			d, _ := s.window(r.span)
			_ = sleep(actx, d)
			return throttled(r, nil, table)
		}
		sub := make([]dynastore.Key, len(ask))
		r.pks = make([]string, len(ask))
		for j, i := range ask {
			sub[j] = keys[i]
			r.pks[j] = string(keys[i].PK)
		}
		err := s.attempt(actx, u, r, func(ctx context.Context) error {
			items, err := s.mem.BatchGet(ctx, sub)
			for j, i := range ask {
				if err == nil {
					out[i] = items[j]
				}
			}
			return err
		})
		if err != nil {
			return final(err)
		}
		pending = left
		if len(left) > 0 {
			return failure(errors.New("unprocessed keys: partitions over budget"), retry.Unapplied, dynastore.ErrThrottled)
		}
		return nil
	})
}

// BatchWrite implements dynastore.BatchWriter: MaxBatchWrite writes per
// request, as BatchWriteItem takes them. Writes whose partition is over
// budget are left unprocessed and sent again after the policy's backoff,
// as the DynamoDB backend does with UnprocessedItems; a request that meets
// a transaction in flight on one of its items fails as a single write
// does.
func (s *Store) BatchWrite(ctx context.Context, puts []dynastore.Item, deletes []dynastore.Key) error {
	chunks, err := dynastore.BatchWrites(puts, deletes)
	if err != nil {
		return err
	}
	for _, ops := range chunks {
		if err := s.batchWrite(ctx, ops); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) batchWrite(ctx context.Context, ops []dynastore.BatchOp) error {
	keyOf := func(op dynastore.BatchOp) dynastore.Key {
		if op.Item != nil {
			return op.Item.Key()
		}
		return op.Key
	}
	pending := ops
	return s.call(ctx, dynastore.OpBatchWriteItem, retry.Idempotent, func(actx context.Context, u *units) error {
		pks := make([]string, len(pending))
		for j, op := range pending {
			pks[j] = string(keyOf(op).PK)
		}
		parts, table := s.budget.admit(pks, true, 1, s.now())
		var send, left []dynastore.BatchOp
		for j, op := range pending {
			if table || (parts != nil && parts[j]) {
				left = append(left, op)
			} else {
				send = append(send, op)
			}
		}
		r := request{span: s.lat.Write, write: true, kind: flightWrite}
		if len(send) == 0 {
			d, _ := s.window(r.span)
			_ = sleep(actx, d)
			return throttled(r, nil, table)
		}
		var puts []dynastore.Item
		var dels []dynastore.Key
		for _, op := range send {
			k := keyOf(op)
			r.keys = append(r.keys, k)
			r.pks = append(r.pks, string(k.PK))
			if op.Item != nil {
				puts = append(puts, op.Item)
			} else {
				dels = append(dels, op.Key)
			}
		}
		if err := s.attempt(actx, u, r, func(ctx context.Context) error {
			return s.mem.BatchWrite(ctx, puts, dels)
		}); err != nil {
			return final(err)
		}
		pending = left
		if len(left) > 0 {
			return failure(errors.New("unprocessed items: partitions over budget"), retry.Unapplied, dynastore.ErrThrottled)
		}
		return nil
	})
}

// Put implements dynastore.Store.
func (s *Store) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.write(ctx, dynastore.OpPutItem, it.Key(), func(ctx context.Context) (err error) {
		out, err = s.mem.Put(ctx, it, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Update implements dynastore.Store.
func (s *Store) Update(ctx context.Context, k dynastore.Key, upd dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.write(ctx, dynastore.OpUpdateItem, k, func(ctx context.Context) (err error) {
		out, err = s.mem.Update(ctx, k, upd, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete implements dynastore.Store.
func (s *Store) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.write(ctx, dynastore.OpDeleteItem, k, func(ctx context.Context) (err error) {
		out, err = s.mem.Delete(ctx, k, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Transact implements dynastore.Store (TransactWriteItems, with a client
// token: an attempt after one that applied answers success without
// applying again).
func (s *Store) Transact(ctx context.Context, actions []dynastore.TxAction) error {
	keys := make([]dynastore.Key, len(actions))
	pks := make([]string, len(actions))
	for i, a := range actions {
		keys[i] = a.Key
		if a.Op == dynastore.TxPut {
			keys[i] = a.Item.Key()
		}
		pks[i] = string(keys[i].PK)
	}
	applied := false
	return s.call(ctx, dynastore.OpTransactWriteItems, retry.Idempotent, func(actx context.Context, u *units) error {
		return final(s.attempt(actx, u, request{
			span: s.lat.TxWrite, write: true, tx: true, kind: flightTxWrite,
			keys: keys, pks: pks, applied: &applied,
		}, func(ctx context.Context) error {
			return s.mem.Transact(ctx, actions)
		}))
	})
}

// GetSnapshot implements dynastore.SnapshotReader (TransactGetItems).
func (s *Store) GetSnapshot(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	pks := make([]string, len(keys))
	for i, k := range keys {
		pks[i] = string(k.PK)
	}
	var items []dynastore.Item
	err := s.call(ctx, dynastore.OpTransactGetItems, retry.Idempotent, func(actx context.Context, u *units) error {
		return final(s.attempt(actx, u, request{
			span: s.lat.TxGet, tx: true, kind: flightTxGet, keys: keys, pks: pks,
		}, func(ctx context.Context) (err error) {
			items, err = s.mem.GetSnapshot(ctx, keys)
			return err
		}))
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// Query implements dynastore.Store.
func (s *Store) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	var page dynastore.QueryPage
	err := s.call(ctx, dynastore.OpQuery, retry.Idempotent, func(actx context.Context, u *units) error {
		return final(s.attempt(actx, u, request{span: s.lat.Query, pks: []string{string(q.PK)}}, func(ctx context.Context) (err error) {
			page, err = s.mem.Query(ctx, q)
			return err
		}))
	})
	if err != nil {
		return dynastore.QueryPage{}, err
	}
	return page, nil
}

// Scan implements dynastore.Store; a scan is charged to the table only.
func (s *Store) Scan(ctx context.Context, sc dynastore.Scan) (dynastore.ScanPage, error) {
	var page dynastore.ScanPage
	err := s.call(ctx, dynastore.OpScan, retry.Idempotent, func(actx context.Context, u *units) error {
		return final(s.attempt(actx, u, request{span: s.lat.Scan}, func(ctx context.Context) (err error) {
			page, err = s.mem.Scan(ctx, sc)
			return err
		}))
	})
	if err != nil {
		return dynastore.ScanPage{}, err
	}
	return page, nil
}

// ClockOffset implements dynastore.Clocked: the store's clock is this
// process's.
func (s *Store) ClockOffset() (offset, uncertainty time.Duration, ok bool) {
	return s.mem.ClockOffset()
}

// ClockSamples implements dynastore.Clocked.
func (s *Store) ClockSamples() int { return s.mem.ClockSamples() }
