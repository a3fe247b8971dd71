package mdatatest

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// NewPTY opens a new pseudo-terminal pair (/dev/ptmx), unlocks it, opens
// and keeps its slave, and puts the slave in raw mode.
func NewPTY() (*PTY, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("mdatatest: opening pty master: %w", err)
	}
	var n int
	if err := control(m, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return fmt.Errorf("unlocking pty: %w", err)
		}
		var err error
		if n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN); err != nil {
			return fmt.Errorf("getting pty number: %w", err)
		}
		return nil
	}); err != nil {
		m.Close()
		return nil, fmt.Errorf("mdatatest: %w", err)
	}
	path := "/dev/pts/" + strconv.Itoa(n)
	s, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("mdatatest: opening pty slave: %w", err)
	}
	if err := control(s, makeRaw); err != nil {
		m.Close()
		s.Close()
		return nil, fmt.Errorf("mdatatest: setting raw mode on %s: %w", path, err)
	}
	return &PTY{master: m, slave: s, path: path}, nil
}

// control runs f on f's descriptor without putting it in blocking mode
// (as File.Fd would), so Close still interrupts a blocked Read.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// makeRaw is cfmakeraw(3).
func makeRaw(fd int) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}
