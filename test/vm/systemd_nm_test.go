package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nmCatchAll is the profile the "nm-catchall" image variant leaves in
// /etc/NetworkManager/system-connections, as an image builder (or
// netplan's NetworkManager renderer, whose profiles set no
// autoconnect-priority either) leaves one: DHCP on every en* and eth*
// NIC.
const nmCatchAll = "image-catch-all"

func installNMCatchAll(root string) error {
	dir := filepath.Join(root, "etc/NetworkManager/system-connections")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, nmCatchAll+".nmconnection"), []byte(`[connection]
id=`+nmCatchAll+`
uuid=0d6c6a8e-6f1c-4f4e-9a53-5eed0000ca11
type=ethernet
autoconnect=true

[match]
interface-name=en*;eth*;

[ipv4]
method=auto

[ipv6]
method=auto
`), 0o600)
}

// checkNMOnlyOurProfiles asserts, on a boot with a catch-all profile
// (catchAll: the nm-catchall variant's, or netplan's) where seedkeeper
// owns every NIC (hot-added ones too), that
// NetworkManager activated seedkeeper's profiles alone: no journal line
// of its says it started the catch-all, or any profile not seedkeeper's,
// on any device, not even on a hot-added NIC before seedkeeper's watch
// had applied it (the catch-all took it then, until seedkeeper wrote its
// profile ahead of the NIC), nor an in-memory "external" connection made
// for a NIC the watch had applied before NetworkManager took it; and that
// asked to, NetworkManager refused to
// activate the catch-all on every owned device (seedkeeper's drop-in
// allows only seedkeeper's profiles there) — sk.nmtry's nm-try, of
// devices devices.
func checkNMOnlyOurProfiles(t *testing.T, r *sdReport, catchAll string, devices int) {
	t.Helper()
	if !strings.Contains(r.get(t, "nm-connections"), catchAll+":") {
		t.Errorf("%s: NetworkManager has no %s profile; the case is not exercised:\n%s", r.name, catchAll, r.get(t, "nm-connections"))
	}
	// NetworkManager 1.42 and later keep lo up themselves.
	ours, other := journalSplit(t, r, "NetworkManager[", "Activation: starting connection '", "seedkeeper-", "device (lo):")
	if len(ours) == 0 {
		t.Errorf("%s: no journal line of NetworkManager's says it started seedkeeper's profile; the check sees nothing", r.name)
	}
	if len(other) > 0 {
		t.Errorf("%s: NetworkManager started a profile not seedkeeper's:\n%s\n(and seedkeeper's:\n%s)", r.name, strings.Join(other, "\n"), strings.Join(ours, "\n"))
	}
	tries := strings.Split(strings.TrimSpace(r.get(t, "nm-try")), "\n")
	if len(tries) != devices || tries[0] == "" {
		t.Errorf("%s: nm-try has %d devices, want %d:\n%s", r.name, len(tries), devices, r.get(t, "nm-try"))
	}
	for _, l := range tries {
		// Refused for the reason under test, not because the profile
		// does not match the device anyway.
		if f := strings.Fields(l); len(f) < 2 || f[1] == "0" || !strings.Contains(l, "(device configuration doesn't allow this connection)") {
			t.Errorf("%s: NetworkManager did not refuse %s on an owned device by its device configuration: %s", r.name, catchAll, l)
		}
	}
}

// journalSplit on journal lines as NetworkManager 1.42 and networkd 252
// write them (from kept reports).
func TestJournalSplit(t *testing.T) {
	r := &sdReport{name: "t", files: map[string][]byte{"journal": []byte(`[  112.23] vm101 NetworkManager[304]: <info>  [1796157750.7172] device (lo): Activation: starting connection 'lo' (f68761c5)
[  114.26] vm101 NetworkManager[304]: <info>  [1796157752.7465] device (eth0): Activation: starting connection 'seedkeeper-eth0' (481a633d)
[  145.78] vm101 NetworkManager[304]: <info>  [1796157784.2732] device (ens7): Activation: starting connection 'ens7' (e883c692)
[  150.01] vm101 systemd-networkd[210]: eth2: Configuring with /run/systemd/network/05-seedkeeper-eth2.network.
[  153.59] vm101 systemd-networkd[210]: eth2: Reconfiguring with /run/systemd/network/10-netplan-all-en.network.
[  160.00] vm101 seedkeeper[99]: Activation: starting connection 'x'
`)}}
	ours, other := journalSplit(t, r, "NetworkManager[", "Activation: starting connection '", "seedkeeper-", "device (lo):")
	if len(ours) != 1 || !strings.Contains(ours[0], "'seedkeeper-eth0'") || len(other) != 1 || !strings.Contains(other[0], "'ens7'") {
		t.Errorf("NetworkManager: ours %q, other %q", ours, other)
	}
	ours, other = journalSplit(t, r, "systemd-networkd[", "onfiguring with ", "/run/systemd/network/05-seedkeeper-", "")
	if len(ours) != 1 || !strings.Contains(ours[0], "05-seedkeeper-eth2") || len(other) != 1 || !strings.Contains(other[0], "10-netplan-all-en") {
		t.Errorf("networkd: ours %q, other %q", ours, other)
	}
}
