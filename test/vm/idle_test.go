package vm

import (
	"context"
	"testing"
	"time"
)

// TestMachineIdle checks the slot bookkeeping of machine.idle: the slot is
// free for another guest while one idles, taken back before idle returns
// (after the other guest is done with it), and not held after a guest that
// stopped meanwhile.
func TestMachineIdle(t *testing.T) {
	slots := make(chan struct{}, 1)
	newMachine := func() *machine {
		slots <- struct{}{}
		return &machine{t: t, ctx: context.Background(), exited: make(chan struct{}), slots: slots, slot: true}
	}

	m := newMachine()
	other := make(chan struct{})
	go func() {
		slots <- struct{}{} // another guest boots while m idles
		time.Sleep(100 * time.Millisecond)
		<-slots
		close(other)
	}()
	start := time.Now()
	if !m.idle(20 * time.Millisecond) {
		t.Fatal("idle reported a stopped guest")
	}
	select {
	case <-other:
	default:
		t.Errorf("idle returned after %v while the other guest held the only slot", time.Since(start))
	}
	if !m.slot || len(slots) != 1 {
		t.Errorf("after idle: slot held %v, %d of 1 slots taken", m.slot, len(slots))
	}
	<-slots

	m = newMachine()
	close(m.exited)
	if m.idle(time.Minute) {
		t.Error("idle reported a running guest after QEMU exited")
	}
	if m.slot || len(slots) != 0 {
		t.Errorf("a stopped guest: slot held %v, %d of 1 slots taken", m.slot, len(slots))
	}

	ctx, cancel := context.WithCancel(context.Background())
	m = newMachine()
	m.ctx = ctx
	slots2 := m.slots
	go func() {
		slots2 <- struct{}{} // the slot is taken for good
		cancel()
	}()
	if m.idle(10 * time.Millisecond) {
		t.Error("idle reported a running guest after the machine's context ended")
	}
	if m.slot {
		t.Error("idle holds a slot it could not take")
	}
}
