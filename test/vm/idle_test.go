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
	done := make(chan bool)
	go func() { done <- m.idle(time.Millisecond) }()
	slots <- struct{}{} // another guest boots while m idles: the slot is free
	// m cannot take its slot back while the other guest holds it. (A
	// slow machine can only make this miss a defect, never fail.)
	select {
	case <-done:
		t.Fatal("idle returned while another guest held the only slot")
	case <-time.After(50 * time.Millisecond):
	}
	<-slots // the other guest is done
	if !<-done {
		t.Fatal("idle reported a stopped guest")
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
