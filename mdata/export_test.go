package mdata

// Drainer returns the drain of a session on the shared line conn, for the
// benchmarks of package mdata_test (which imports mdatatest, and
// mdatatest imports mdata).
func Drainer(conn Conn) func() error {
	s := &session{conn: conn, shared: true, to: DefaultTimeouts}
	return s.drain
}
