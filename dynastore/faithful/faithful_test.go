package faithful

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/retry"
	"github.com/redamo/redamo/dynastore/storetest"
)

// fast is a scale at which a test's thousands of calls take no time.
const fast = 1e-4

// TestConformance: the layer keeps the memory store's semantics. Its
// capacity is unbounded here: the suite writes megabytes to one partition
// at once, which DynamoDB would throttle.
func TestConformance(t *testing.T) {
	unbounded := Capacity{PartitionRCU: 1e12, PartitionWCU: 1e12, TableRRU: 1e12, TableWRU: 1e12, PeakWindow: time.Minute}
	storetest.Run(t, func(t *testing.T) dynastore.Store {
		return New(Options{Observer: storetest.Observer(t), Seed: 1, Scale: fast, Capacity: &unbounded})
	})
}

func key(s string) dynastore.Key { return dynastore.Key{PK: []byte(s), SK: []byte{0}} }

func item(k dynastore.Key, n int) dynastore.Item {
	return dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: "n", Value: dynastore.N(strconv.Itoa(n))},
	}
}

func incr(k dynastore.Key) dynastore.Update {
	return dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}
}

// once is a policy of one attempt: the rules' own answers, unretried.
var once = retry.Policy{MaxAttempts: 1, AttemptTimeout: time.Minute, Budget: time.Minute, Base: time.Millisecond, Cap: time.Millisecond}

// TestConflictRules: a request arriving while another is in flight on
// the same item, for each pair of kinds, answers as DynamoDB's conflict
// rules say, and is applied only when it succeeds.
func TestConflictRules(t *testing.T) {
	ctx := context.Background()
	a, b := key("a"), key("b")
	put := func(s *Store) error {
		_, err := s.Put(ctx, item(a, 7), dynastore.WriteOptions{})
		return err
	}
	tx := func(s *Store) error {
		return s.Transact(ctx, []dynastore.TxAction{
			{Op: dynastore.TxPut, Item: item(b, 7)},
			{Op: dynastore.TxPut, Item: item(a, 7)},
		})
	}
	txGet := func(s *Store) error {
		_, err := s.GetSnapshot(ctx, []dynastore.Key{b, a})
		return err
	}
	// conflictAt is a cancellation with TransactionConflict on the
	// second action (a) only.
	conflictAt := []string{dynastore.ReasonNone, dynastore.ReasonConflict}
	for _, c := range []struct {
		name     string
		inflight flightKind
		call     func(*Store) error
		// wantReasons: canceled with these; wantConflict: a single
		// write's TransactionConflictException; neither: success.
		wantReasons  []string
		wantConflict bool
		writes       bool
		doomed       bool // the TransactGetItems in flight is canceled
	}{
		{name: "put during a transaction", inflight: flightTxWrite, call: put, wantConflict: true, writes: true},
		{name: "put during a put", inflight: flightWrite, call: put, writes: true},
		{name: "put during a transactional read", inflight: flightTxGet, call: put, writes: true, doomed: true},
		{name: "transaction during a transaction", inflight: flightTxWrite, call: tx, wantReasons: conflictAt, writes: true},
		{name: "transaction during a put", inflight: flightWrite, call: tx, wantReasons: conflictAt, writes: true},
		{name: "transaction during a transactional read", inflight: flightTxGet, call: tx, writes: true, doomed: true},
		{name: "transactional read during a transaction", inflight: flightTxWrite, call: txGet, wantReasons: conflictAt},
		{name: "transactional read during a put", inflight: flightWrite, call: txGet, wantReasons: conflictAt},
		{name: "transactional read during a transactional read", inflight: flightTxGet, call: txGet},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(Options{Seed: 1, Scale: fast, Policy: &once})
			f, conflicted := s.flights.enter(c.inflight, []dynastore.Key{a})
			require.Nil(t, conflicted)
			err := c.call(s)
			var canceled *dynastore.TxCanceledError
			switch {
			case c.wantReasons != nil:
				require.ErrorAs(t, err, &canceled)
				require.ErrorIs(t, err, dynastore.ErrTxConflict)
				var codes []string
				for _, r := range canceled.Reasons {
					codes = append(codes, r.Code)
				}
				require.Equal(t, c.wantReasons, codes)
			case c.wantConflict:
				require.ErrorIs(t, err, dynastore.ErrTxConflict)
				require.NotErrorIs(t, err, dynastore.ErrTxCanceled)
			default:
				require.NoError(t, err)
			}
			got, err := s.Memory().Get(ctx, a)
			require.NoError(t, err)
			applied := c.writes && c.wantReasons == nil && !c.wantConflict
			require.Equal(t, applied, got != nil, "applied")
			doomed, _ := s.flights.leave(f)
			require.Equal(t, c.doomed, doomed, "the transactional read in flight is doomed")
		})
	}
}

