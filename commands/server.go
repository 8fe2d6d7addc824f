package commands

func registerServer(t *Table) {}
