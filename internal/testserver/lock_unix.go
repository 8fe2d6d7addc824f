//go:build unix

package testserver

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f (flock), shared by every process.
func lockFile(f *os.File) (unlock func(), err error) {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
}