// TestTransactGetCanceledByWriteInFlight: a TransactGetItems in flight
// when a write arrives on one of its items is canceled, with
// TransactionConflict on that item, and then retried.
func TestTransactGetCanceledByWriteInFlight(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		policy  retry.Policy
		wantErr bool
	}{
		{name: "canceled", policy: once, wantErr: true},
		{name: "retried", policy: DefaultPolicy},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(Options{Seed: 1, Scale: fast, Policy: &c.policy})
			writes := 0
			s.held = func(k flightKind) {
				if k == flightTxGet && writes == 0 {
					writes++
					_, err := s.Put(ctx, item(key("b"), 1), dynastore.WriteOptions{})
					require.NoError(t, err)
				}
			}
			items, err := s.GetSnapshot(ctx, []dynastore.Key{key("a"), key("b")})
			if !c.wantErr {
				require.NoError(t, err)
				require.Nil(t, items[0])
				require.NotNil(t, items[1], "the retry reads what the write left")
				return
			}
			var canceled *dynastore.TxCanceledError
			require.ErrorAs(t, err, &canceled)
			require.Equal(t, []dynastore.TxReason{{Code: dynastore.ReasonNone}, {Code: dynastore.ReasonConflict}}, canceled.Reasons)
		})
	}
}

// frozen is a clock that moves only when told.
type frozen struct {
	mu sync.Mutex
	t  time.Time
}

func (f *frozen) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *frozen) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// frozenStore is a store whose capacity clock is frozen wall time,
// compressed by scale, and whose calls take no time.
func frozenStore(c Capacity, scale float64) (*Store, *frozen) {
	clock := &frozen{t: time.Unix(1_700_000_000, 0)}
	s := New(Options{Seed: 1, Scale: scale, Latencies: &Latencies{}, Capacity: &c, Policy: &once})
	s.now = compressed(clock.now, scale)
	s.budget = newBudget(c, s.now())
	return s, clock
}

// TestPartitionBudget: one budget per partition key for reads and writes
// together (reads/RCU + writes/WCU per second), transactions at twice the
// units, and a request over it throttled at once.
func TestPartitionBudget(t *testing.T) {
	ctx := context.Background()
	small := Capacity{PartitionRCU: 30, PartitionWCU: 10, TableRRU: 1e9, TableWRU: 1e9, PeakWindow: 30 * time.Minute}
	k := key("hot")
	for _, c := range []struct {
		name string
		// run uses up the partition's second; then one more read must be
		// throttled.
		run func(s *Store) error
	}{
		{name: "writes", run: func(s *Store) error {
			for i := range 10 {
				if _, err := s.Update(ctx, k, incr(k), dynastore.WriteOptions{}); err != nil {
					return fmt.Errorf("write %d: %w", i, err)
				}
			}
			return nil
		}},
		{name: "reads and writes as one budget", run: func(s *Store) error {
			for i := range 5 {
				if _, err := s.Update(ctx, k, incr(k), dynastore.WriteOptions{}); err != nil {
					return fmt.Errorf("write %d: %w", i, err)
				}
			}
			for i := range 15 {
				if _, err := s.Get(ctx, k); err != nil {
					return fmt.Errorf("read %d: %w", i, err)
				}
			}
			return nil
		}},
		{name: "transactions at twice the units", run: func(s *Store) error {
			for i := range 5 {
				if err := s.Transact(ctx, []dynastore.TxAction{{Op: dynastore.TxUpdate, Key: k, Update: &dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}}}); err != nil {
					return fmt.Errorf("transaction %d: %w", i, err)
				}
			}
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, clock := frozenStore(small, 1)
			require.NoError(t, c.run(s))
			_, err := s.Get(ctx, k)
			require.ErrorIs(t, err, dynastore.ErrThrottled)
			// Another partition is not concerned.
			_, err = s.Get(ctx, key("cold"))
			require.NoError(t, err)
			err = s.Transact(ctx, []dynastore.TxAction{
				{Op: dynastore.TxPut, Item: item(key("cold"), 1)},
				{Op: dynastore.TxUpdate, Key: k, Update: &dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}},
			})
			// Throttled, which callers must not read as a canceled
			// transaction: the reasons are in its text only.
			require.ErrorIs(t, err, dynastore.ErrThrottled)
			require.NotErrorIs(t, err, dynastore.ErrTxCanceled)
			require.Contains(t, err.Error(), "[None ThrottlingError]")
			// A second later the partition serves again.
			clock.advance(time.Second)
			_, err = s.Get(ctx, k)
			require.NoError(t, err)
		})
	}
}

