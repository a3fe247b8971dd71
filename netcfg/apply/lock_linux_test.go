package apply

import (
	"path/filepath"
	"testing"
	"time"
)

// Two writers of the receipt never overlap: the second waits until the
// first lets go.
func TestLockReceiptSerialises(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "network-receipt.json")
	unlock, err := LockReceipt(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		u, err := LockReceipt(path)
		if err != nil {
			t.Error(err)
		} else {
			u()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a second writer got the lock while the first held it")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the second writer never got the lock")
	}
}
