package commands

import (
	"time"

	"github.com/redamo/redamo/dynastore"
)

// Version is the Redis version redamo reports (INFO, HELLO): clients gate
// features on it, so it names the Redis 7 line whose replies redamo matches.
const Version = "7.0.15"

// Server is the state shared by all connections of one redamo process. It holds
// nothing correctness depends on across instances: that lives in the Store.
type Server struct {
	Store dynastore.Store
	// Stats counts the Store's requests per command and operation.
	Stats *dynastore.Stats
	Table *Table
	// Clock is the time source (tests replace it).
	Clock   func() time.Time
	Config  Config
	Clients Clients
	Started time.Time
}

// Config is the part of the process configuration commands can see.
type Config struct {
	Addr        string
	RequirePass string
	StoreName   string // "memory" or "dynamodb"
	TableName   string
	Region      string
	Endpoint    string
	// ProtoMaxBulkLen is the largest bulk string accepted, in bytes.
	ProtoMaxBulkLen int64
	RedamoVersion   string
}

// Clients is the registry of open connections, implemented by resp/.
type Clients interface {
	// List returns every open connection.
	List() []*Conn
	// Kill closes connection id; false if there is none.
	Kill(id int64) bool
}
