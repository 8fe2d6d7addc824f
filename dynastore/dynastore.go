// Package dynastore is redamo's storage layer: a small, DynamoDB-shaped, typed
// interface (items with a binary partition and sort key, typed conditions and
// updates, transactions, partition queries, table scans) and the backends that
// implement it (dynastore/dynamo on aws-sdk-go-v2, dynastore/memory embedded).
//
// The interface speaks DynamoDB, not Redis: it knows nothing about RESP or Redis
// types. Every backend has the same semantics and the same limits, proven by the
// conformance suite in dynastore/storetest.
package dynastore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Names of the key attributes. Every item has both, as non-empty binaries.
const (
	AttrPK = "pk"
	AttrSK = "sk"
	// AttrTTL is the table's native TTL attribute (epoch seconds). DynamoDB only
	// garbage-collects with it, possibly days late: correctness never relies on it.
	AttrTTL = "ttl"
)

// DynamoDB's limits, enforced identically by every backend.
const (
	MaxItemSize      = 400 * 1024      // bytes, attribute names + values
	MaxTxActions     = 100             // actions in one TransactWriteItems
	MaxTxSize        = 4 * 1024 * 1024 // bytes in one transaction
	MaxPKSize        = 2048            // bytes of a partition key value
	MaxSKSize        = 1024            // bytes of a sort key value
	MaxBatchGet      = 100             // keys in one BatchGetItem
	MaxPageSize      = 1024 * 1024     // bytes returned by one Query/Scan page
	MaxBatchWrite    = 25              // puts and deletes in one BatchWriteItem
	MaxNumberDigits  = 38              // significant digits of a Number
	MaxExprAttrNames = 255             // not a DynamoDB limit, a sanity bound
)

// Key identifies one item.
type Key struct {
	PK, SK []byte
}

// Kind is a DynamoDB attribute type.
type Kind uint8

// The attribute types redamo uses.
const (
	KindB    Kind = iota + 1 // binary
	KindN                    // number
	KindS                    // string
	KindBS                   // binary set
	KindL                    // list
	KindM                    // map
	KindBOOL                 // boolean
	KindNULL                 // null
)

// Value is one attribute value: B, N, S, BS, L, M, BOOL or NULL. A Value
// is an Operand too: the literal value, with no box of its own around it
// (a literal operand type would box every literal of an update).
type Value interface {
	Kind() Kind
	Operand
}

type (
	// B is a binary value.
	B []byte
	// N is a number in DynamoDB's decimal text form (up to 38 significant digits).
	N string
	// S is a UTF-8 string value.
	S string
	// BS is a binary set; it is never empty (DynamoDB removes empty sets).
	BS [][]byte
	// L is a list of values.
	L []Value
	// M is a map of values with string keys.
	M map[string]Value
	// BOOL is a boolean value.
	BOOL bool
	// NULL is the null value.
	NULL struct{}
)

func (B) Kind() Kind    { return KindB }
func (N) Kind() Kind    { return KindN }
func (S) Kind() Kind    { return KindS }
func (BS) Kind() Kind   { return KindBS }
func (L) Kind() Kind    { return KindL }
func (M) Kind() Kind    { return KindM }
func (BOOL) Kind() Kind { return KindBOOL }
func (NULL) Kind() Kind { return KindNULL }

func (B) isOperand()    {}
func (N) isOperand()    {}
func (S) isOperand()    {}
func (BS) isOperand()   {}
func (L) isOperand()    {}
func (M) isOperand()    {}
func (BOOL) isOperand() {}
func (NULL) isOperand() {}

// ---- conditions ----------------------------------------------------------

// Cond is a typed condition on one item, rendered to a ConditionExpression by
// the dynamo backend and evaluated directly by the memory backend (Eval).
// A nil Cond is always true.
type Cond interface {
	isCond()
}

// CmpOp is a comparison operator.
type CmpOp uint8

