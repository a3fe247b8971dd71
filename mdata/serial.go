package mdata

// Serial returns a transport over a serial port, such as /dev/ttyS1 in a
// KVM or bhyve guest. Each Open takes the port's fcntl write lock, the lock
// mdata-client and cloud-init take, so the three never interleave.
func Serial(path string) Transport { return serialTransport(path) }

type serialTransport string

func (s serialTransport) String() string { return "serial:" + string(s) }
func (s serialTransport) Shared() bool   { return true }