// TestItemSizeUnits: a write of an item of n KB costs n units.
func TestItemSizeUnits(t *testing.T) {
	ctx := context.Background()
	s, _ := frozenStore(Capacity{PartitionRCU: 30, PartitionWCU: 10, TableRRU: 1e9, TableWRU: 1e9, PeakWindow: time.Minute}, 1)
	k := key("big")
	big := append(item(k, 0), dynastore.Attr{Name: "v", Value: dynastore.B(make([]byte, 4500))})
	_, err := s.Put(ctx, big, dynastore.WriteOptions{})
	require.NoError(t, err) // 5 units
	_, err = s.Put(ctx, big, dynastore.WriteOptions{})
	require.NoError(t, err) // 10
	_, err = s.Put(ctx, big, dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrThrottled)
}

// TestTableCeiling: a new table serves its initial on-demand ceiling; a
// peak raises it to twice that peak only once the peak is PeakWindow old.
func TestTableCeiling(t *testing.T) {
	ctx := context.Background()
	s, clock := frozenStore(Capacity{PartitionRCU: 3000, PartitionWCU: 1000, TableRRU: 30, TableWRU: 10, PeakWindow: 30 * time.Minute}, 1)
	n := 0
	writes := func(count int) error {
		for range count {
			n++
			if _, err := s.Put(ctx, item(key("k"+strconv.Itoa(n)), n), dynastore.WriteOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
	require.NoError(t, writes(10))
	require.ErrorIs(t, writes(1), dynastore.ErrThrottled)
	clock.advance(time.Minute)
	require.NoError(t, writes(10))
	require.ErrorIs(t, writes(1), dynastore.ErrThrottled, "a peak of 10 must not raise the ceiling within 30 minutes")
	clock.advance(31 * time.Minute)
	require.NoError(t, writes(20), "twice the previous peak, once it is 30 minutes old")
	require.ErrorIs(t, writes(1), dynastore.ErrThrottled)
	// A transaction on a table over its ceiling is canceled with
	// ThrottlingError on every item.
	err := s.Transact(ctx, []dynastore.TxAction{{Op: dynastore.TxPut, Item: item(key("x"), 1)}, {Op: dynastore.TxPut, Item: item(key("y"), 1)}})
	require.ErrorIs(t, err, dynastore.ErrThrottled)
	require.NotErrorIs(t, err, dynastore.ErrTxCanceled)
	require.Contains(t, err.Error(), "[ThrottlingError ThrottlingError]")
}

// TestFaultOutcomes: a single write whose outcome is unknown is not
// repeated and says so; one refused before it applied is retried; a
// transaction whose answer was lost is retried and applied once.
func TestFaultOutcomes(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		faults Faults
		// exact: every failed call was not applied.
		exact bool
	}{
		{name: "500 after apply", faults: Faults{InternalError: 0.4}},
		{name: "timeout after apply", faults: Faults{Timeout: 0.3}},
		{name: "reset after apply", faults: Faults{ResetAfter: 0.4}},
		{name: "503 before apply", faults: Faults{Unavailable: 0.4}, exact: true},
		{name: "reset before apply", faults: Faults{ResetBefore: 0.4}, exact: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Only the timeout fault waits out its attempt, so only it
			// gets a short one: elsewhere a busy machine stretching an
			// attempt past its timeout would add an unknown outcome the
			// fault draws did not.
			quick := retry.Policy{MaxAttempts: 6, AttemptTimeout: 10 * time.Second, Budget: time.Minute, Base: time.Microsecond, Cap: time.Microsecond}
			if c.faults.Timeout > 0 {
				quick.AttemptTimeout = 20 * time.Millisecond
			}
			s := New(Options{Seed: 3, Scale: fast, Policy: &quick})
			s.SetFaults(c.faults)
			for _, tx := range []bool{false, true} {
				k := key("n" + strconv.FormatBool(tx))
				ok, unknown, other := 0, 0, 0
				for range 60 {
					var err error
					if tx {
						err = s.Transact(ctx, []dynastore.TxAction{{Op: dynastore.TxUpdate, Key: k, Update: &dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}}})
					} else {
						_, err = s.Update(ctx, k, incr(k), dynastore.WriteOptions{})
					}
					switch {
					case err == nil:
						ok++
					case errors.Is(err, dynastore.ErrUnavailable) && containsUnknown(err):
						unknown++
					default:
						require.ErrorIs(t, err, dynastore.ErrUnavailable)
						other++
					}
				}
				it, err := s.Memory().Get(ctx, k)
				require.NoError(t, err)
				n, _ := strconv.Atoi(string(it.Get("n").(dynastore.N)))
				if tx {
					require.Zero(t, unknown, "a transaction is retried with its token")
				}
				if c.exact {
					require.Zero(t, unknown)
					require.Equal(t, ok, n, "failed writes were not applied")
					continue
				}
				require.GreaterOrEqual(t, n, ok)
				require.LessOrEqual(t, n, ok+unknown+other, "nothing applied twice")
				if !tx {
					require.NotZero(t, unknown, "an unknown outcome is reported as such")
				}
			}
		})
	}
}

