package mdatatest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.bug.st/serial"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// serialGuest is a client on the pty's slave, opened as a serial port.
type serialGuest struct {
	t    testing.TB
	port serial.Port
}

func startPTY(t testing.TB, h *Host) *PTY {
	t.Helper()
	p, err := h.StartPTY()
	if err != nil {
		t.Fatalf("StartPTY: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return p
}

func openSerial(t testing.TB, path string) *serialGuest {
	t.Helper()
	port, err := serial.Open(path, &serial.Mode{BaudRate: 115200})
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	t.Cleanup(func() { port.Close() })
	if err := port.SetReadTimeout(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	return &serialGuest{t: t, port: port}
}

func (g *serialGuest) send(s string) {
	g.t.Helper()
	if _, err := g.port.Write([]byte(s)); err != nil {
		g.t.Fatalf("writing %q: %v", s, err)
	}
}

func (g *serialGuest) expect(want string) {
	g.t.Helper()
	got := make([]byte, 0, len(want))
	buf := make([]byte, len(want))
	for len(got) < len(want) {
		n, err := g.port.Read(buf[:len(want)-len(got)])
		if err != nil || n == 0 {
			g.t.Fatalf("reply: got %q (err %v, timed out %v), want %q", got, err, n == 0, want)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != want {
		g.t.Fatalf("reply:\n got %q\nwant %q", got, want)
	}
}

// TestIntegrationPTYSession replays the captured mdata-get session
// through a pty opened with go.bug.st/serial.
func TestIntegrationPTYSession(t *testing.T) {
	testenv.Integration(t)
	h := NewHost(Default())
	p := startPTY(t, h)
	if !strings.HasPrefix(p.Path(), "/dev/pts/") {
		t.Errorf("Path = %q", p.Path())
	}
	g := openSerial(t, p.Path())
	g.send("\n")
	g.expect("invalid command\n")
	g.send("NEGOTIATE V2\n")
	g.expect("V2_OK\n")
	g.send(getUUID)
	g.expect(replyUUID)
	g.port.Close()

	// The next process on the same port.
	g2 := openSerial(t, p.Path())
	g2.send("GET sdc:hostname\n")
	g2.expect("SUCCESS\nweb01\n.\n")
	if st := h.Stats(); st.Streams != 1 || st.Served != 2 {
		t.Errorf("stats %+v; want one shared stream", st)
	}
}

// TestIntegrationPTYSharedLineBuffer: a serial port is one stream, so a
// partial line from a killed client is still in the host's buffer when the
// next client starts; a unix socket connection starts clean.
func TestIntegrationPTYSharedLineBuffer(t *testing.T) {
	testenv.Integration(t)
	h := NewHost(vectorStore())
	p := startPTY(t, h)
	g := openSerial(t, p.Path())
	g.send("GET sdc:hostn")
	if err := h.Wait(ctx(t), func(s Stats) bool { return s.BytesIn == 13 }); err != nil {
		t.Fatal(err)
	}
	g.port.Close() // killed mid-request
	g2 := openSerial(t, p.Path())
	g2.send("ame\n")
	g2.expect("SUCCESS\nweb01\n.\n")

	sock := t.TempDir() + "/metadata.sock"
	ln, err := h.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	c1 := dialGuest(t, sock)
	c1.send("GET sdc:hostn")
	if err := h.Wait(ctx(t), func(s Stats) bool { return s.BytesIn == 13+4+13 }); err != nil {
		t.Fatal(err)
	}
	c1.c.Close()
	c2 := dialGuest(t, sock)
	c2.send("ame\n")
	c2.expect("FAILURE\n") // "ame": an unknown command
	ln.Close()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket file after Close: %v", err)
	}
}

// TestIntegrationPTYDrop: on a pty a dropped reply just stops; the stream
// stays, so the rest of the next reply follows the half line.
func TestIntegrationPTYDrop(t *testing.T) {
	testenv.Integration(t)
	h := NewHost(vectorStore())
	h.SetFault(Fault{Mode: Drop, Count: 1})
	p := startPTY(t, h)
	g := openSerial(t, p.Path())
	g.send(getUUID)
	g.send("\n")
	g.expect(replyUUID[:len(replyUUID)/2] + "invalid command\n")
}

// TestIntegrationPTYStaleOutput: bytes written toward the guest while no
// client reads wait in the slave's input queue for the next client, as
// stale bytes do on a serial line.
func TestIntegrationPTYStaleOutput(t *testing.T) {
	testenv.Integration(t)
	h := NewHost(vectorStore())
	p := startPTY(t, h)
	stale := frame("01020304", "SUCCESS", []byte(StaleValue))
	if err := h.InjectOutput([]byte(stale)); err != nil {
		t.Fatal(err)
	}
	g := openSerial(t, p.Path())
	g.send("\n")
	g.expect(stale + "invalid command\n")
}

// cloudInitScript talks to the pty with Debian's cloud-init SmartOS client.
const cloudInitScript = `
import json, sys
from cloudinit.sources.DataSourceSmartOS import JoyentMetadataLegacySerialClient
c = JoyentMetadataLegacySerialClient(device=sys.argv[1], timeout=5, smartos_type="kvm")
out = {}
try:
    c.open_transport()
    out["uuid"] = c.get("sdc:uuid")
    out["hostname"] = c.get("hostname")
    out["nics"] = c.get("sdc:nics")
    out["keys"] = c.get("root_authorized_keys")
    out["user-script"] = c.get("user-script")
    out["missing"] = c.get("no-such-key")
    out["list"] = c.list()
    c.put("cloud-init-test", "written by cloud-init")
    out["after_put"] = c.get("cloud-init-test")
    c.close_transport()
except Exception as e:
    out["error"] = type(e).__name__ + ": " + str(e)
print(json.dumps(out))
`

func cloudInit(t *testing.T, path string) map[string]any {
	t.Helper()
	if _, err := os.Stat("/usr/lib/python3/dist-packages/cloudinit/sources/DataSourceSmartOS.py"); err != nil {
		t.Skip("needs Debian's cloud-init and python3-serial: run `sudo make test` (scripts/test-deps.sh installs them)")
	}
	out, err := exec.Command("/usr/bin/python3", "-c", cloudInitScript, path).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		if bytes.Contains(stderr, []byte("No module named")) {
			t.Skipf("cloud-init's SmartOS client cannot load: %s; run `sudo make test`", stderr)
		}
		t.Fatalf("cloud-init client: %v\n%s", err, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("cloud-init output %q: %v", out, err)
	}
	return res
}

// TestIntegrationCloudInitClient checks the simulator against an
// independent client: Debian's cloud-init 22.4.2 must read the right
// values over the pty.
func TestIntegrationCloudInitClient(t *testing.T) {
	testenv.Integration(t)
	st := Default()
	h := NewHost(st)
	p := startPTY(t, h)
	keys := st.Keys()
	res := cloudInit(t, p.Path())
	if e, ok := res["error"]; ok {
		t.Fatalf("cloud-init failed: %v\n%s", e, h.TranscriptString())
	}
	for field, key := range map[string]string{
		"uuid": "sdc:uuid", "hostname": "hostname", "nics": "sdc:nics",
		"keys": "root_authorized_keys", "user-script": "user-script",
	} {
		v, _ := st.Get(key)
		if res[field] != string(v) {
			t.Errorf("cloud-init got %s = %q, want %q", key, res[field], v)
		}
	}
	if res["missing"] != nil {
		t.Errorf("missing key: %v", res["missing"])
	}
	list, _ := json.Marshal(res["list"])
	want, _ := json.Marshal(keys)
	if string(list) != string(want) {
		t.Errorf("cloud-init list = %s, want %s", list, want)
	}
	if res["after_put"] != "written by cloud-init" {
		t.Errorf("after put: %v", res["after_put"])
	}
	if v, _ := st.Get("cloud-init-test"); string(v) != "written by cloud-init" {
		t.Errorf("store after cloud-init put: %q", v)
	}
	if st := h.Stats(); st.Malformed != 0 || st.Unknown != 0 || st.Probes == 0 || st.Negotiations != 1 {
		t.Errorf("stats %+v\n%s", st, h.TranscriptString())
	}
}

// TestIntegrationCloudInitSeesFaults proves the faulty frames are what
// they claim, by the errors an independent client reports.
func TestIntegrationCloudInitSeesFaults(t *testing.T) {
	testenv.Integration(t)
	for _, tt := range []struct {
		fault Fault
		want  string // in cloud-init's error; "" means success
	}{
		{Fault{Mode: StaleFrame, Count: 1}, "Request ID mismatch"},
		{Fault{Mode: BadCRC, Count: 1}, "Invalid checksum"},
		{Fault{Mode: V1Only}, `Invalid response "FAILURE" to "NEGOTIATE V2"`},
		// cloud-init's flush retries at once on FAILURE to the probe.
		{Fault{Mode: FailProbe, Count: 3}, ""},
		{Fault{Mode: GarbageLine, Count: 1}, "'ascii' codec can't decode"},
	} {
		t.Run(tt.fault.Mode.String(), func(t *testing.T) {
			h := NewHost(Default())
			h.SetFault(tt.fault)
			p := startPTY(t, h)
			res := cloudInit(t, p.Path())
			got, _ := res["error"].(string)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("cloud-init error = %q, want %q\n%s", got, tt.want, h.TranscriptString())
			}
			if tt.want == "" && res["uuid"] != SampleUUID {
				t.Errorf("uuid = %v", res["uuid"])
			}
		})
	}
}

// BenchmarkPTYGET is one V2 GET round trip over a pty opened with
// go.bug.st/serial.
func BenchmarkPTYGET(b *testing.B) {
	h := NewHost(Default())
	p := startPTY(b, h)
	g := openSerial(b, p.Path())
	for b.Loop() {
		g.send(getUUID)
		g.expect(replyUUID)
	}
}
