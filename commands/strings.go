package commands

func registerStrings(t *Table) {}
