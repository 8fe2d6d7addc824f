package commands

func registerKeys(t *Table) {}
