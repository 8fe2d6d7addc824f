//go:build race

package resp

// raceEnabled is set when testing with the race detector, which allocates
// on its own (and lets sync.Pool drop what it is given).
const raceEnabled = true