func containsUnknown(err error) bool {
	return strings.Contains(err.Error(), "may or may not have been applied")
}

// TestConcurrentTransfers: transactions moving units between accounts,
// with conflicts, throttling and faults, keep the total in every
// transactional read and at the end; a transfer is applied once or not
// at all.
func TestConcurrentTransfers(t *testing.T) {
	ctx := context.Background()
	s := New(Options{Seed: 5, Scale: 0.01, Faults: Faults{InternalError: 0.05, Unavailable: 0.05, ResetAfter: 0.02}})
	const accounts, initial = 4, 100
	keys := make([]dynastore.Key, accounts)
	for i := range keys {
		keys[i] = key("acct" + strconv.Itoa(i))
		_, err := s.Memory().Put(ctx, item(keys[i], initial), dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	count := func(what string) {
		mu.Lock()
		counts[what]++
		mu.Unlock()
	}
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				from, to := keys[(w+i)%accounts], keys[(w+i+1)%accounts]
				err := s.Transact(ctx, []dynastore.TxAction{
					{Op: dynastore.TxUpdate, Key: from, Cond: dynastore.Compare{Attr: "n", Op: dynastore.OpGE, Val: dynastore.N("1")},
						Update: &dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("-1")}}}},
					{Op: dynastore.TxUpdate, Key: to, Update: &dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}},
				})
				switch {
				case err == nil:
					count("committed")
				case errors.Is(err, dynastore.ErrTxConflict):
					count("conflict")
				case errors.Is(err, dynastore.ErrUnavailable), errors.Is(err, dynastore.ErrThrottled):
					count("unavailable")
				default:
					t.Errorf("transfer: %v", err)
					return
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				items, err := s.GetSnapshot(ctx, keys)
				if err != nil {
					count("read failed")
					continue
				}
				count("read")
				if got := sum(items); got != accounts*initial {
					t.Errorf("a transactional read saw a total of %d", got)
				}
			}
		}()
	}
	wg.Wait()
	items, err := s.Memory().BatchGet(ctx, keys)
	require.NoError(t, err)
	require.Equal(t, accounts*initial, sum(items))
	t.Logf("%v", counts)
	require.NotZero(t, counts["committed"])
}

// sum adds up the items' counters (-1 for a missing or unreadable one,
// which no total of positive counts can absorb).
func sum(items []dynastore.Item) int {
	n := 0
	for _, it := range items {
		v, ok := it.Get("n").(dynastore.N)
		if !ok {
			return -1
		}
		x, err := strconv.Atoi(string(v))
		if err != nil {
			return -1
		}
		n += x
	}
	return n
}

