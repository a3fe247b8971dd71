package vm

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMachineIdle checks the slot bookkeeping of machine.idle: the slot is
// free for another guest while one idles, taken back before idle returns
// (after the other guest is done with it), and not held after a guest that
// stopped meanwhile.
func TestMachineIdle(t *testing.T) {
	slots := newSlotPool(1, 0)
	newMachine := func() *machine {
		if !slots.acquire(0, nil, nil) {
			t.Fatal("no slot for a new machine")
		}
		return &machine{t: t, ctx: context.Background(), exited: make(chan struct{}), slots: slots, slot: true}
	}

	m := newMachine()
	done := make(chan bool)
	go func() { done <- m.idle(time.Millisecond) }()
	slots.acquire(0, nil, nil) // another guest boots while m idles: the slot is free
	// m cannot take its slot back while the other guest holds it. (A
	// slow machine can only make this miss a defect, never fail.)
	select {
	case <-done:
		t.Fatal("idle returned while another guest held the only slot")
	case <-time.After(50 * time.Millisecond):
	}
	slots.release() // the other guest is done
	if !<-done {
		t.Fatal("idle reported a stopped guest")
	}
	if free, _ := slots.state(); !m.slot || free != 0 {
		t.Errorf("after idle: slot held %v, %d of 1 slots free", m.slot, free)
	}
	slots.release()

	m = newMachine()
	close(m.exited)
	if m.idle(time.Minute) {
		t.Error("idle reported a running guest after QEMU exited")
	}
	if free, _ := slots.state(); m.slot || free != 1 {
		t.Errorf("a stopped guest: slot held %v, %d of 1 slots free", m.slot, free)
	}

	ctx, cancel := context.WithCancel(context.Background())
	m = newMachine()
	m.ctx = ctx
	go func() {
		slots.acquire(0, nil, nil) // the slot is taken for good
		cancel()
	}()
	if m.idle(10 * time.Millisecond) {
		t.Error("idle reported a running guest after the machine's context ended")
	}
	if m.slot {
		t.Error("idle holds a slot it could not take")
	}
	if free, waiting := slots.state(); free != 0 || len(waiting) != 0 {
		t.Errorf("after the context ended: %d slots free, waiters %v; want the one slot taken by the other guest and no waiter", free, waiting)
	}
}

// waitQueued waits until the pool has n waiters.
func waitQueued(t *testing.T, p *slotPool, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if _, w := p.state(); len(w) == n {
			return
		}
		if time.Now().After(deadline) {
			_, w := p.state()
			t.Fatalf("waiters %v; want %d", w, n)
		}
	}
}

