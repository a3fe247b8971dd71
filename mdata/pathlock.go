package mdata

import (
	"context"
	"sync"
)

// pathLocks holds one semaphore per serial port path, so that every client
// in this process takes turns on a port before any of them asks the kernel
// (fcntl locks do not exclude the threads of one process from each other).
var pathLocks sync.Map // path -> chan struct{}

// lockPath takes the in-process lock of path, as long as ctx allows.
func lockPath(ctx context.Context, path string) (release func(), err error) {
	v, _ := pathLocks.LoadOrStore(path, make(chan struct{}, 1))
	ch := v.(chan struct{})
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