// Comparison operators, as in DynamoDB condition expressions.
const (
	OpEQ CmpOp = iota + 1
	OpNE
	OpLT
	OpLE
	OpGT
	OpGE
)

type (
	// Exists is attribute_exists(Attr).
	Exists struct{ Attr string }
	// NotExists is attribute_not_exists(Attr).
	NotExists struct{ Attr string }
	// Compare is Attr <op> Val. As in DynamoDB, a comparison with a missing
	// attribute or with a value of a different type is false, except OpNE,
	// which is NOT(OpEQ) and so true (checked against DynamoDB Local: `a <> :v`
	// holds when a is missing or of another type). OpLT..OpGE accept only N,
	// S and B values (anything else is ErrInvalid, as DynamoDB rejects it).
	Compare struct {
		Attr string
		Op   CmpOp
		Val  Value
	}
	// CompareAttrs is A <op> B, two distinct attributes of the item,
	// compared as Compare compares an attribute with a value: false when
	// either is missing or they are of different types (OpNE: true); an
	// ordering of values other than N, S and B is false. A compared with
	// itself is ErrInvalid, as DynamoDB rejects it.
	CompareAttrs struct {
		A  string
		Op CmpOp
		B  string
	}
	// IsType is attribute_type(Attr, Type).
	IsType struct {
		Attr string
		Type Kind
	}
	// SizeCompare is size(Attr) <op> Size: bytes of a B or S, elements of a set, list or map.
	// On a missing attribute or a type without a size (N, BOOL, NULL) it is
	// false, except OpNE which is true (as Compare).
	SizeCompare struct {
		Attr string
		Op   CmpOp
		Size int64
	}
	// BeginsWith is begins_with(Attr, Prefix) on a B attribute.
	BeginsWith struct {
		Attr   string
		Prefix []byte
	}
	// Contains is contains(Attr, Val): a member of a set, an element of a list.
	Contains struct {
		Attr string
		Val  Value
	}
	// And is true when every condition is (an empty And is true).
	And []Cond
	// Or is true when any condition is (an empty Or is false).
	Or []Cond
	// Not negates a condition.
	Not struct{ C Cond }
)

// Checked is a condition that ValidateCond accepted once (see Check);
// stores take it as the condition it holds without validating it again.
// Commands build their hot conditions once and reuse them (INCR's, for
// each millisecond and delta), so the same tree is not validated on every
// request.
type Checked struct{ c Cond }

// Check validates c and returns it as a *Checked, ready to be reused (nil
// for nil).
func Check(c Cond) (Cond, error) {
	if c == nil {
		return nil, nil
	}
	if err := ValidateCond(c); err != nil {
		return nil, err
	}
	if x, ok := c.(*Checked); ok {
		return x, nil
	}
	return &Checked{c: c}, nil
}

// MustCheck is Check for a condition built by code rather than from input,
// which is valid unless the code is wrong: it panics on an invalid one.
func MustCheck(c Cond) Cond {
	c, err := Check(c)
	if err != nil {
		panic(err)
	}
	return c
}

// Cond returns the condition c holds.
func (c *Checked) Cond() Cond { return c.c }

func (Exists) isCond()       {}
func (NotExists) isCond()    {}
func (Compare) isCond()      {}
func (CompareAttrs) isCond() {}
func (IsType) isCond()       {}
func (SizeCompare) isCond()  {}
func (BeginsWith) isCond()   {}
func (Contains) isCond()     {}
func (And) isCond()          {}
func (Or) isCond()           {}
func (Not) isCond()          {}
func (*Checked) isCond()     {}

// ---- updates -------------------------------------------------------------

// Update is a typed UpdateExpression on top-level attributes. Actions apply as
// DynamoDB applies them: all operands are evaluated against the item as it was
// before the update; no attribute may appear in two actions.
type Update struct {
	Set    []SetAction
	Remove []string
	// Add adds a number to an N attribute (missing counts as 0) or members to a BS.
	Add []AttrValue
	// Delete removes members from a BS; a set left empty is removed.
	Delete []AttrValue
}

