package commands_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/scripting"
)

// The generated table holds what redamo registers and nothing more: a
// command dropped from a family leaves no metadata behind (rerun go
// generate), nor does an override of a command that is gone. redamo's
// table is commands' with scripting's rows added (scripting.Register).
func TestMetadataIsRegistered(t *testing.T) {
	tab := commands.NewTable()
	scripting.Register(tab)
	redis, redamo := commands.MetadataForTest()
	for _, name := range redis {
		require.NotNil(t, tab.LookupFullNameForTest(name), "%s: in redis_commands_gen.go, not registered", name)
	}
	for _, name := range redamo {
		require.NotNil(t, tab.LookupFullNameForTest(name), "%s: in redamoCommands, not registered", name)
		require.False(t, slices.Contains(redis, name), "%s: in redamoCommands, and in redis_commands_gen.go too (rerun go generate)", name)
	}
}
