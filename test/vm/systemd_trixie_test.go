package vm

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// The core scenarios on Debian 13 (cloud-init 25.1.4, systemd 257): on the
// networkd image and on the netplan image (netplan.io over networkd, with
// the catch-all image builders leave in /etc/netplan, and systemd-resolved
// as netplan images have it). Boots are chained on
// one disk so that each carries several checks:
//
//	networkd:   no-source [→ first (+ hot-added NIC) → resolver-changed ∥ clone → unchanged]
//	netplan:                first (+ hot-added NIC) [→ resolver-changed ∥ clone → unchanged]
//	netplan-nm:            [first (+ hot-added NIC)]
//
// Two boots in make test; the bracketed part runs in make e2e
// (SEEDKEEPER_VM_MATRIX=full): the netplan image renders through
// networkd, so its first boot shows networkd 257 with seedkeeper's
// files, and forky's netplan chain boots the later ones in make test
// (TestIntegrationSystemdForky) over the same stack; netplan over
// NetworkManager renders an image's catch-all profile, beside which
// Debian 12's NetworkManager image boots in make test.

// netplanNetworkPending holds back the network checks on the netplan image
// (addresses, routes, resolver, the hot-added NIC, and wait-online, masked
// on its boots meanwhile). They run: seedkeeper's networkd files sort
// before netplan's catch-all, and a renamed NIC keeps the name netplan's
// wait-online drop-in knows it by (checkNetplanOwned).
const netplanNetworkPending = false

// cloudInitUnits are the cloud-init services a boot runs on each release:
// the no-source drop-in must skip every one of them, and seedkeeper-boot
// must be done before the first.
var cloudInitUnits = map[string][]string{
	relBookworm: {"cloud-init-local", "cloud-init", "cloud-config", "cloud-final"},
	relTrixie:   {"cloud-init-main", "cloud-init-local", "cloud-init-network", "cloud-config", "cloud-final"},
	relForky:    {"cloud-init-main", "cloud-init-local", "cloud-init-network", "cloud-config", "cloud-final"},
}

// TestIntegrationSystemdTrixie runs resolver change, clone, unchanged boot,
// hotplug and no source on the Debian 13 images, and checks the unit
// ordering against cloud-init 25's real units.
func TestIntegrationSystemdTrixie(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	for _, stack := range []string{"networkd", "netplan"} {
		t.Run(stack, func(t *testing.T) {
			t.Parallel()
			releaseScenarios(t, relTrixie, stack)
		})
	}
	t.Run("netplan-nm", func(t *testing.T) {
		if !fullMatrix() {
			// Its check, seedkeeper's profiles active alone over an
			// image's catch-all NetworkManager profile, runs in make
			// test on Debian 12's NetworkManager image (nm-catchall);
			// this image only renders the catch-all through netplan.
			t.Skip("netplan over NetworkManager boots in make e2e (SEEDKEEPER_VM_MATRIX=full); make test shows the catch-all profile on Debian 12's NetworkManager image")
		}
		t.Parallel()
		netplanNMScenario(t, relTrixie)
	})
}

// netplanNMScenario boots the image where netplan renders its catch-all
// for NetworkManager (netplan-all-en, netplan-all-eth; no
// autoconnect-priority) once, with a NIC hot-added: NetworkManager
// activates seedkeeper's profiles alone on the owned NICs, the hot-added
// one too (its profile written ahead), refuses netplan's profile on
// them when asked, and the static NIC holds its address and no lease.
// The identity scenarios over NetworkManager run on Debian 12's image.
func netplanNMScenario(t *testing.T, release string) {
	img := needSystemdImage(t, release, "netplan-nm", true)
	d := newSDDisk(t, img)
	hot := nicHot
	r := d.boot(t, sdBoot{Name: "first", UUID: uuidVM, Seed: hotplugSeed(resolverA), NICs: []sdNIC{nicStatic, nicDHCP},
		Hotplug: &hot, Append: []string{"sk.nmtry=netplan-all-eth"}})
	checkSeedkeeperUnit(t, r)
	checkCloudInitOrder(t, r, release)
	checkSeedkeeperNetwork(t, r, resolverA)
	checkHotplugged(t, r)
	// netplan-all-eth's match (interface-name eth*) takes every owned
	// NIC as seedkeeper names them; NetworkManager does not match
	// netplan-all-en's en* against alternative names.
	for _, p := range []string{"netplan-all-en:", "netplan-all-eth:"} {
		if !strings.Contains(r.get(t, "nm-connections"), p) {
			t.Errorf("netplan wrote no NetworkManager profile %s; the case is not exercised:\n%s", p, r.get(t, "nm-connections"))
		}
	}
	checkNMOnlyOurProfiles(t, r, "netplan-all-eth", 3)
	if got := r.addrs(t, "addr.json", nicStatic.MAC); len(got) != 1 || got[0] != addrStatic {
		t.Errorf("the static NIC has %v, want only %s (no DHCP lease from netplan's catch-all)", got, addrStatic)
	}
	if s := r.get(t, "seedkeeper-status"); !strings.Contains(s, "Stack:       networkmanager") || !strings.Contains(s, "all-en") {
		t.Errorf("seedkeeper status names neither NetworkManager nor netplan's catch-all:\n%s", s)
	}
}

