package apply

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
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

// The lock was once created through a symbolic link.
func TestLockReceiptRefusesALink(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "network-receipt.json")
	target := filepath.Join(dir, "created-elsewhere")
	if err := os.Symlink(target, path+".lock"); err != nil {
		t.Fatal(err)
	}
	if unlock, err := LockReceipt(path); !errors.Is(err, fsutil.ErrSymlink) {
		if err == nil {
			unlock()
		}
		t.Errorf("LockReceipt through a link = %v, want ErrSymlink", err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("the link's target was created")
	}
}
