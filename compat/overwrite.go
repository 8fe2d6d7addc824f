package compat

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

// Overwrite starts writers clients of addr that SET keys round robin, each
// from its own offset and with values no other writer uses, until the
// returned stop is called; stop waits for them. Tests of caches that must
// be invalidated (client tracking) read against it. A writer that fails
// reports the error to t and stops.
func Overwrite(t testing.TB, addr string, keys []string, writers int) (stop func()) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Dial(addr, 20*time.Second)
			if err != nil {
				t.Errorf("writer %d: %v", w, err)
				return
			}
			defer c.Close()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if _, err := c.DoStrings("SET", keys[(i+w)%len(keys)], strconv.Itoa(w*1000000+i)); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		}()
	}
	return func() {
		close(done)
		wg.Wait()
	}
}
