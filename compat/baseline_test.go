package compat

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// TestBaseline checks that redamo's COMMAND lists every command of
// testdata/baseline_commands.txt. Cases run only where COMMAND lists their
// commands, so this is what keeps a dropped command from passing as "not run".
func TestBaseline(t *testing.T) {
	data, err := os.ReadFile("testdata/baseline_commands.txt")
	require.NoError(t, err)
	srv := testserver.Start(t, nil)
	tg := redamoTarget(t, "memory", srv.Addr)
	var missing []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, name := range strings.Fields(line) {
			if !tg.Supports(name) {
				missing = append(missing, name)
			}
		}
	}
	require.Empty(t, missing, "redamo's COMMAND does not list these baseline commands")
}
