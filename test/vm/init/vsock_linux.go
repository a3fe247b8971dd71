package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/mdlayher/vsock"

	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// vsockHost is the simulated metadata host of an mdata-vsock step: an
// mdatatest host with the Default store, serving every connection
// accepted on a vsock port as its own session.
type vsockHost struct {
	port uint32
	h    *mdatatest.Host
	ln   *vsock.Listener
	wg   sync.WaitGroup
}

// maxTranscriptLine bounds the host's transcript lines on the console:
// a large value is not worth a slow serial console's time.
const maxTranscriptLine = 300

// startVsockHost listens on the vsock port (any local CID, so that
// vsock_loopback's CID 1 reaches it) and serves in the background.
func (r *runner) startVsockHost(portArg string) error {
	if r.vsock != nil {
		return fmt.Errorf("a host already listens on vsock port %d", r.vsock.port)
	}
	port, err := strconv.ParseUint(portArg, 10, 32)
	if err != nil {
		return fmt.Errorf("port %q: want a decimal number", portArg)
	}
	h := mdatatest.NewHost(mdatatest.Default())
	h.Logf = func(format string, args ...any) {
		l := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", `\n`)
		if len(l) > maxTranscriptLine {
			l = fmt.Sprintf("%s... (%d bytes)", l[:maxTranscriptLine], len(l))
		}
		r.con.line("[mdata-vsock] " + l)
	}
	ln, err := vsock.Listen(uint32(port), nil)
	if err != nil {
		h.Close()
		return fmt.Errorf("listening on vsock port %d: %w", port, err)
	}
	v := &vsockHost{port: uint32(port), h: h, ln: ln}
	r.vsock = v
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					r.con.mark("error mdata-vsock accept: %v", err)
				}
				return
			}
			v.wg.Add(1)
			go func() {
				defer v.wg.Done()
				defer c.Close()
				if err := h.Serve(c); err != nil && !errors.Is(err, mdatatest.ErrClosed) {
					r.con.line("[mdata-vsock] serving " + c.RemoteAddr().String() + ": " + err.Error())
				}
			}()
		}
	}()
	cid := "unknown"
	if id, err := vsock.ContextID(); err == nil {
		cid = strconv.FormatUint(uint64(id), 10)
	}
	r.con.mark("mdata-vsock listening %d %s %s", port, ln.Addr(), cid)
	return nil
}

// stopVsockHost stops the host of the mdata-vsock step and prints its
// counters as JSON.
func (r *runner) stopVsockHost() error {
	v := r.vsock
	if v == nil {
		return fmt.Errorf("no mdata-vsock host is running")
	}
	r.vsock = nil
	v.ln.Close()
	v.h.Close()
	v.wg.Wait()
	b, err := json.Marshal(v.h.Stats())
	if err != nil {
		return err
	}
	r.con.mark("mdata-vsock stats %s", b)
	return nil
}

// setVsockFault makes the mdata-vsock host misbehave (mdatatest.Fault)
// for its next count uses (0: for good; "normal" restores service).
func (r *runner) setVsockFault(mode, count string) error {
	if r.vsock == nil {
		return fmt.Errorf("no mdata-vsock host is running")
	}
	m, err := mdatatest.ParseMode(mode)
	if err != nil {
		return err
	}
	n := 0
	if count != "" {
		if n, err = strconv.Atoi(count); err != nil || n < 0 {
			return fmt.Errorf("count %q: want a number of uses, 0 for all", count)
		}
	}
	f := mdatatest.Fault{Mode: m, Count: n}
	r.vsock.h.SetFault(f)
	r.con.mark("mdata-vsock fault %s", f)
	return nil
}
