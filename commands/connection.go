package commands

func registerConnection(t *Table) {}
