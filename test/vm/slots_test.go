package vm

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Priorities of a slot request (slotPool.acquire).
const (
	// prioResume is a running guest taking its slot back after it idled
	// (machine.idle): it holds its memory, and its boot's bound runs.
	prioResume = math.MaxInt
	// prioIdler is a boot that will idle for minutes (sdBoot.Idles),
	// served before every boot that will not: its guest gives its slot to
	// another while it waits, so the wait costs the run nothing if it
	// starts early, and its whole length if it starts last.
	prioIdler = math.MaxInt - 1
)

// bootPriority is the priority of a disk's boot number n (1 for its
// first): a boot that continues a chain comes before one that starts a
// chain, and a later boot of a chain before an earlier one of another.
// The chains of several boots set the end of a run; served first come
// first, each boot after a chain's first queued behind every boot that
// asked meanwhile, and a run ended with one chain's last boots alone on
// the host, the other slot idle. Single boots fill the gaps between.
func bootPriority(n int) int { return n - 1 }

// slotPool is the guests' slots: a counting semaphore whose waiters are
// served highest priority first, then in the order they asked.
type slotPool struct {
	mu      sync.Mutex
	size    int
	free    int
	waiting []*slotWaiter // highest priority first, then first come
}

type slotWaiter struct {
	prio  int
	ready chan struct{} // closed when the slot is handed over
}

// newSlotPool makes a pool of size slots, held of which are taken until
// released.
func newSlotPool(size, held int) *slotPool {
	return &slotPool{size: size, free: size - held}
}

// acquire takes a slot, after every waiter of a higher or the same
// priority that asked before it. It reports false, holding no slot, when
// stopA or stopB (either may be nil) is closed first.
func (p *slotPool) acquire(prio int, stopA, stopB <-chan struct{}) bool {
	p.mu.Lock()
	if p.free > 0 {
		p.free--
		p.mu.Unlock()
		return true
	}
	w := &slotWaiter{prio: prio, ready: make(chan struct{})}
	i := slices.IndexFunc(p.waiting, func(o *slotWaiter) bool { return o.prio < prio })
	if i < 0 {
		i = len(p.waiting)
	}
	p.waiting = slices.Insert(p.waiting, i, w)
	p.mu.Unlock()
	select {
	case <-w.ready:
		return true
	case <-stopA:
	case <-stopB:
	}
	p.mu.Lock()
	if i := slices.Index(p.waiting, w); i >= 0 {
		p.waiting = slices.Delete(p.waiting, i, i+1)
		p.mu.Unlock()
		return false
	}
	p.mu.Unlock()
	// The slot was handed over as the wait ended: pass it on.
	p.release()
	return false
}

// release gives a slot back: to the first waiter, else to the pool.
func (p *slotPool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.waiting) > 0 {
		w := p.waiting[0]
		p.waiting = p.waiting[1:]
		close(w.ready)
		return
	}
	if p.free == p.size {
		panic("slotPool: a slot released that was not taken")
	}
	p.free++
}

// state reports the free slots and the waiters' priorities in the order
// they will be served.
func (p *slotPool) state() (free int, waiting []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.waiting {
		waiting = append(waiting, w.prio)
	}
	return p.free, waiting
}

// newVMSlots makes jobs slots (2 when jobs is not a positive number). While
// the file gate exists, all but one are held, and they are given back
// once it is gone (looked for every poll): make test (scripts/test.sh)
// boots one guest beside the other packages' tests, which leave a core
// idle for minutes near their end, and both once those are done.
func newVMSlots(jobs, gate string, poll time.Duration) *slotPool {
	n, err := strconv.Atoi(jobs)
	if err != nil || n < 1 {
		n = 2
	}
	if gate == "" || n == 1 {
		return newSlotPool(n, 0)
	}
	if _, err := os.Stat(gate); err != nil {
		return newSlotPool(n, 0)
	}
	p := newSlotPool(n, n-1)
	go func() {
		for {
			time.Sleep(poll)
			if _, err := os.Stat(gate); errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
		for range n - 1 {
			p.release()
		}
	}()
	return p
}
