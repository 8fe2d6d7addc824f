// Package model is the Redis data model over DynamoDB items, the layer
// between redamo's commands and its store: every store request a data
// command makes is decided here (the coordination recipes are coord's). It
// holds the namespaces of the table (namespaces.go), the key item (its
// attributes, codec and conditions: keyitem.go), big values (strings past
// one item, in chunks published by one write: bigvalue.go), the collection engine
// (collection.go) with its layouts, generations, pending changes, sweeper
// (sweeper.go) and per-process caches (Process), and the units of work:
// the optimistic transaction (Txn), its commit and the retry policy
// (Retry). Its API takes a Scope (a context, where to read and write, a
// database and a clock reading) and plain Go values, never RESP types.
// docs/architecture.md describes the item layouts and the path of a write.
package model
