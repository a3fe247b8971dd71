// Package mdata is a client for the SmartOS/Triton metadata protocol: it
// asks the host agent for instance metadata over the VM's second serial port
// (KVM and bhyve guests), over the zone's unix socket (native and LX zones)
// or over vsock.
//
// A Client never returns a wrong value and never gives up on its own. Each
// session follows the reference client: open the port, take the same fcntl
// write lock as mdata-client and cloud-init, drain what stale input is
// pending (ending at a short quiet gap), send a bare "\n" and require
// "invalid command", then "NEGOTIATE V2" (falling back to V1 for GET and
// KEYS). A line that is not the answer the handshake waits for (a killed
// client's leftovers, still arriving) restarts it: drain again, probe
// again. Every read has an inactivity timeout: the wait for the first byte
// of an answer, and a short one once a line has begun, so a reply cut off
// mid-line is noticed at once while a slow line and a multi-MiB value still
// get through. On any timeout or I/O error the port is closed, reopened and
// the request sent again with a fresh request ID. V2 replies with a bad
// length or CRC or another request ID (stale replies from a killed client)
// are skipped. A GET or KEYS left unanswered is followed by a bare "\n":
// when the host answers that but not the request, the request was lost
// (a host restarted) and goes again at once.
//
// The three answers a host can give are kept apart: ErrNotFound (the key
// does not exist; never retried), a *HostError (FAILURE, with the host's
// message) and a value, possibly empty. How long to wait is the caller's
// decision, through the context: without a deadline a Client waits until
// the host answers, as the reference tools do, logging progress every few
// seconds.
//
// # Transports
//
// Detect picks the transport the way the reference tools do: a zone socket
// if one exists, the serial port only when DMI says the machine is a SmartOS
// guest. The environment variable SEEDKEEPER_MDATA overrides it:
//
//	serial:/dev/ttyS1
//	unix:/native/.zonecontrol/metadata.sock
//	vsock:CID:PORT
//
// # Stability
//
// This package is part of seedkeeper's stable API, with mdata/mdatatest, datasource and netcfg. Within a major
// version its exported names keep their meaning and are not removed; before
// 1.0.0 a minor release may change them, and CHANGELOG.md says how under
// "Breaking". No exported signature mentions an internal package: all of it
// can be used from another module, with values computed at run time.
package mdata
