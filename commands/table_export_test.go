package commands

// MetadataForTest lists the commands with metadata: Redis's generated
// table (redis_commands_gen.go) and redamo's own (redamoCommands).
func MetadataForTest() (redis, redamo []string) {
	for name := range redisCommands {
		redis = append(redis, name)
	}
	for name := range redamoCommands {
		redamo = append(redamo, name)
	}
	return redis, redamo
}

// LookupFullNameForTest finds a command or subcommand by its full name
// ("client|id").
func (t *Table) LookupFullNameForTest(name string) *Command { return t.lookupFullName(name) }
