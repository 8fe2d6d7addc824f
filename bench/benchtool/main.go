// Command benchtool is the load tool behind scripts/bench.sh.
//
//	benchtool compare  one client: each hot Redis command through redamo vs
//	                   the single raw DynamoDB request it maps to, side by
//	                   side in the same run, on the same table
//	benchtool large    one client: single-entry commands on a list, a set
//	                   and a hash of N entries, on redamo and on redis-server
//	benchtool queue    one queue's push and pop throughput by shard count,
//	                   on a store that limits each partition as DynamoDB does
//	benchtool faithful each command family through several instances on
//	                   one embedded store in its AWS-faithful mode, at
//	                   several client counts: throughput, latency, error
//	                   replies, units and dollars per command, invariants
//	benchtool hotkey   one key under 1 to 256 clients through one or three
//	                   instances, on a store limited per partition as
//	                   DynamoDB is and in the AWS-faithful mode: throughput,
//	                   latency, requests and units per command
//	benchtool cost     per command a redamo instance served: DynamoDB
//	                   requests, read and write units and dollars per
//	                   million calls, beside the floor
//	benchtool pubsub   publish/subscribe across running instances on one
//	                   table: publish-to-receive latency, and messages per
//	                   second with S subscribers
//	benchtool conns    opens N idle connections and holds them, so the script
//	                   can read redamo's RSS with them open
//	benchtool port     prints a free TCP port on 127.0.0.1
//
// The raw side uses the AWS SDK directly (no dynastore code), so the ratio is
// the true overhead of redamo over the request it makes.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "compare":
		err = runCompare(os.Args[2:])
	case "large":
		err = runLarge(os.Args[2:])
	case "queue":
		err = runQueue(os.Args[2:])
	case "faithful":
		err = runFaithful(os.Args[2:])
	case "hotkey":
		err = runHotKey(os.Args[2:])
	case "cost":
		err = runCost(os.Args[2:])
	case "pubsub":
		err = runPubSub(os.Args[2:])
	case "conns":
		err = runConns(os.Args[2:])
	case "port":
		err = runPort()
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchtool compare|large|queue|faithful|hotkey|cost|pubsub|conns|port [flags] (-h for flags)")
	os.Exit(2)
}
