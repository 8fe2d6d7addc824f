// Package bench holds redamo's Go benchmarks of the command path (command
// table, handler, store and reply encoding, without the network) on the
// embedded memory store, and benchtool, the load tool scripts/bench.sh
// drives over TCP. Run them with `make bench` or
// `go test -run '^$' -bench . -benchmem ./bench/...`.
package bench
