package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// seedkeeper watch on SmartOS reads the metadata for every hotplug event
// over the one mdata session it holds (one handshake, however many
// events), and lets go of the port between requests: mdata-get run while
// watch runs gets its answer.
func TestIntegrationWatchSmartOSOneSession(t *testing.T) {
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
	env := []string{"SEEDKEEPER_MDATA=serial:" + p.Path()}
	root := scratchRoot(t, "SmartDC HVM", "Joyent", "")
	// watch applies only from the source the last boot decided on.
	if r := runBinary(t, env, "boot", "--root", root, "--network", "off"); r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	before := h.Stats()

	notify := newNotifySocket(t)
	bin := seedkeeperBinary(t)
	cmd := exec.Command("ip", "netns", "exec", n.name, bin, "watch", "--network", "apply", "--root", root, "--drivers", "veth")
	cmd.Env = testEnv(append([]string{"NOTIFY_SOCKET=" + notify.path}, env...))
	w := &watchProc{cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w.log, w.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.err = cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			cmd.Process.Kill()
			<-w.done
		}
	})
	waitFor(t, "READY=1", func() bool { return notify.has("READY=1") })

	addVeth(t, n, peers, "eth1", mac1)
	waitFor(t, "eth1's address", func() bool { return n.hasAddr(t, "eth1", "192.0.2.21/24") })
	r := runBinary(t, env, "mdata", "get", "--timeout", "10s", "sdc:uuid")
	if r.code != exitOK || r.stdout != mdatatest.SampleUUID+"\n" {
		t.Fatalf("mdata get while watch runs: %v\n%s", r, w.log)
	}
	addVeth(t, n, peers, "eth2", mac2)
	waitFor(t, "eth2's address", func() bool { return n.hasAddr(t, "eth2", "192.0.2.22/24") })
	w.stop(t)

	// watch: one handshake for the allowlist read and both events;
	// mdata get: one.
	if s := h.Stats(); s.Negotiations-before.Negotiations != 2 || s.Requests["GET"]-before.Requests["GET"] < 3 {
		t.Errorf("host stats %+v (after boot: %+v), want 2 more handshakes\n%s", s, before, w.log)
	}
	if strings.Contains(w.log.String(), "level=WARN") {
		t.Errorf("warnings in the watch log:\n%s", w.log)
	}
}
