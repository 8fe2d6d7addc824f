package commands

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every command is found by its name in any case, as a string and as the
// bytes a client sent; nothing else is found, not even what Unicode case
// folding would turn into a name (Redis compares names in ASCII).
func TestLookup(t *testing.T) {
	tab := NewTable()
	extra := &Command{Name: "X.Extra", Arity: 1}
	tab.Add(extra)
	all := tab.All()
	require.Greater(t, len(all), 100)
	for _, c := range all {
		for _, name := range []string{c.Name, strings.ToUpper(c.Name), strings.ToUpper(c.Name[:1]) + c.Name[1:]} {
			require.Same(t, c, tab.Lookup(name), name)
			require.Same(t, c, lookup(tab, []byte(name)), name)
		}
	}
	require.Same(t, extra, tab.Lookup("x.extra"))
	for _, name := range []string{"", "ge", "gett", "get ", "\u212Aeys", "client|list", strings.Repeat("get", 400)} {
		require.Nil(t, tab.Lookup(name), "%q", name)
		require.Nil(t, lookup(tab, []byte(name)), "%q", name)
	}
	require.Nil(t, (&Table{}).Lookup("get"))
}

// A command's metadata comes from the generated table or redamoCommands; a
// row without any, or a name registered twice, stops the server at start-up.
func TestRegisterNeedsMetadata(t *testing.T) {
	require.NotPanics(t, func() { NewTable() })
	for _, rows := range [][]Row{
		{{Name: "nosuch", Run: cmdPing}},
		{{Name: "nosuch|sub", Run: cmdPing}},
		{{Name: "client|nosuch", Run: cmdPing}},
		{{Name: "ping", Run: cmdPing}, {Name: "ping", Run: cmdPing}},
		{{Name: "client|id", Run: cmdClientID}, {Name: "client|id", Run: cmdClientID}},
	} {
		require.Panics(t, func() { (&Table{}).Register(rows) }, "%v", rows)
	}
	tab := &Table{}
	tab.Register([]Row{{Name: "client|id", Run: cmdClientID}})
	client := tab.Lookup("client")
	require.NotNil(t, client, "a subcommand brings its container")
	require.Equal(t, "A container for client connection commands", client.Summary)
	require.Equal(t, []*Command{tab.lookupFullName("client|id")}, client.Subcommands)
	require.Equal(t, -2, client.Arity)
}

// The generated table holds what redamo registers and nothing more: a
// command dropped from a family leaves no metadata behind (rerun go
// generate), nor does an override of a command that is gone.
func TestMetadataIsRegistered(t *testing.T) {
	tab := NewTable()
	for name := range redisCommands {
		require.NotNil(t, tab.lookupFullName(name), "%s: in redis_commands_gen.go, not registered", name)
	}
	for name := range redamoCommands {
		require.NotNil(t, tab.lookupFullName(name), "%s: in redamoCommands, not registered", name)
		require.Nil(t, redisCommands[name], "%s: in redamoCommands, and in redis_commands_gen.go too (rerun go generate)", name)
	}
}
