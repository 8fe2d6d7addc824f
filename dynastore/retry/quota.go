package retry

import (
	"sync"
	"sync/atomic"
)

// The figures of the AWS SDKs' "standard" retry mode (the AWS SDKs and
// Tools reference guide, "Retry behavior"): a bucket of 500 retry tokens
// per client, a retry costs 5, a retry after a timeout or connection
// error 10, and a request that succeeds on its first attempt returns 1
// (one that succeeds on a retry returns what that retry cost). An empty
// bucket makes a failure final instead of retried, so a throttled or
// failing fleet stops multiplying its own load by the attempt count.
const (
	QuotaTokens      = 500
	RetryCost        = 5
	TimeoutRetryCost = 10
	SuccessRefill    = 1
)

// Quota is a retry quota shared by every request that names it: a token
// bucket that retries draw from and successes refill. It is safe for
// concurrent use.
type Quota struct {
	mu       sync.Mutex
	tokens   int
	capacity int
	refused  atomic.Int64
}

// NewQuota returns a full quota of capacity tokens.
func NewQuota(capacity int) *Quota {
	return &Quota{tokens: capacity, capacity: capacity}
}

// ProcessQuota is the quota of the whole process: the stores share it, as
// the AWS SDKs share one per client, so that one overloaded table cannot
// make every request of the process retry at once.
var ProcessQuota = NewQuota(QuotaTokens)

// take draws cost tokens for a retry; false (and one refusal counted)
// when fewer are left.
func (q *Quota) take(cost int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.tokens < cost {
		q.refused.Add(1)
		return false
	}
	q.tokens -= cost
	return true
}

// put returns n tokens, up to the capacity.
func (q *Quota) put(n int) {
	q.mu.Lock()
	q.tokens = min(q.tokens+n, q.capacity)
	q.mu.Unlock()
}

// Available is the number of tokens left.
func (q *Quota) Available() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.tokens
}

// Refusals counts the retries refused since the start for want of tokens.
func (q *Quota) Refusals() int64 { return q.refused.Load() }
