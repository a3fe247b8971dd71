package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// Watch on SmartOS reads the metadata for every hotplug event over the
// one mdata session it holds (one handshake, however many events), and
// lets go of the port between requests: another client's request made
// while Watch runs gets its answer. (The port lock is an open file
// description lock: a second client in this process is kept off the port
// as another process would be.)
func TestIntegrationWatchSmartOSOneSession(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	const mac1, mac2 = "02:5e:00:00:02:01", "02:5e:00:00:02:02"
	st := smartosStore()
	st.SetString("sdc:nics", fmt.Sprintf(`[{"interface":"eth1","mac":%q,"ips":["192.0.2.21/24"],"primary":true},`+
		`{"interface":"eth2","mac":%q,"ips":["192.0.2.22/24"]}]`, mac1, mac2))
	st.SetString("sdc:routes", "[]")
	st.SetString("sdc:resolvers", "[]")
	h := mdatatest.NewHost(st)
	t.Cleanup(func() { h.Close() })
	p, err := h.StartPTY()
	if err != nil {
		t.Skipf("needs a pty (/dev/ptmx): %v", err)
	}
	root := kvmRoot(t, map[string]string{
		"sys/class/dmi/id/product_name": "SmartDC HVM\n",
		"sys/class/dmi/id/sys_vendor":   "Joyent\n",
		"etc/seedkeeper/config.yaml":    fmt.Sprintf("mdata: {transport: %q}\n", "serial:"+p.Path()),
	})
	if err := os.Remove(filepath.Join(root, "sys/class/dmi/id/product_uuid")); err != nil {
		t.Fatal(err)
	}
	// Watch applies only from the source the last boot decided on.
	e := agent.LoadEnv(root, "", nil)
	if _, err := agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkOff}); err != nil {
		t.Fatalf("Boot: %v", err)
	}
	before := h.Stats()

	w := startWatch(t, n, root, "veth")
	waitFor(t, "READY=1", func() bool { return w.notify.has("READY=1") })

	n.AddVeth(t, peers, "eth1", mac1)
	waitFor(t, "eth1's address", func() bool { return n.HasAddr(t, "eth1", "192.0.2.21/24") })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mdata.New(mdata.Serial(p.Path()), nil)
	v, err := c.Get(ctx, "sdc:uuid")
	c.Close()
	if err != nil || string(v) != mdatatest.SampleUUID {
		t.Fatalf("sdc:uuid from another client while Watch runs: %q, %v\n%s", v, err, w.log)
	}
	n.AddVeth(t, peers, "eth2", mac2)
	waitFor(t, "eth2's address", func() bool { return n.HasAddr(t, "eth2", "192.0.2.22/24") })
	w.stop(t)

	// Watch: one handshake for the allowlist read and both events; the
	// other client: one.
	if s := h.Stats(); s.Negotiations-before.Negotiations != 2 || s.Requests["GET"]-before.Requests["GET"] < 3 {
		t.Errorf("host stats %+v (after boot: %+v), want 2 more handshakes\n%s", s, before, w.log)
	}
	if strings.Contains(w.log.String(), "level=WARN") {
		t.Errorf("warnings in the watch log:\n%s", w.log)
	}
}
