package faithful

import (
	"sync"

	"github.com/redamo/redamo/dynastore"
)

// flightKind is what a request in flight is, for DynamoDB's conflict rules.
type flightKind uint8

const (
	flightWrite   flightKind = iota + 1 // PutItem, UpdateItem, DeleteItem
	flightTxWrite                       // TransactWriteItems
	flightTxGet                         // TransactGetItems
)

// flight is one write or transactional read in flight: from the moment it
// arrives to the moment its answer leaves, the window in which DynamoDB's
// conflict rules apply to it.
type flight struct {
	kind flightKind
	ids  []string
	// doomed marks, for a TransactGetItems, the items a write arrived on
	// while it was in flight. Guarded by flights.mu.
	doomed []bool
}

// flights holds the requests in flight per item and applies DynamoDB's
// rules for conflicts between them
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html,
// "Transaction conflict handling in DynamoDB"):
//   - a PutItem, UpdateItem or DeleteItem of an item that an ongoing
//     TransactWriteItems includes fails with TransactionConflictException;
//   - a TransactWriteItems that includes an item of another ongoing
//     TransactWriteItems, or of an ongoing single-item write, is canceled,
//     with TransactionConflict as the reason of that item;
//   - a TransactGetItems that includes an item of an ongoing write of any
//     kind is canceled the same way, and so is one in flight when such a
//     write arrives.
//
// Of two overlapping requests, whichever arrives second is the one that
// fails (the first goes on), so every overlap of two windows is found once.
type flights struct {
	mu sync.Mutex
	by map[string][]*flight
}

func itemID(k dynastore.Key) string {
	// A length prefix keeps (pk, sk) pairs apart whatever bytes they hold.
	n := len(k.PK)
	b := make([]byte, 0, 4+n+len(k.SK))
	b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	b = append(b, k.PK...)
	return string(append(b, k.SK...))
}

// conflicts says whether a new request of kind k conflicts with f on an
// item they share.
func conflicts(k flightKind, f *flight) bool {
	switch k {
	case flightWrite:
		return f.kind == flightTxWrite
	case flightTxWrite, flightTxGet:
		return f.kind == flightWrite || f.kind == flightTxWrite
	}
	return false
}

// enter registers a request of kind k on the items keys, unless it
// conflicts with a request in flight: then it is not registered (f is
// nil) and conflicted marks the items it conflicts on.
func (fs *flights) enter(k flightKind, keys []dynastore.Key) (f *flight, conflicted []bool) {
	ids := make([]string, len(keys))
	for i, key := range keys {
		ids[i] = itemID(key)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.by == nil {
		fs.by = map[string][]*flight{}
	}
	for i, id := range ids {
		for _, g := range fs.by[id] {
			if conflicts(k, g) {
				if conflicted == nil {
					conflicted = make([]bool, len(ids))
				}
				conflicted[i] = true
			}
		}
	}
	if conflicted != nil {
		return nil, conflicted
	}
	f = &flight{kind: k, ids: ids}
	if k == flightTxGet {
		f.doomed = make([]bool, len(ids))
	}
	for _, id := range ids {
		if k != flightTxGet {
			// A write dooms the transactional reads in flight on its item.
			for _, g := range fs.by[id] {
				if g.kind == flightTxGet {
					g.doom(id)
				}
			}
		}
		fs.by[id] = append(fs.by[id], f)
	}
	return f, nil
}

// doom marks id as conflicted in a TransactGetItems (flights.mu held).
func (f *flight) doom(id string) {
	for i, x := range f.ids {
		if x == id {
			f.doomed[i] = true
		}
	}
}

// leave ends f's window. For a TransactGetItems it says whether a write
// arrived on one of its items meanwhile, and on which.
func (fs *flights) leave(f *flight) (doomed bool, where []bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, id := range f.ids {
		list := fs.by[id]
		for i, g := range list {
			if g == f {
				list = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(fs.by, id)
		} else {
			fs.by[id] = list
		}
	}
	for _, d := range f.doomed {
		if d {
			return true, f.doomed
		}
	}
	return false, nil
}

// conflictReasons is a cancellation of n actions, TransactionConflict
// where at says so and None elsewhere.
func conflictReasons(n int, at func(i int) bool) *dynastore.TxCanceledError {
	rs := make([]dynastore.TxReason, n)
	for i := range rs {
		rs[i].Code = dynastore.ReasonNone
		if at(i) {
			rs[i].Code = dynastore.ReasonConflict
		}
	}
	return &dynastore.TxCanceledError{Reasons: rs}
}
