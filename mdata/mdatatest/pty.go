package mdatatest

import (
	"errors"
	"os"
	"sync"
)

// PTY is a pseudo-terminal pair standing in for a VM's serial port: the
// host serves the master side, clients open the slave at Path (e.g.
// /dev/pts/7) as they would open /dev/ttyS1. The PTY keeps a slave file
// descriptor of its own open, so the master never sees a hang-up between
// clients, and the slave starts in raw mode, so nothing is echoed before a
// client sets its own terminal modes. Bytes written toward the guest while
// no client reads wait in the slave's input queue, like stale bytes on a
// real serial line.
type PTY struct {
	master *os.File
	slave  *os.File
	path   string
	once   sync.Once
	err    error
}

// Path returns the slave device path that clients open.
func (p *PTY) Path() string { return p.path }

// Master returns the master side, for tests that write or read raw bytes
// themselves instead of serving a Host on it.
func (p *PTY) Master() *os.File { return p.master }

// Close closes both sides. It is safe to call more than once.
func (p *PTY) Close() error {
	p.once.Do(func() {
		p.err = errors.Join(p.master.Close(), p.slave.Close())
	})
	return p.err
}
