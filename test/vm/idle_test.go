package vm

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
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

// TestVMSlotsGate checks newVMSlots: one slot of two while the gate file
// exists, both once it is removed, and every slot at once without a gate
// file or with jobs 1.
func TestVMSlotsGate(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	free := func(slots chan struct{}) int { return cap(slots) - len(slots) }

	slots := newVMSlots("2", gate, time.Millisecond)
	if cap(slots) != 2 || free(slots) != 1 {
		t.Fatalf("with the gate: %d of %d slots free; want 1 of 2", free(slots), cap(slots))
	}
	slots <- struct{}{} // a guest boots
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	// The second slot is given back once the gate is gone, with the first
	// guest's still held. (A slow machine only makes this wait longer.)
	select {
	case slots <- struct{}{}:
	case <-time.After(time.Minute):
		t.Fatal("the second slot was not given back a minute after the gate was removed")
	}
	if free(slots) != 0 {
		t.Errorf("two guests booted: %d slots free; want 0", free(slots))
	}

	for _, c := range []struct{ jobs, gate string }{{"3", gate}, {"", ""}, {"x", ""}, {"1", "/nonexistent"}} {
		want := 2
		if n, err := strconv.Atoi(c.jobs); err == nil {
			want = n
		}
		if s := newVMSlots(c.jobs, c.gate, time.Millisecond); cap(s) != want || free(s) != want {
			t.Errorf("newVMSlots(%q, %q): %d of %d slots free; want %d of %d", c.jobs, c.gate, free(s), cap(s), want, want)
		}
	}
	// jobs 1 with a gate file: the one slot is free.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s := newVMSlots("1", gate, time.Millisecond); free(s) != 1 {
		t.Errorf("jobs 1 with a gate: %d slots free; want 1", free(s))
	}
}
