package resp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPushOverLimit: client-output-buffer-limit pubsub's default: past the
// hard limit at once; past the soft limit only once it stayed above it for
// 60 seconds; back under the soft limit, the count starts again.
func TestPushOverLimit(t *testing.T) {
	c := &conn{}
	require.False(t, c.overLimit(pubsubSoftLimit))
	require.True(t, c.overLimit(pubsubHardLimit+1))

	require.False(t, c.overLimit(pubsubSoftLimit+1), "just above the soft limit")
	require.False(t, c.push.softSince.IsZero())
	c.push.softSince = time.Now().Add(-softLimitFor - time.Second)
	require.True(t, c.overLimit(pubsubSoftLimit+1), "above it for longer than 60 s")

	require.False(t, c.overLimit(pubsubSoftLimit), "back under it")
	require.True(t, c.push.softSince.IsZero())
}
