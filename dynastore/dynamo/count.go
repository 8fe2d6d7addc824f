package dynamo

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/retry"
)

var _ dynastore.Counter = (*Store)(nil)

// itemCountRefresh is how long a DescribeTable's ItemCount serves before
// another is asked for. DynamoDB itself refreshes the figure about every
// six hours, so asking more often would only spend control-plane calls,
// which have their own account-wide rate limits, on the same number.
const itemCountRefresh = 5 * time.Minute

// itemCount caches the table's ItemCount for CountItems.
type itemCount struct {
	mu  sync.Mutex
	n   int64
	at  time.Time // when n was read; zero: never
	err error     // the last refresh's failure, while n was never read
}

// CountItems implements dynastore.Counter with DescribeTable's ItemCount:
// free, but counting every item of the table (every key item, every member
// item of a large collection, every queue message, ...) as of DynamoDB's
// last refresh, so filter and each are not used and the count is not exact.
// One DescribeTable serves every caller for itemCountRefresh; a failed
// refresh keeps serving the last count it had.
func (s *Store) CountItems(ctx context.Context, _ dynastore.Cond, _ func(dynastore.Item)) (int64, bool, error) {
	c := &s.count
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < itemCountRefresh {
		return c.n, false, c.err
	}
	var n int64
	err := s.call(ctx, dynastore.OpDescribeTable, retry.Idempotent, func(actx context.Context, _ *dynastore.Request) error {
		out, err := s.db.DescribeTable(actx, &dynamodb.DescribeTableInput{TableName: &s.table})
		if err != nil {
			return err
		}
		if out.Table != nil {
			n = aws.ToInt64(out.Table.ItemCount)
		}
		return nil
	})
	// A failure too waits out the interval, so that a missing permission
	// does not cost a failed call per INFO.
	hadCount := !c.at.IsZero() && c.err == nil
	c.at = time.Now()
	switch {
	case err == nil:
		c.n, c.err = n, nil
	case !hadCount:
		c.err = fmt.Errorf("dynamo: counting the items of table %q: %w", s.table, err)
	}
	return c.n, false, c.err
}
