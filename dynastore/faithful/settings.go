package faithful

import "time"

// Span is a range of latencies; a call's is drawn uniformly from it.
type Span struct {
	Min, Max time.Duration
}

// Latencies are the service times of each kind of call, before Scale.
// They are typical figures of DynamoDB in one region seen from a client in
// the same region, not documented limits: single-item reads and writes
// answer in single-digit milliseconds (AWS: "consistent single-digit
// millisecond performance"); transactions take longer, as they write
// through a coordinator in two phases.
type Latencies struct {
	Get, Write, Query, BatchGet, TxWrite, TxGet, Scan Span
	// TailRate is the share of calls that take TailFactor times as long:
	// the tail every client of a network service sees.
	TailRate   float64
	TailFactor float64
}

// DefaultLatencies are typical figures for DynamoDB within a region.
var DefaultLatencies = Latencies{
	Get:        Span{3 * time.Millisecond, 8 * time.Millisecond},
	Write:      Span{3 * time.Millisecond, 8 * time.Millisecond},
	Query:      Span{3 * time.Millisecond, 10 * time.Millisecond},
	BatchGet:   Span{4 * time.Millisecond, 10 * time.Millisecond},
	TxWrite:    Span{10 * time.Millisecond, 30 * time.Millisecond},
	TxGet:      Span{10 * time.Millisecond, 30 * time.Millisecond},
	Scan:       Span{5 * time.Millisecond, 20 * time.Millisecond},
	TailRate:   0.01,
	TailFactor: 5,
}

// Capacity is the throughput DynamoDB serves before it throttles.
type Capacity struct {
	// PartitionRCU and PartitionWCU: one partition serves at most 3,000
	// read units or 1,000 write units per second, as one budget (a
	// linear combination: reads/3000 + writes/1000 <= 1 per second).
	// AWS: "Best practices for designing and using partition keys
	// effectively", "each partition ... supports up to 3,000 RCUs and
	// 1,000 WCUs"; a partition key's items live in one partition, so a
	// hot key meets this limit.
	PartitionRCU, PartitionWCU float64
	// TableRRU and TableWRU are a new on-demand table's ceiling, twice
	// its initial "previous peak". AWS: "On-demand capacity mode, initial
	// throughput": a new on-demand table serves up to 4,000 write request
	// units and 12,000 read request units per second.
	TableRRU, TableWRU float64
	// PeakWindow: traffic above twice the previous peak within this
	// window is throttled. AWS: "Peak traffic and scaling properties":
	// "you might experience throttling if you exceed double your previous
	// peak within 30 minutes". A peak raises the ceiling once it is
	// PeakWindow old.
	PeakWindow time.Duration
}

// DefaultCapacity is DynamoDB's, for an on-demand table.
var DefaultCapacity = Capacity{
	PartitionRCU: 3000,
	PartitionWCU: 1000,
	TableRRU:     12000,
	TableWRU:     4000,
	PeakWindow:   30 * time.Minute,
}

// Faults are the probabilities, per attempt, of failures that the
// service or the network produces; each is sorted as the retry policy
// must sort it: applied or not, or unknown. AWS documents that
// 5xx errors and timeouts happen and must be retried ("Error handling
// with DynamoDB": InternalServerError, ServiceUnavailable); their rates
// are not documented.
type Faults struct {
	// InternalError is a 500 after the request was applied: its outcome
	// is unknown to the client.
	InternalError float64
	// Unavailable is a 503 before the request was applied.
	Unavailable float64
	// Timeout is a request applied whose answer never comes: the client
	// waits until its attempt times out.
	Timeout float64
	// ResetBefore is a connection reset before the request reached the
	// service; ResetAfter one after it was applied.
	ResetBefore, ResetAfter float64
}

// DefaultFaults are rare faults. AWS publishes no rates; these are
// chosen so that a run of some ten thousand requests meets them, which
// is what a client needs to see handled (a healthy region has fewer).
var DefaultFaults = Faults{
	InternalError: 1e-4,
	Unavailable:   1e-4,
	Timeout:       2e-5,
	ResetBefore:   2e-5,
	ResetAfter:    2e-5,
}