// releaseScenarios is the chain above on the image of stack on release.
func releaseScenarios(t *testing.T, release, stack string) {
	start := time.Now()
	t.Cleanup(func() { t.Logf("%s %s scenarios took %v", release, stack, time.Since(start).Round(time.Second)) })
	img := needSystemdImage(t, release, stack, true)
	network := stack != "netplan" || !netplanNetworkPending
	nics := []sdNIC{nicStatic, nicDHCP}
	var app []string
	if !network {
		t.Run("network", func(t *testing.T) {
			t.Skip("network checks on the netplan image are held back (netplanNetworkPending): netplan's catch-all takes the owned NICs")
		})
		app = append(app, "systemd.mask=systemd-networkd-wait-online.service")
	}
	seedA, seedB := proxmoxSeed(resolverA), proxmoxSeed(resolverB)
	if network {
		// The first boot hot-adds a NIC, so every boot's seed names it.
		seedA, seedB = hotplugSeed(resolverA), hotplugSeed(resolverB)
	}
	check := func(r *sdReport, resolver string) {
		t.Helper()
		checkSeedkeeperUnit(t, r)
		checkCloudInitOrder(t, r, release)
		if network {
			checkSeedkeeperNetwork(t, r, resolver)
		}
		if network && stack == "netplan" {
			checkNetplanOwned(t, r, nicStatic.MAC, nicDHCP.MAC)
		}
	}

	d := newSDDisk(t, img)
	// The no-source boot shows nothing netplan changes: networkd's image
	// has it, and the netplan chain keeps its four boots.
	if network && stack != "netplan" {
		// No source: a template's first boot, with no seed. Nothing for
		// wait-online to wait for but its timeout.
		r0 := d.boot(t, sdBoot{Name: "no-source", UUID: uuidVM, NICs: nics,
			Append: []string{"systemd.mask=systemd-networkd-wait-online.service"}})
		checkNoSource(t, r0, release)
	}
	if stack == "networkd" && !fullMatrix() {
		// The netplan image runs the chain, its first boot with the
		// hot-added NIC, over networkd on the same release; make e2e
		// runs it here too.
		t.Log("first (with the hot-added NIC), resolver-changed, clone and unchanged on this image run in make e2e (SEEDKEEPER_VM_MATRIX=full)")
		return
	}
	b1 := sdBoot{Name: "first", UUID: uuidVM, Seed: seedA, NICs: nics, Append: app}
	if network {
		hot := nicHot
		b1.Hotplug = &hot
	}
	r1 := d.boot(t, b1)
	check(r1, resolverA)
	if b1.Hotplug != nil {
		if stack == "netplan" {
			checkOurNetworkFile(t, r1, nicHot.MAC)
		}
		checkHotplugged(t, r1)
	}
	if r1.get(t, "kind") != "normal" {
		t.FailNow() // the chain needs a first boot that completed
	}
	if release == relTrixie && !fullMatrix() {
		// The identity decisions of the later boots are seedkeeper's
		// (the instance ID kept over a changed seed, a new one for a
		// clone, nothing rewritten when nothing changed), and cloud-init
		// takes the instance ID the seed says on every release:
		// forky's netplan chain boots them in make test over the same
		// stack and cloud-init's same unit layout, and Debian 12's admin
		// chain and sealed clone on cloud-init 22.4.
		t.Log("resolver-changed, clone and unchanged on this image run in make e2e (SEEDKEEPER_VM_MATRIX=full)")
		return
	}

	clone := d.clone(t)
	var r2, rc *sdReport
	t.Run("second", func(t *testing.T) {
		t.Run("resolver-changed", func(t *testing.T) {
			t.Parallel()
			r2 = d.boot(t, sdBoot{Name: "resolver-changed", UUID: uuidVM, Seed: seedB, NICs: nics, Append: app})
		})
		t.Run("clone", func(t *testing.T) {
			t.Parallel()
			rc = clone.boot(t, sdBoot{Name: "clone", UUID: uuidClone, Seed: seedA, NICs: nics, Append: app})
		})
	})
	if r2 == nil || rc == nil {
		t.FailNow() // a boot failed and said why
	}
	check(r2, resolverB)
	check(rc, resolverA)
	checkResolverChangeClone(t, r1, r2, rc)
	// What plain cloud-init would take for a new instance: the seed the
	// second boot read carried another instance-id, and seedkeeper kept
	// the first one.
	if j := r2.get(t, "journal-seedkeeper"); !strings.Contains(j, "instance_id="+seedA.instanceID()+" reported="+seedB.instanceID()) {
		t.Errorf("(a) resolver change: seedkeeper did not keep %s over the seed's %s:\n%s", seedA.instanceID(), seedB.instanceID(), j)
	}

	r3 := d.boot(t, sdBoot{Name: "unchanged", UUID: uuidVM, Seed: seedB, NICs: nics, Append: app})
	check(r3, resolverB)
	checkUnchanged(t, stack, network, r1, r2, r3)
}

