package resp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
)

// TestPushOverLimit: client-output-buffer-limit pubsub's default: past the
// hard limit at once; past the soft limit only once it stayed above it for
// 60 seconds; back under the soft limit, the count starts again.
func TestPushOverLimit(t *testing.T) {
	c := &conn{}
	lim := commands.DefaultPubSubOutputLimit
	soft, hard := int(lim.Soft), int(lim.Hard)
	require.False(t, c.overLimit(soft, lim))
	require.True(t, c.overLimit(hard+1, lim))

	require.False(t, c.overLimit(soft+1, lim), "just above the soft limit")
	require.False(t, c.push.softSince.IsZero())
	c.push.softSince = time.Now().Add(-lim.SoftFor - time.Second)
	require.True(t, c.overLimit(soft+1, lim), "above it for longer than 60 s")

	require.False(t, c.overLimit(soft, lim), "back under it")
	require.True(t, c.push.softSince.IsZero())

	// Zero bytes is no limit.
	none := commands.OutputLimit{}
	require.False(t, c.overLimit(hard+1, none))
	require.True(t, c.push.softSince.IsZero())
}
