package model

import "github.com/redamo/redamo/dynastore/retry"

// RetryQuota reports the process's retry quota, which both stores draw on
// (retry.ProcessQuota): the retries it has left, and how many it refused
// (requests that failed at once instead).
func RetryQuota() (available int, refusals int64) {
	return retry.ProcessQuota.Available(), retry.ProcessQuota.Refusals()
}