// checkNoSource asserts what a boot without any metadata source shows:
// seedkeeper-boot found none, and cloud-init's drop-ins skipped every one
// of release's cloud-init services (each loaded, each with the drop-in,
// none started), so cloud-init recorded no instance; every cloud-init
// service the image has carries the drop-in.
func checkNoSource(t *testing.T, r *sdReport, release string) {
	t.Helper()
	if k := r.get(t, "kind"); k != "normal" {
		t.Errorf("%s: reported by the hang timer (%s)", r.name, k)
	}
	if id := strings.TrimSpace(string(r.files["instance-id"])); id != "" {
		t.Errorf("%s: cloud-init recorded instance-id %q; it must be held back", r.name, id)
	}
	const dropin = "seedkeeper-no-source.conf"
	units := cloudInitUnits[release]
	for _, u := range units {
		p := r.unit(t, u)
		if p["LoadState"] != "loaded" {
			t.Errorf("%s: %s.service is %s on %s: not one of its units", r.name, u, p["LoadState"], release)
			continue
		}
		if !strings.Contains(p["DropInPaths"], dropin) {
			t.Errorf("%s: %s.service has no %s (drop-ins: %q)", r.name, u, dropin, p["DropInPaths"])
		}
		if p["InactiveExitTimestampMonotonic"] != "0" {
			t.Errorf("%s: %s.service started: %v", r.name, u, p)
		}
	}
	// systemd 252 logs "UNIT - DESC was skipped because of an unmet
	// condition check (COND)", 257 "UNIT - DESC skipped, unmet condition
	// check COND".
	j := r.get(t, "journal")
	for _, u := range units {
		found := false
		for _, l := range strings.Split(j, "\n") {
			if strings.Contains(l, " "+u+".service - ") && strings.Contains(l, "skipped") && strings.Contains(l, "unmet condition check") &&
				strings.Contains(l, "ConditionPathExists=!/run/seedkeeper/no-source") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: the journal does not say %s.service was skipped for /run/seedkeeper/no-source", r.name, u)
		}
	}
	// Every cloud-init service of the image, not only the ones named
	// above: one the package does not know about would run as
	// DataSourceNone. The hotplug daemon is socket-activated, not part
	// of the boot.
	seen := 0
	for _, l := range strings.Split(r.get(t, "cloud-units"), "\n") {
		u, paths, _ := strings.Cut(l, " ")
		if u == "" || u == "cloud-init-hotplugd.service" {
			continue
		}
		seen++
		if !strings.Contains(paths, dropin) {
			t.Errorf("%s: the image's %s has no %s: a sourceless boot runs it", r.name, u, dropin)
		}
	}
	if seen < len(units) {
		t.Errorf("%s: the image lists %d cloud-init services, want at least %v:\n%s", r.name, seen, units, r.get(t, "cloud-units"))
	}
	if s := r.get(t, "seedkeeper-status"); !strings.Contains(s, "cloud-init is skipped this boot") {
		t.Errorf("%s: seedkeeper status does not say cloud-init was held back:\n%s", r.name, s)
	}
}

