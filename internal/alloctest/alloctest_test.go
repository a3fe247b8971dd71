package alloctest

import "testing"

var sink []byte

func TestBytesCountsAnAllocation(t *testing.T) {
	if n := Bytes(func() { sink = make([]byte, 1<<20) }); n < 1<<20 {
		t.Errorf("Bytes = %d, want at least 1 MiB", n)
	}
}
