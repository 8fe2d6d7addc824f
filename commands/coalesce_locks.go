package commands

// LockKeys implements model.KeyLocker: a coalesced batch of list pushes
// and pops, or of sorted-set writes, holds its key's lock while it runs,
// as the other writers of the key do.
func (c *Ctx) LockKeys(keys ...[]byte) func() { return c.lockKeys(keys...) }
