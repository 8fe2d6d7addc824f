package commands

// LockKeys implements model.KeyLocker: a coalesced batch of list pushes
// and pops holds its key's lock while it runs, as the other writers of
// the list do.
func (c *Ctx) LockKeys(keys ...[]byte) func() { return c.lockKeys(keys...) }
