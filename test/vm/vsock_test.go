package vm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// vsockModules give the guest AF_VSOCK with the loopback transport, which
// carries connections to CID 1 (VMADDR_CID_LOCAL) inside the guest.
var vsockModules = []string{"vsock", "vmw_vsock_virtio_transport_common", "vsock_loopback"}

// TestIntegrationVMVsock runs the mdata tools over a real AF_VSOCK stream:
// inside the guest a simulated host (mdatatest.Default's store) listens on
// a vsock port, and mdata-get, mdata-list, mdata-put and mdata-delete
// reach it through vsock_loopback with SEEDKEEPER_MDATA=vsock:1:PORT: the
// sample values, a put/get round trip (also of a value of 96 KB), a
// deleted key, and recovery when the host drops the connection halfway
// through a reply or ignores the probe. A port nobody listens on makes
// mdata-get give up with exit status 10 once its --timeout has passed.
func TestIntegrationVMVsock(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	g := needGuest(t)
	const port, deadPort = "5252", "5253"
	key, value := "vsock-roundtrip", "put-over-vsock-"+newUUID(t)[:8]
	big := strings.Repeat("seedkeeper-vsock-"+newUUID(t)[:7], 4000) // 96,000 bytes, more than one socket buffer

	m := startVM(t, g, vmConfig{
		modules: vsockModules,
		script: `
mdata-vsock ` + port + `
env SEEDKEEPER_MDATA vsock:1:` + port + `
run get /usr/sbin/mdata-get --timeout 30s sdc:uuid
run get-hostname /usr/sbin/mdata-get --timeout 30s sdc:hostname
run list /usr/sbin/mdata-list --timeout 30s
run put /usr/sbin/mdata-put --timeout 30s ` + key + ` ` + value + `
run get-put /usr/sbin/mdata-get --timeout 30s ` + key + `
run delete /usr/sbin/mdata-delete --timeout 30s ` + key + `
run get-deleted /usr/sbin/mdata-get --timeout 30s ` + key + `
run put-big /usr/sbin/mdata-put --timeout 30s big ` + big + `
run get-big /usr/sbin/mdata-get --timeout 30s big
mdata-vsock-fault drop 1
run get-drop /usr/sbin/mdata-get --timeout 30s sdc:uuid
mdata-vsock-fault silent 1
run get-silent /usr/sbin/mdata-get --timeout 30s sdc:uuid
env SEEDKEEPER_MDATA vsock:1:` + deadPort + `
run no-listener /usr/sbin/mdata-get --timeout 3s sdc:uuid
mdata-vsock-stop
`,
	})
	m.waitDone()

	for _, name := range vsockModules {
		if _, ok := m.con.find("module " + name); !ok {
			t.Errorf("the guest did not load %s", name)
		}
	}
	if _, ok := m.con.find("mdata-vsock listening " + port + " "); !ok {
		t.Fatalf("the in-guest host did not listen on vsock port %s; guest errors: %q", port, m.guestErrors())
	}

	want := mdatatest.Default()
	hostname, _ := want.Get("sdc:hostname")
	for _, c := range []struct {
		name   string
		code   int
		stdout string
	}{
		{"get", 0, mdatatest.SampleUUID + "\n"},
		{"get-hostname", 0, string(hostname) + "\n"},
		{"list", 0, strings.Join(want.Keys(), "\n") + "\n"},
		{"put", 0, ""},
		{"get-put", 0, value + "\n"},
		{"delete", 0, ""},
		{"get-deleted", 1, ""}, // the reference tools' "no such key"
		{"put-big", 0, ""},
		{"get-big", 0, big + "\n"},
		{"get-drop", 0, mdatatest.SampleUUID + "\n"},
		{"get-silent", 0, mdatatest.SampleUUID + "\n"},
		{"no-listener", 10, ""},
	} {
		if code := m.exit(c.name); code != c.code {
			t.Errorf("%s: exit status %d, want %d", c.name, code, c.code)
		}
		if got := string(m.stdout(c.name)); got != c.stdout {
			if len(got) > 200 {
				got = got[:200] + "..."
			}
			t.Errorf("%s printed %q (%d bytes), want %d bytes", c.name, got, len(m.stdout(c.name)), len(c.stdout))
		}
	}
	if !m.con.hasLine("[no-listener] ", "vsock:1:"+deadPort) {
		t.Errorf("mdata-get's error for the port with no listener does not name vsock:1:%s", deadPort)
	}

	var st mdatatest.Stats
	s := m.waitMark("mdata-vsock stats ")
	if err := json.Unmarshal([]byte(strings.TrimPrefix(s, "mdata-vsock stats ")), &st); err != nil {
		t.Fatalf("the in-guest host's stats %q: %v", s, err)
	}
	t.Logf("in-guest host: %+v", st)
	// One connection per tool run, and one more after the dropped one; an
	// unanswered probe is sent again on the same connection.
	if st.Streams < 12 {
		t.Errorf("the in-guest host served %d vsock connections, want at least 12 (11 runs, 1 reconnect)", st.Streams)
	}
	if st.Faults != 2 {
		t.Errorf("the faults acted %d times, want 2 (drop, silent)", st.Faults)
	}
	for op, n := range map[string]int{"KEYS": 1, "PUT": 2, "DELETE": 1} {
		if st.Requests[op] != n {
			t.Errorf("the in-guest host received %d %s requests, want %d (all: %v)", st.Requests[op], op, n, st.Requests)
		}
	}
	if st.Malformed != 0 || st.Unknown != 0 {
		t.Errorf("the in-guest host saw %d malformed frames and %d unknown lines over vsock", st.Malformed, st.Unknown)
	}
	noGuestErrors(t, m)
}
