package model

// hotStrings are the Coalescers of the string, counter and read commands.
type hotStrings struct{}
