package model

// hotColls are the Coalescers of the collection commands.
type hotColls struct{}
