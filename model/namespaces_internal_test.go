package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNamespacesDistinct: no two namespaces share a first byte.
func TestNamespacesDistinct(t *testing.T) {
	seen := map[byte]bool{}
	for _, ns := range []byte{NsKey, NsMembers, nsGens, NsCursor, nsCollScan, NsScript, NsFunctions, NsLock, NsLeader, NsQueue, NsQueueMeta, NsBus, NsExpiry} {
		require.False(t, seen[ns], "%q declared twice", ns)
		seen[ns] = true
	}
}