// TestScaleCompressesCapacity: at Scale 0.01 a partition's second of
// capacity comes back after a hundredth of a second of wall time.
func TestScaleCompressesCapacity(t *testing.T) {
	ctx := context.Background()
	s, clock := frozenStore(Capacity{PartitionRCU: 30, PartitionWCU: 10, TableRRU: 1e9, TableWRU: 1e9, PeakWindow: time.Minute}, 0.01)
	k := key("hot")
	for range 10 {
		_, err := s.Update(ctx, k, incr(k), dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	_, err := s.Update(ctx, k, incr(k), dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrThrottled)
	clock.advance(10 * time.Millisecond)
	for range 10 {
		_, err := s.Update(ctx, k, incr(k), dynastore.WriteOptions{})
		require.NoError(t, err)
	}
}

// TestBatchUnprocessed: a BatchGetItem or BatchWriteItem part of whose
// keys are on a partition over budget serves the others and sends the
// rest again, as UnprocessedKeys and UnprocessedItems make a client do.
func TestBatchUnprocessed(t *testing.T) {
	ctx := context.Background()
	hot, cold := key("hot"), key("cold")
	for _, op := range []struct {
		name string
		// spend takes the hot partition's budget; run sends the batch
		// and done checks what it applied (hot: whether the hot key's
		// part went through too).
		spend func(t *testing.T, s *Store)
		run   func(s *Store) error
		done  func(t *testing.T, s *Store, hotDone bool)
	}{
		{
			name: "BatchGetItem",
			spend: func(t *testing.T, s *Store) {
				for range 3 {
					_, err := s.Get(ctx, hot)
					require.NoError(t, err)
				}
			},
			run: func(s *Store) error {
				items, err := s.BatchGet(ctx, []dynastore.Key{cold, hot})
				if err == nil && (items[0] == nil || items[1] == nil) {
					return errors.New("a key was not read")
				}
				return err
			},
			done: func(*testing.T, *Store, bool) {},
		},
		{
			name: "BatchWriteItem",
			spend: func(t *testing.T, s *Store) {
				_, err := s.Put(ctx, item(hot, 1), dynastore.WriteOptions{})
				require.NoError(t, err)
			},
			run: func(s *Store) error {
				return s.BatchWrite(ctx, []dynastore.Item{item(cold, 2), item(hot, 2)}, nil)
			},
			done: func(t *testing.T, s *Store, hotDone bool) {
				got := func(k dynastore.Key) dynastore.Item {
					it, err := s.Memory().Get(ctx, k)
					require.NoError(t, err)
					return it
				}
				require.Equal(t, item(cold, 2), got(cold), "the cold partition's write is applied at once")
				want := item(hot, 1)
				if hotDone {
					want = item(hot, 2)
				}
				require.Equal(t, want, got(hot))
			},
		},
	} {
		for _, c := range []struct {
			name    string
			refill  bool // the hot partition's budget comes back after the first attempt
			wantErr bool
		}{
			{name: "throttled part sent again", refill: true},
			{name: "throttled for good", wantErr: true},
		} {
			t.Run(op.name+"/"+c.name, func(t *testing.T) {
				s, clock := frozenStore(Capacity{PartitionRCU: 3, PartitionWCU: 1, TableRRU: 1e9, TableWRU: 1e9, PeakWindow: time.Minute}, 1)
				s.policy = retry.Policy{MaxAttempts: 2, Budget: time.Minute, Base: time.Microsecond, Cap: time.Microsecond}
				for _, k := range []dynastore.Key{hot, cold} {
					_, err := s.Memory().Put(ctx, item(k, 1), dynastore.WriteOptions{})
					require.NoError(t, err)
				}
				op.spend(t, s)
				attempts := 0
				s.held = func(flightKind) {
					attempts++
					if c.refill {
						clock.advance(time.Second)
					}
				}
				err := op.run(s)
				if c.wantErr {
					require.ErrorIs(t, err, dynastore.ErrThrottled)
					require.Equal(t, 1, attempts, "only the cold key's part was sent; the second attempt found the hot partition still over budget")
				} else {
					require.NoError(t, err)
					require.Equal(t, 2, attempts)
				}
				op.done(t, s, !c.wantErr)
			})
		}
	}
}