// checkCloudInitOrder asserts that seedkeeper-boot was done before the
// first of release's cloud-init units started (cloud-init-main on 24.3+,
// cloud-init-local), from `systemctl show` timestamps and from the
// After= systemd loaded for them, and that systemd found the unit graph
// sound: `systemd-analyze verify` says nothing about seedkeeper's units
// and the boot logged no ordering cycle. The critical chain is logged.
func checkCloudInitOrder(t *testing.T, r *sdReport, release string) {
	t.Helper()
	done := r.mono(t, "seedkeeper-boot", "ActiveEnterTimestampMonotonic")
	for _, u := range cloudInitUnits[release][:2] {
		if start := r.mono(t, u, "InactiveExitTimestampMonotonic"); done == 0 || start == 0 || done > start {
			t.Errorf("%s: seedkeeper-boot done at %v, %s started at %v: not before it", r.name, done, u, start)
		}
		if after := strings.Fields(r.unit(t, u)["After"]); !slices.Contains(after, "seedkeeper-boot.service") {
			t.Errorf("%s: %s.service is not ordered after seedkeeper-boot.service (After=%v)", r.name, u, after)
		}
	}
	for _, l := range strings.Split(r.get(t, "verify"), "\n") {
		if strings.Contains(l, "seedkeeper") || strings.Contains(l, "ordering cycle") {
			t.Errorf("%s: systemd-analyze verify: %s", r.name, l)
		}
	}
	if j := r.get(t, "journal"); strings.Contains(j, "ordering cycle") {
		for _, l := range strings.Split(j, "\n") {
			if strings.Contains(l, "ordering cycle") {
				t.Errorf("%s: %s", r.name, l)
			}
		}
	}
	// The critical chain: every unit cloud-init's first units are
	// ordered after was active before they started, and the last of
	// them is the one on the critical path.
	chains := criticalChain(t, r)
	for _, u := range cloudInitUnits[release][:2] {
		c, ok := chains[u+".service"]
		if !ok {
			t.Errorf("%s: no critical chain of %s.service:\n%s", r.name, u, r.get(t, "critical-chain"))
			continue
		}
		for dep, at := range c.after {
			if at > c.start {
				t.Errorf("%s: %s.service started at %v, before %s (ordered before it) was active at %v", r.name, u, c.start, dep, at)
			}
		}
		t.Logf("%s: %s.service started at %.1fs; critical predecessor %s at %.1fs", r.name, u, c.start.Seconds(), c.last, c.after[c.last].Seconds())
	}
	if t.Failed() {
		t.Logf("%s: verify (rc %s):\n%s", r.name, r.get(t, "verify.rc"), r.get(t, "verify"))
	}
}

// unitChain is one unit's start and when each unit it is ordered after
// became active (those that did), with the last of them.
type unitChain struct {
	start time.Duration
	after map[string]time.Duration
	last  string
}

// criticalChain parses the report's critical-chain file.
func criticalChain(t *testing.T, r *sdReport) map[string]*unitChain {
	t.Helper()
	out := map[string]*unitChain{}
	var cur *unitChain
	for _, l := range strings.Split(r.get(t, "critical-chain"), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "==" {
			us, _ := strconv.ParseInt(f[2], 10, 64)
			cur = &unitChain{start: time.Duration(us) * time.Microsecond, after: map[string]time.Duration{}}
			out[f[1]] = cur
			continue
		}
		if cur == nil || len(f) != 2 {
			continue
		}
		us, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || us == 0 {
			continue
		}
		at := time.Duration(us) * time.Microsecond
		cur.after[f[0]] = at
		if cur.last == "" || at > cur.after[cur.last] {
			cur.last = f[0]
		}
	}
	return out
}
