package model

import "github.com/redamo/redamo/dynastore"

// The store's errors a command answers with a reply of its own, re-exported
// so that the command layer words them without importing the store.
var (
	ErrItemTooLarge   = dynastore.ErrItemTooLarge
	ErrKeyTooLarge    = dynastore.ErrKeyTooLarge
	ErrTxTooLarge     = dynastore.ErrTxTooLarge
	ErrOutcomeUnknown = dynastore.ErrOutcomeUnknown
	ErrThrottled      = dynastore.ErrThrottled
	ErrTxConflict     = dynastore.ErrTxConflict
	ErrUnavailable    = dynastore.ErrUnavailable
)

// Clocked is a store that measures how far the local clock is from its own
// (dynastore.Clocked).
type Clocked = dynastore.Clocked