// TestSlotPoolOrder checks who a freed slot goes to: a guest taking its
// slot back after idling, then a boot that will idle, then a chain's
// later boot, then the earlier boots in the order they asked; and that a
// waiter whose test ends leaves the queue without a slot, and with none
// lost.
func TestSlotPoolOrder(t *testing.T) {
	p := newSlotPool(1, 1)
	got := make(chan string, 8)
	ask := func(name string, prio int, stop <-chan struct{}) {
		_, w := p.state()
		go func() {
			if p.acquire(prio, stop, nil) {
				got <- name
			} else {
				got <- name + " stopped"
			}
		}()
		waitQueued(t, p, len(w)+1)
	}
	stop := make(chan struct{})
	ask("first boot A", bootPriority(1), nil)
	ask("first boot B", bootPriority(1), nil)
	ask("second boot", bootPriority(2), nil)
	ask("first boot C, its test ends", bootPriority(1), stop)
	ask("fourth boot", bootPriority(4), nil)
	ask("resume", prioResume, nil)
	ask("a boot that will idle", prioIdler, nil)
	if _, w := p.state(); !slices.Equal(w, []int{prioResume, prioIdler, 3, 1, 0, 0, 0}) {
		t.Fatalf("queue %v", w)
	}
	close(stop)
	if g := <-got; g != "first boot C, its test ends stopped" {
		t.Fatalf("%q came first; want the stopped waiter", g)
	}
	var order []string
	for range 6 {
		p.release()
		order = append(order, <-got)
	}
	want := []string{"resume", "a boot that will idle", "fourth boot", "second boot", "first boot A", "first boot B"}
	if !slices.Equal(order, want) {
		t.Errorf("served %q; want %q", order, want)
	}
	p.release()
	if free, w := p.state(); free != 1 || len(w) != 0 {
		t.Errorf("after every guest is done: %d of 1 slots free, waiters %v", free, w)
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
	slots := newVMSlots("2", gate, time.Millisecond)
	if free, _ := slots.state(); slots.size != 2 || free != 1 {
		t.Fatalf("with the gate: %d of %d slots free; want 1 of 2", free, slots.size)
	}
	slots.acquire(0, nil, nil) // a guest boots
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	// The second slot is given back once the gate is gone, with the first
	// guest's still held. (A slow machine only makes this wait longer.)
	timeout := make(chan struct{})
	timer := time.AfterFunc(time.Minute, func() { close(timeout) })
	defer timer.Stop()
	if !slots.acquire(0, timeout, nil) {
		t.Fatal("the second slot was not given back a minute after the gate was removed")
	}
	if free, _ := slots.state(); free != 0 {
		t.Errorf("two guests booted: %d slots free; want 0", free)
	}

	for _, c := range []struct{ jobs, gate string }{{"3", gate}, {"", ""}, {"x", ""}, {"1", "/nonexistent"}} {
		want := 2
		if n, err := strconv.Atoi(c.jobs); err == nil {
			want = n
		}
		if s := newVMSlots(c.jobs, c.gate, time.Millisecond); s.size != want || s.free != want {
			t.Errorf("newVMSlots(%q, %q): %d of %d slots free; want %d of %d", c.jobs, c.gate, s.free, s.size, want, want)
		}
	}
	// jobs 1 with a gate file: the one slot is free.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s := newVMSlots("1", gate, time.Millisecond); s.free != 1 {
		t.Errorf("jobs 1 with a gate: %d slots free; want 1", s.free)
	}
}

// TestRunIncludes checks the reading of go test's -run and -skip that
// decides whether a run builds every image from its start
// (prebuildImages).
func TestRunIncludes(t *testing.T) {
	const name = "TestIntegrationSystemdImages"
	for _, c := range []struct {
		run, skip string
		want      bool
	}{
		{"", "", true},
		{"TestIntegrationSystemd", "", true},
		{"TestIntegrationSystemd/bookworm", "", true},
		{"^TestIntegrationSystemdSmartOSHostLate$", "", false},
		{"TestSlotPool", "", false},
		{"", "TestIntegrationSystemdImages", false},
		{"TestIntegrationSystemd", "Images", false},
		{"", "TestIntegrationSystemdImages/bookworm", true},
		{"[", "", false},
	} {
		for flagName, v := range map[string]string{"test.run": c.run, "test.skip": c.skip} {
			f := flag.Lookup(flagName)
			old := f.Value.String()
			if err := flag.Set(flagName, v); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { flag.Set(flagName, old) })
		}
		if got := runIncludes(name); got != c.want {
			t.Errorf("-run %q -skip %q: runIncludes = %v, want %v", c.run, c.skip, got, c.want)
		}
	}
}

// TestDefaultParallel checks that TestMain set go test's -parallel to
// twice the VM slots when it was not given (defaultParallel).
func TestDefaultParallel(t *testing.T) {
	got, want := flag.Lookup("test.parallel").Value.String(), strconv.Itoa(2*vmSlots.size)
	if got == want {
		return
	}
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.parallel") || strings.HasPrefix(a, "--test.parallel") {
			t.Skipf("-parallel %s was given on the command line", got)
		}
	}
	t.Errorf("-parallel %s; want %s, twice the %d VM slots", got, want, vmSlots.size)
}