// SetAction is SET Attr = Val.
type SetAction struct {
	Attr string
	Val  Operand
}

// AttrValue pairs an attribute with a value (ADD and DELETE actions).
type AttrValue struct {
	Attr string
	Val  Value
}

// Operand is the right-hand side of a SET action: a Value (a literal) or
// one of the operand types below.
type Operand interface {
	isOperand()
}

type (
	// Ref is the current value of another attribute (an error if missing).
	Ref struct{ Attr string }
	// IfNotExists is if_not_exists(Attr, Default).
	IfNotExists struct {
		Attr    string
		Default Value
	}
	// Plus is A + B on numbers.
	Plus struct{ A, B Operand }
	// Minus is A - B on numbers.
	Minus struct{ A, B Operand }
	// ListAppend is list_append(A, B) on lists.
	ListAppend struct{ A, B Operand }
)

func (Ref) isOperand()         {}
func (IfNotExists) isOperand() {}
func (Plus) isOperand()        {}
func (Minus) isOperand()       {}
func (ListAppend) isOperand()  {}

// ---- requests ------------------------------------------------------------

// ReturnValues selects what a write returns, as in DynamoDB.
type ReturnValues uint8

// ReturnValues options. UpdatedOld/UpdatedNew are for updates only.
const (
	ReturnNone ReturnValues = iota
	ReturnAllOld
	ReturnAllNew
	ReturnUpdatedOld
	ReturnUpdatedNew
)

// WriteOptions apply to one single-item write.
type WriteOptions struct {
	// Cond must hold on the current item (nil: always).
	Cond Cond
	// Return selects the item returned on success.
	Return ReturnValues
	// OldOnFailure asks for the current item when Cond fails
	// (ReturnValuesOnConditionCheckFailure = ALL_OLD); it comes in the
	// *ConditionFailedError.
	OldOnFailure bool
	// ReturnInto, when not nil, is memory the caller lends for the item
	// returned with ReturnAllOld or ReturnAllNew: a backend may build that
	// item from ReturnInto[:0] instead of allocating it or handing out an
	// item it keeps, which lets the embedded store go on changing its item
	// in place. The returned item may then share ReturnInto's memory, until
	// the caller reuses it.
	ReturnInto Item
	// Handover (PutItem only) gives the item to the store rather than
	// lending it: the store may keep the item and the values in it as the
	// stored item, and make its numbers canonical in place, where it would
	// otherwise copy them. Once the call is made, whatever its outcome, the
	// caller must neither read nor modify the item or anything it refers
	// to. A backend that serializes items ignores it. It spares the
	// embedded store a copy of the freshly built item of every SET.
	Handover bool
}

// TxOp is the kind of one transaction action.
type TxOp uint8

// Transaction action kinds.
const (
	TxPut TxOp = iota + 1
	TxUpdate
	TxDelete
	TxCheck
)

// TxAction is one action of a transaction. Key is used by Update, Delete and
// Check; Put takes its key from Item.
type TxAction struct {
	Op     TxOp
	Key    Key
	Item   Item    // TxPut
	Update *Update // TxUpdate
	Cond   Cond    // required for TxCheck
	// OldOnFailure returns the current item in the cancellation reason when
	// this action's condition fails.
	OldOnFailure bool
}

// SKOp selects a sort-key range in a Query.
type SKOp uint8

// Sort-key conditions, as in DynamoDB key condition expressions.
const (
	SKAll SKOp = iota // the whole partition
	SKEq
	SKLT
	SKLE
	SKGT
	SKGE
	SKBetween    // A <= sk <= B
	SKBeginsWith // sk starts with A
)

// Query reads one partition in sort-key order.
type Query struct {
	PK      []byte
	Op      SKOp
	A, B    []byte
	Reverse bool
	// Limit caps the items evaluated in this page (0: none; a page also ends at 1 MB).
	Limit int
	// Filter drops items after they are read (they still count towards Limit,
	// as in DynamoDB).
	Filter Cond
	// After is the sort key to resume after (the previous page's Next).
	After []byte
}

