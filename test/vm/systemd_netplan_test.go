package vm

import (
	"encoding/json"
	"strings"
	"testing"
)

// checkNetplanOwned asserts, on the netplan image (its /etc/netplan holds
// the catch-all image builders leave: DHCP on every en* and eth* NIC),
// that the NICs seedkeeper owns are configured by seedkeeper's files
// alone: networkd gives each seedkeeper's 05-seedkeeper-* file, not
// netplan's 10-netplan-all-en (which took eth0 through its alternative
// name enp0s3 and ran DHCP on it), the static NIC holds its static address
// and no lease, and systemd-networkd-wait-online, with netplan's drop-in
// naming the NIC as it was called before seedkeeper renamed it, finishes
// without its timeout (it waited 120 s on every boot); and no link was
// configured by another file first (checkOnlyOurFilesConfigured). macs
// are the owned NICs present at the report, hot-added ones too.
func checkNetplanOwned(t *testing.T, r *sdReport, macs ...string) {
	t.Helper()
	checkOurNetworkFile(t, r, macs...)
	checkOnlyOurFilesConfigured(t, r)
	if got := r.addrs(t, "addr.json", nicStatic.MAC); len(got) != 1 || got[0] != addrStatic {
		t.Errorf("%s: the static NIC has %v, want only %s (no DHCP lease from netplan's catch-all)", r.name, got, addrStatic)
	}
	unit := r.get(t, "wait-online-unit")
	if !strings.Contains(unit, "10-netplan.conf") || !strings.Contains(unit, " -i ") {
		t.Errorf("%s: netplan wrote no wait-online drop-in naming links; the case is not exercised:\n%s", r.name, unit)
	}
	if u := r.unit(t, "systemd-networkd-wait-online"); u["Result"] != "success" || u["ExecMainStatus"] != "0" || u["ActiveState"] != "active" {
		t.Errorf("%s: systemd-networkd-wait-online.service %v (a timeout exits 1)\n%s", r.name, u, unit)
	}
}

// checkOurNetworkFile asserts that networkd gave each NIC of macs one of
// seedkeeper's files.
func checkOurNetworkFile(t *testing.T, r *sdReport, macs ...string) {
	t.Helper()
	blocks := networkctlBlocks(r.get(t, "networkctl"))
	for _, mac := range macs {
		name := r.linkName(t, mac)
		b, ok := blocks[name]
		if !ok {
			t.Errorf("%s: networkctl shows no link %s (%s):\n%s", r.name, name, mac, r.get(t, "networkctl"))
			continue
		}
		if !strings.Contains(b, "Network File: /run/systemd/network/05-seedkeeper-") {
			t.Errorf("%s: networkd did not give %s (%s) seedkeeper's file:\n%s", r.name, name, mac, b)
		}
	}
}

// checkOnlyOurFilesConfigured asserts, on a boot where seedkeeper owns
// every NIC, that networkd configured every link from one of seedkeeper's
// files from the first: no journal line of networkd's says it configured
// one with another file, not even for the moment before seedkeeper's
// watch had applied a hot-added NIC (netplan's catch-all ran DHCP on it
// then, until seedkeeper wrote its file ahead of the NIC).
func checkOnlyOurFilesConfigured(t *testing.T, r *sdReport) {
	t.Helper()
	// "Configuring with", "Reconfiguring with".
	ours, other := journalSplit(t, r, "systemd-networkd[", "onfiguring with ", "/run/systemd/network/05-seedkeeper-", "")
	if len(ours) == 0 {
		t.Errorf("%s: no journal line of networkd's says it configured a link with seedkeeper's file; the check sees nothing", r.name)
	}
	if len(other) > 0 {
		t.Errorf("%s: networkd configured a link with a file not seedkeeper's:\n%s\n(and with seedkeeper's:\n%s)", r.name, strings.Join(other, "\n"), strings.Join(ours, "\n"))
	}
}

// journalSplit picks the journal lines of the process (its "name[" tag)
// that say marker, but not those that say skip (when it is not empty),
// and splits them by whether what follows marker begins with ours.
func journalSplit(t *testing.T, r *sdReport, process, marker, ours, skip string) (mine, others []string) {
	t.Helper()
	for _, l := range strings.Split(r.get(t, "journal"), "\n") {
		_, rest, ok := strings.Cut(l, marker)
		if !ok || !strings.Contains(l, process) || skip != "" && strings.Contains(l, skip) {
			continue
		}
		if strings.HasPrefix(rest, ours) {
			mine = append(mine, l)
		} else {
			others = append(others, l)
		}
	}
	return mine, others
}

// networkctlBlocks splits `networkctl status --all` into the block of
// each link, by its name ("● 2: eth0" begins one).
func networkctlBlocks(s string) map[string]string {
	out := map[string]string{}
	var name string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) == 3 && strings.HasSuffix(f[1], ":") && (f[0] == "●" || f[0] == "*") {
			name = f[2]
		}
		if name != "" {
			out[name] += l + "\n"
		}
	}
	return out
}

// linkName is the name of the link with this MAC in the report's
// addresses.
func (r *sdReport) linkName(t *testing.T, mac string) string {
	t.Helper()
	var links []struct {
		Ifname  string `json:"ifname"`
		Address string `json:"address"`
	}
	if err := json.Unmarshal([]byte(r.get(t, "addr.json")), &links); err != nil {
		t.Fatalf("%s: addr.json: %v", r.name, err)
	}
	for _, l := range links {
		if strings.EqualFold(l.Address, mac) {
			return l.Ifname
		}
	}
	t.Fatalf("%s: no link has MAC %s", r.name, mac)
	return ""
}
