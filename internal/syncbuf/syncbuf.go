// Package syncbuf is a bytes.Buffer that one goroutine may write while
// others read it: the log of a flow or a daemon a test watches.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is safe for one writer and any number of readers. The zero
// value is an empty buffer.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