// QueryPage is one page of a Query.
type QueryPage struct {
	Items []Item
	// Next is the sort key to pass as After for the next page; nil at the end.
	Next []byte
}

// Scan reads the whole table in an order that is stable while nothing is written.
type Scan struct {
	Limit  int
	Filter Cond
	// After is the key to resume after (the previous page's Next).
	After *Key
	// Segment and Segments split the table for parallel scans (Segments 0: one).
	Segment, Segments int
}

// ScanPage is one page of a Scan.
type ScanPage struct {
	Items []Item
	Next  *Key
}

// Store is the storage interface. Implementations are safe for concurrent use.
// A missing item is not an error: Get returns a nil Item. Every read is
// strongly consistent.
//
// Ownership: a Store copies what it is given (the caller may reuse its items
// and byte slices once a call returns; a Put with WriteOptions.Handover is
// the one exception), and what it returns is read-only:
// items from reads, write return values, ConditionFailedError.Old and
// TxReason.Old may share memory with the store (the embedded backend hands
// out its stored items, which no write changes in place once handed out: a
// write then stores a new item). A caller that wants to modify one clones
// it first (CloneItem), so that a read need not copy every item.
//
// Failures are reported with the sentinel errors below (wrapped), so callers
// test them with errors.Is / errors.As.
type Store interface {
	Get(ctx context.Context, k Key) (Item, error)
	// BatchGet returns the items in the order of keys, nil where missing.
	// It accepts any number of keys and splits them into requests of MaxBatchGet.
	BatchGet(ctx context.Context, keys []Key) ([]Item, error)
	// Put replaces a whole item.
	Put(ctx context.Context, it Item, o WriteOptions) (Item, error)
	// Update changes an item, creating it if missing (as UpdateItem does).
	Update(ctx context.Context, k Key, u Update, o WriteOptions) (Item, error)
	Delete(ctx context.Context, k Key, o WriteOptions) (Item, error)
	// Transact applies all actions or none (TransactWriteItems).
	Transact(ctx context.Context, actions []TxAction) error
	Query(ctx context.Context, q Query) (QueryPage, error)
	Scan(ctx context.Context, s Scan) (ScanPage, error)
}

// GetMany reads the items at keys (nil where missing) in as few requests
// as it can: none for no key, one GetItem for one, BatchGet for more.
func GetMany(ctx context.Context, st Store, keys []Key) ([]Item, error) {
	switch len(keys) {
	case 0:
		return nil, nil
	case 1:
		it, err := st.Get(ctx, keys[0])
		if err != nil {
			return nil, err
		}
		return []Item{it}, nil
	}
	return st.BatchGet(ctx, keys)
}

// SnapshotReader is implemented by a Store that can read several items as
// of one instant (DynamoDB's TransactGetItems, which costs twice the read
// units of a BatchGet): what a multi-key read needs to be one consistent
// state without reading again to check. Keys must be distinct and at most
// MaxTxActions; the items come in the order of keys, nil where missing. A
// read that meets a write transaction in progress may fail with
// ErrTxConflict (retryable).
type SnapshotReader interface {
	GetSnapshot(ctx context.Context, keys []Key) ([]Item, error)
}

// BatchWriter is implemented by a Store that can put and delete several
// items in one request without a transaction (DynamoDB's BatchWriteItem):
// each write is applied on its own, unconditionally, for the write units
// of a single write instead of a transaction's twice as many. It suits
// items only their writer changes (index entries, the parts of a value
// written before anything points at them); a retried request writes
// again, so a write must mean the same whenever it lands.
type BatchWriter interface {
	// BatchWrite applies every put and delete, any number of them, in
	// requests of at most MaxBatchWrite; a key may appear once. It returns
	// nil once all are applied, the writes a request left unprocessed
	// (throttled) sent again within the store's retry policy; on an error
	// any of them may have been applied.
	BatchWrite(ctx context.Context, puts []Item, deletes []Key) error
}

// BatchWrite applies puts and deletes through st's BatchWriteItem, or one
// by one where st has none (a Txn, a test's wrapper).
func BatchWrite(ctx context.Context, st Store, puts []Item, deletes []Key) error {
	if bw, ok := st.(BatchWriter); ok {
		return bw.BatchWrite(ctx, puts, deletes)
	}
	for _, it := range puts {
		if _, err := st.Put(ctx, it, WriteOptions{}); err != nil {
			return err
		}
	}
	for _, k := range deletes {
		if _, err := st.Delete(ctx, k, WriteOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// BatchWrites splits puts and deletes into the writes of BatchWriteItem
// requests (at most MaxBatchWrite each, puts first), after checking every
// key and refusing one that appears twice, as DynamoDB refuses it in a
// request. A backend sends each chunk as one request.
func BatchWrites(puts []Item, deletes []Key) ([][]BatchOp, error) {
	seen := make(map[string]bool, len(puts)+len(deletes))
	ops := make([]BatchOp, 0, len(puts)+len(deletes))
	add := func(op BatchOp) error {
		k := op.Key
		if op.Item != nil {
			k = op.Item.Key()
		}
		if err := ValidateKey(k); err != nil {
			return err
		}
		id := strconv.Itoa(len(k.PK)) + ":" + string(k.PK) + string(k.SK)
		if seen[id] {
			return fmt.Errorf("%w: Provided list of item keys contains duplicates", ErrInvalid)
		}
		seen[id] = true
		ops = append(ops, op)
		return nil
	}
	for _, it := range puts {
		if err := add(BatchOp{Item: it}); err != nil {
			return nil, err
		}
	}
	for _, k := range deletes {
		if err := add(BatchOp{Key: k}); err != nil {
			return nil, err
		}
	}
	var chunks [][]BatchOp
	for lo := 0; lo < len(ops); lo += MaxBatchWrite {
		chunks = append(chunks, ops[lo:min(lo+MaxBatchWrite, len(ops))])
	}
	return chunks, nil
}

// BatchOp is one write of a BatchWriteItem: a put of Item, or (Item nil)
// a delete of Key.
type BatchOp struct {
	Item Item
	Key  Key
}

// Prefetcher is implemented by a Store that can bring items closer ahead
// of the requests that will use them: the embedded store loads them into
// the CPU's caches, so that a pipeline's requests do not each wait for
// memory in turn. reads are the keys of items requests will read (a GET;
// an INCR, whose update is decided on the item), replaced those of items
// requests will replace without reading them (a SET), for which only what
// finds the item helps. Prefetch is a hint and nothing more: it makes no
// request, never blocks, and changes nothing any request sees.
type Prefetcher interface {
	Prefetch(reads, replaced []Key)
}

// Counter is implemented by a Store that can say how many items it holds
// without a Scan, which bills every item it reads: what monitoring (INFO's
// keyspace section, scraped every few seconds) reports instead.
type Counter interface {
	// CountItems returns how many items match filter (nil: every item)
	// and whether that count is exact. A store that holds its items in
	// this process (the embedded store) counts exactly, calling each (if
	// not nil) with every item counted, and makes no request. DynamoDB
	// keeps a table-wide count it refreshes about every six hours
	// (DescribeTable's ItemCount, which is free): that count ignores
	// filter, never calls each, and is not exact.
	CountItems(ctx context.Context, filter Cond, each func(Item)) (n int64, exact bool, err error)
}

// Clocked is implemented by a Store that knows how far this process's
// clock is from the store's own. Expiry is decided against "now" inside
// conditions, so every instance sharing a store must agree on it: they
// take the store's clock as the reference, each correcting its own by
// the offset measured here.
type Clocked interface {
	// ClockOffset returns what to add to local time to read the store's
	// clock, and the uncertainty of that: the true offset is within
	// offset ± uncertainty. A store may return 0 while its measurements
	// allow that the local clock is right (not moving a clock that may be
	// right). ok is false while nothing has been measured. It is read for
	// every command, so it takes no lock.
	ClockOffset() (offset, uncertainty time.Duration, ok bool)
	// ClockSamples returns how many measurements the estimate rests on
	// (0 for a store whose clock is this process's own).
	ClockSamples() int
}

// ---- errors ----------------------------------------------------------------

// Sentinel errors. Backends wrap them; use errors.Is.
var (
	// ErrConditionFailed: a write's condition did not hold; nothing was written.
	ErrConditionFailed = errors.New("dynastore: condition failed")
	// ErrTxCanceled: a transaction was canceled; see *TxCanceledError for why.
	ErrTxCanceled = errors.New("dynastore: transaction canceled")
	// ErrTxConflict: a transaction conflicted with another one (retryable).
	ErrTxConflict = errors.New("dynastore: transaction conflict")
	// ErrItemTooLarge: an item would exceed MaxItemSize; nothing was written.
	ErrItemTooLarge = errors.New("dynastore: item too large")
	// ErrTxTooLarge: a transaction has more than MaxTxActions actions or MaxTxSize bytes.
	ErrTxTooLarge = errors.New("dynastore: transaction too large")
	// ErrKeyTooLarge: a partition or sort key exceeds its limit, or is empty.
	ErrKeyTooLarge = errors.New("dynastore: key too large")
	// ErrThrottled: the backend kept throttling after bounded retries.
	ErrThrottled = errors.New("dynastore: throttled")
	// ErrUnavailable: the backend kept failing (5xx, timeouts) after bounded retries.
	ErrUnavailable = errors.New("dynastore: unavailable")
	// ErrOutcomeUnknown: a write may or may not have been applied (a 500
	// or a timeout after the request was sent, a success whose answer was
	// lost, a transaction whose retries ran out after such an attempt). It
	// comes with the last failure's kind (ErrUnavailable, ErrThrottled) in
	// the same chain; a caller that tells clients what happened tests it
	// first: "not applied, try again" would be wrong, as a retried INCR or
	// push could count twice.
	ErrOutcomeUnknown = errors.New("dynastore: outcome unknown")
	// ErrInvalid: the request is malformed (a bug in the caller, e.g. an update
	// naming one attribute twice, ADD to a non-number); DynamoDB's ValidationException.
	ErrInvalid = errors.New("dynastore: invalid request")
)

// ConditionFailedError is returned by a single-item write whose condition
// failed. Old is the current item when WriteOptions.OldOnFailure was set
// (nil if the item does not exist).
type ConditionFailedError struct {
	Old Item
}

func (e *ConditionFailedError) Error() string { return ErrConditionFailed.Error() }

// Unwrap makes errors.Is(err, ErrConditionFailed) true.
func (e *ConditionFailedError) Unwrap() error { return ErrConditionFailed }

// Cancellation reason codes, as DynamoDB reports them.
const (
	ReasonNone              = "None"
	ReasonConditionalFailed = "ConditionalCheckFailed"
	ReasonConflict          = "TransactionConflict"
	ReasonItemTooLarge      = "ItemCollectionSizeLimitExceeded"
	ReasonValidation        = "ValidationError"
	ReasonThrottled         = "ThrottlingError"
)

// TxReason is why one action of a canceled transaction failed.
type TxReason struct {
	Code string
	// Old is the current item, for a ConditionalCheckFailed action that asked
	// for it (nil if the item does not exist).
	Old Item
}

// TxCanceledError carries one reason per action, in action order.
type TxCanceledError struct {
	Reasons []TxReason
}

func (e *TxCanceledError) Error() string {
	return fmt.Sprintf("%s: %v", ErrTxCanceled.Error(), e.codes())
}

func (e *TxCanceledError) codes() []string {
	out := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		out[i] = r.Code
	}
	return out
}

// Is makes errors.Is match ErrTxCanceled always, ErrThrottled when any
// reason is throttling, and ErrTxConflict when any reason is a conflict and
// none is throttling: a throttle is never a lost race (re-running the unit
// at once would only add load to a table that is shedding it).
func (e *TxCanceledError) Is(target error) bool {
	switch target {
	case ErrTxCanceled:
		return true
	case ErrThrottled:
		return e.has(isThrottleReason)
	case ErrTxConflict:
		return e.has(func(c string) bool { return c == ReasonConflict }) && !e.has(isThrottleReason)
	}
	return false
}

func (e *TxCanceledError) has(f func(code string) bool) bool {
	for _, r := range e.Reasons {
		if f(r.Code) {
			return true
		}
	}
	return false
}

// isThrottleReason reports whether a cancellation reason is throttling:
// ThrottlingError is what DynamoDB documents for transactions; the other
// two are its throttling exceptions' codes, accepted in case a reason
// carries them.
func isThrottleReason(code string) bool {
	switch code {
	case ReasonThrottled, "ProvisionedThroughputExceeded", "RequestLimitExceeded":
		return true
	}
	return false
}

// Transient returns the sentinel of a cancellation worth sending again
// as it is, with a new token: ErrThrottled when every reason is None,
// TransactionConflict or throttling and one is throttling; ErrTxConflict
// when every reason is None or TransactionConflict and one is a conflict;
// nil when some reason is final (a condition failed, a validation error,
// ...). This and ConditionFailedIn are the one place that reads
// cancellation reasons for what they mean to a caller.
func (e *TxCanceledError) Transient() error {
	conflict, throttled := false, false
	for _, r := range e.Reasons {
		switch {
		case r.Code == ReasonNone || r.Code == "":
		case r.Code == ReasonConflict:
			conflict = true
		case isThrottleReason(r.Code):
			throttled = true
		default:
			return nil
		}
	}
	switch {
	case throttled:
		return ErrThrottled
	case conflict:
		return ErrTxConflict
	}
	return nil
}

// ConditionFailedIn reports whether err is a transaction canceled because
// one of its actions' conditions did not hold (and no action conflicted
// with another transaction, which makes the failure a lost race to run
// again), and returns the cancellation for its per-action reasons. A
// throttled or unavailable transaction is no condition failure: callers
// that read a failed condition as "stale" or "someone else won" must ask
// this, not errors.As(err, *TxCanceledError) or ErrTxCanceled.
func ConditionFailedIn(err error) (*TxCanceledError, bool) {
	var tc *TxCanceledError
	if !errors.As(err, &tc) {
		return nil, false
	}
	failed := false
	for _, r := range tc.Reasons {
		switch r.Code {
		case ReasonConditionalFailed:
			failed = true
		case ReasonConflict:
			return nil, false
		}
	}
	if !failed {
		return nil, false
	}
	return tc, true
}

// ---- request accounting ----------------------------------------------------

// Operation names used in request accounting, as DynamoDB names its APIs.
const (
	OpGetItem            = "GetItem"
	OpBatchGetItem       = "BatchGetItem"
	OpBatchWriteItem     = "BatchWriteItem"
	OpPutItem            = "PutItem"
	OpUpdateItem         = "UpdateItem"
	OpDeleteItem         = "DeleteItem"
	OpTransactWriteItems = "TransactWriteItems"
	OpTransactGetItems   = "TransactGetItems"
	OpQuery              = "Query"
	OpScan               = "Scan"
	OpDescribeTable      = "DescribeTable"
)

type labelKey struct{}

// WithLabel tags a context with the name of what is running (a command name),
// so backends attribute their requests to it.
func WithLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

// Label returns the context's label, "" if none.
func Label(ctx context.Context) string {
	s, _ := ctx.Value(labelKey{}).(string)
	return s
}
