package vm

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// The MACs and networks of the scenarios' NICs. Each NIC has its own QEMU
// user-mode network, so a DHCP lease (.15) says which NIC got it.
var (
	nicStatic = sdNIC{MAC: "52:54:00:5e:ed:01", Net: "10.0.2.0/24"}
	nicDHCP   = sdNIC{MAC: "52:54:00:5e:ed:02", Net: "10.0.4.0/24"}
	nicHot    = sdNIC{MAC: "52:54:00:5e:ed:03", Net: "10.0.3.0/24"}
)

const (
	addrStatic = "10.0.2.20/24"
	addrDHCP   = "10.0.4.15/24" // QEMU's user network leases .15
	addrHot    = "10.0.3.20/24"
)

// SMBIOS system UUIDs: one VM, and its clone.
const (
	uuidVM    = "5eed0001-0000-4000-8000-000000000001"
	uuidClone = "5eed0002-0000-4000-8000-000000000002"
)

// proxmoxSeed is the seed Proxmox VE writes for a VM with net0 static and
// net1 DHCP and the host's resolver: changing the resolver changes the
// SHA-1 instance-id. hotplugSeed adds net2 (static), the NIC a scenario
// hot-adds; it is left out of the others, where plain cloud-init would
// wait a minute for it and fail its local stage ("Not all expected
// physical devices present").
func proxmoxSeed(resolver string) *seedFiles { return pveSeed(resolver, false) }

func hotplugSeed(resolver string) *seedFiles { return pveSeed(resolver, true) }

func pveSeed(resolver string, hot bool) *seedFiles {
	net2 := ""
	if hot {
		net2 = fmt.Sprintf(`    - type: physical
      name: eth2
      mac_address: '%s'
      subnets:
      - type: static
        address: '10.0.3.20'
        netmask: '255.255.255.0'
`, nicHot.MAC)
	}
	return &seedFiles{
		UserData: `#cloud-config
hostname: vm101
manage_etc_hosts: true
fqdn: vm101
user: admin
chpasswd:
  expire: False
users:
  - default
package_upgrade: false
`,
		NetworkConfig: fmt.Sprintf(`version: 1
config:
    - type: physical
      name: eth0
      mac_address: '%s'
      subnets:
      - type: static
        address: '10.0.2.20'
        netmask: '255.255.255.0'
        gateway: '10.0.2.2'
    - type: physical
      name: eth1
      mac_address: '%s'
      subnets:
      - type: dhcp4
%s    - type: nameserver
      address:
      - '%s'
      search:
      - 'example.lan'
`, nicStatic.MAC, nicDHCP.MAC, net2, resolver),
	}
}

// The resolvers of the Proxmox host before and after its resolv.conf
// changed (or the VM moved to another node).
const (
	resolverA = "192.0.2.53"
	resolverB = "192.0.2.99"
)

// checkSeedkeeperBoot asserts what every boot of an image with seedkeeper
// shows: the unit succeeded and finished before cloud-init-local started,
// the static and DHCP NICs are configured, and the resolver is the seed's.
func checkSeedkeeperBoot(t *testing.T, r *sdReport, resolver string) {
	t.Helper()
	checkSeedkeeperUnit(t, r)
	checkSeedkeeperNetwork(t, r, resolver)
}

// checkSeedkeeperUnit is the part of checkSeedkeeperBoot that is not the
// network: the boot reported normally, seedkeeper-boot succeeded and was
// done before cloud-init-local started.
func checkSeedkeeperUnit(t *testing.T, r *sdReport) {
	t.Helper()
	if k := r.get(t, "kind"); k != "normal" {
		t.Errorf("%s: reported by the hang timer (%s), not after cloud-final", r.name, k)
	}
	u := r.unit(t, "seedkeeper-boot")
	if u["Result"] != "success" || u["ExecMainStatus"] != "0" || u["ActiveState"] != "active" {
		t.Errorf("%s: seedkeeper-boot.service: %v\njournal:\n%s", r.name, u, r.get(t, "journal-seedkeeper"))
	}
	if done, local := r.mono(t, "seedkeeper-boot", "ActiveEnterTimestampMonotonic"), r.mono(t, "cloud-init-local", "InactiveExitTimestampMonotonic"); done == 0 || local == 0 || done > local {
		t.Errorf("%s: seedkeeper-boot done at %v, cloud-init-local started at %v: not before it", r.name, done, local)
	}
	if f := r.get(t, "failed"); f != "" {
		t.Logf("%s: failed units: %s", r.name, f)
	}
}

// checkSeedkeeperNetwork is the network part of checkSeedkeeperBoot: the
// static and DHCP NICs are configured and the resolver is the seed's.
func checkSeedkeeperNetwork(t *testing.T, r *sdReport, resolver string) {
	t.Helper()
	if got := r.addrs(t, "addr.json", nicStatic.MAC); !slices.Contains(got, addrStatic) {
		t.Errorf("%s: static NIC has %v, want %s\nnetwork files:\n%s", r.name, got, addrStatic, r.get(t, "netfiles"))
	}
	if got := r.addrs(t, "addr.json", nicDHCP.MAC); !slices.Contains(got, addrDHCP) {
		t.Errorf("%s: DHCP NIC has %v, want the lease %s\nnetwork files:\n%s", r.name, got, addrDHCP, r.get(t, "netfiles"))
	}
	checkResolver(t, r, resolver)
}

// checkResolver asserts that the guest's resolver names server. With
// systemd-resolved, /etc/resolv.conf names its stub, and the servers
// networkd gave it are in its uplink file.
func checkResolver(t *testing.T, r *sdReport, server string) {
	t.Helper()
	file, name := "resolv.conf", "/etc/resolv.conf"
	if strings.HasSuffix(strings.TrimSpace(string(r.files["resolv.conf.link"])), "/stub-resolv.conf") {
		file, name = "resolved-resolv.conf", "/run/systemd/resolve/resolv.conf (systemd-resolved)"
	}
	if rc := r.get(t, file); !strings.Contains(rc, "nameserver "+server+"\n") && !strings.HasSuffix(rc, "nameserver "+server) {
		t.Errorf("%s: %s does not name %s:\n%s", r.name, name, server, rc)
	}
}

// persistentFiles is the part of the report's file listing that lives on
// the disk (not /run): a rewrite shows as a new inode or mtime.
func persistentFiles(t *testing.T, r *sdReport) map[string]string {
	t.Helper()
	out := map[string]string{}
	for p, st := range r.fileStats(t) {
		if !strings.HasPrefix(p, "/run/") {
			out[p] = st
		}
	}
	return out
}

// TestIntegrationSystemdNetworkd runs the golden-image scenarios on the
// systemd-networkd image: a Proxmox resolver change between boots of one
// disk, a clone on another SMBIOS UUID, a hot-added NIC under
// seedkeeper-watch (on the chain's first boot), and a boot with nothing
// changed; the same boots without seedkeeper beside them. make e2e
// (SEEDKEEPER_VM_MATRIX=full) runs it; make test runs the first boot's
// checks, the hot-added NIC among them, on the admin chain's first boot on
// this image (TestIntegrationSystemdAdminChanges), and the resolver
// change, clone and unchanged boot on Debian 13's and forky's netplan
// images, over networkd.
func TestIntegrationSystemdNetworkd(t *testing.T) {
	testenv.Integration(t)
	if !fullMatrix() {
		t.Skip("the identity chain runs in make e2e (SEEDKEEPER_VM_MATRIX=full); make test runs its first boot as the admin chain's first")
	}
	t.Parallel()
	identityScenarios(t, relBookworm, "networkd")
}

// TestIntegrationSystemdMatrix runs the networkd scenarios on the
// ifupdown and NetworkManager images too: `make e2e`
// (SEEDKEEPER_VM_MATRIX=full), not `make test`, which runs only their
// static + DHCP + hotplug boot (TestIntegrationSystemdStacks).
func TestIntegrationSystemdMatrix(t *testing.T) {
	testenv.Integration(t)
	if !fullMatrix() {
		t.Skip("the full matrix runs in make e2e (SEEDKEEPER_VM_MATRIX=full)")
	}
	t.Parallel()
	for _, stack := range []string{"ifupdown", "networkmanager"} {
		t.Run(stack, func(t *testing.T) {
			t.Parallel()
			identityScenarios(t, relBookworm, stack)
		})
	}
}

// fullMatrix says whether the boots make e2e adds to make test's run.
func fullMatrix() bool { return os.Getenv("SEEDKEEPER_VM_MATRIX") == "full" }

// identityScenarios runs (a)-(e) on the image of stack on release: one
// disk booted first (a NIC hot-added, d), then with the
// resolver changed (a) beside a clone of it (b), then with nothing
// changed (e), and the same disk's first two boots without seedkeeper
// (c).
func identityScenarios(t *testing.T, release, stack string) {
	start := time.Now()
	t.Cleanup(func() { t.Logf("%s %s scenarios took %v", release, stack, time.Since(start).Round(time.Second)) })
	// Build the images before the subtests fan out, so their failures
	// (and the cached rootfs) are reported once.
	img := needSystemdImage(t, release, stack, true)
	plain := needSystemdImage(t, release, stack, false)
	nics := []sdNIC{nicStatic, nicDHCP}

	t.Run("identity", func(t *testing.T) {
		t.Parallel()
		d := newSDDisk(t, img)
		// The first boot hot-adds a NIC, so every boot's seed names it.
		seedA, seedB := hotplugSeed(resolverA), hotplugSeed(resolverB)
		hot := nicHot
		r1 := d.boot(t, sdBoot{Name: "first", UUID: uuidVM, Seed: seedA, NICs: nics, Hotplug: &hot})
		checkSeedkeeperBoot(t, r1, resolverA)
		// (d) a NIC hot-added from the QEMU monitor under the real
		// seedkeeper-watch.service gets its address and keeps it for 30 s.
		checkHotplugged(t, r1)
		if r1.get(t, "kind") != "normal" {
			t.FailNow() // the chain needs a first boot that completed
		}
		// (a) the host's resolver changes: Proxmox's instance-id changes,
		// and (b) a clone boots on another SMBIOS UUID; side by side.
		clone := d.clone(t)
		var r2, rc *sdReport
		t.Run("second", func(t *testing.T) {
			t.Run("resolver-changed", func(t *testing.T) {
				t.Parallel()
				r2 = d.boot(t, sdBoot{Name: "resolver-changed", UUID: uuidVM, Seed: seedB, NICs: nics})
			})
			t.Run("clone", func(t *testing.T) {
				t.Parallel()
				rc = clone.boot(t, sdBoot{Name: "clone", UUID: uuidClone, Seed: seedA, NICs: nics})
			})
		})
		if r2 == nil || rc == nil {
			t.FailNow() // a boot failed and said why
		}
		checkSeedkeeperBoot(t, r2, resolverB)
		checkSeedkeeperBoot(t, rc, resolverA)
		checkResolverChangeClone(t, r1, r2, rc)
		// What plain cloud-init would take for a new instance: the seed
		// the second boot read carried another instance-id, and
		// seedkeeper kept the first one.
		if j := r2.get(t, "journal-seedkeeper"); !strings.Contains(j, "instance_id="+seedA.instanceID()+" reported="+seedB.instanceID()) {
			t.Errorf("(a) resolver change: seedkeeper did not keep %s over the seed's %s:\n%s", seedA.instanceID(), seedB.instanceID(), j)
		}

		// (e) a boot with nothing changed: same identity, same network,
		// no file on the disk rewritten.
		r3 := d.boot(t, sdBoot{Name: "unchanged", UUID: uuidVM, Seed: seedB, NICs: nics})
		checkSeedkeeperBoot(t, r3, resolverB)
		checkUnchanged(t, stack, true, r1, r2, r3)
	})

	// (c) the same boots without seedkeeper: the resolver change makes
	// cloud-init a new instance with new SSH host keys. This is the bug
	// the identity scenario proves seedkeeper fixes; the identity chain
	// checks on its own that the second boot's seed had another
	// instance-id, which seedkeeper did not take.
	t.Run("without-seedkeeper", func(t *testing.T) {
		t.Parallel()
		d := newSDDisk(t, plain)
		r1 := d.boot(t, sdBoot{Name: "first", UUID: uuidVM, Seed: proxmoxSeed(resolverA), NICs: nics})
		r2 := d.boot(t, sdBoot{Name: "resolver-changed", UUID: uuidVM, Seed: proxmoxSeed(resolverB), NICs: nics})
		if u := r1.unit(t, "seedkeeper-boot"); u["LoadState"] != "not-found" {
			t.Fatalf("the plain image has seedkeeper-boot.service: %v", u)
		}
		if id1, id2 := r1.instanceID(t), r2.instanceID(t); id1 == id2 {
			t.Errorf("without seedkeeper the resolver change kept the instance-id %s: the scenario cannot tell the bug", id1)
		} else if id1 != proxmoxSeed(resolverA).instanceID() || id2 != proxmoxSeed(resolverB).instanceID() {
			t.Errorf("instance-ids %s, %s are not the seeds' %s, %s", id1, id2, proxmoxSeed(resolverA).instanceID(), proxmoxSeed(resolverB).instanceID())
		}
		if k1, k2 := r1.hostKeys(t), r2.hostKeys(t); slices.Equal(k1, k2) {
			t.Errorf("without seedkeeper the resolver change kept the SSH host keys: the scenario cannot tell the bug")
		}
	})
}

// checkHotplugged asserts (d) on a boot that hot-added nicHot:
// seedkeeper-watch is active without a restart, and the NIC has its
// address once it has one at all and still 30 s later. The snapshots are
// taken on the guest's own clock, so a moment in which the address is
// gone (the image's manager taking the link over) fails the boot.
func checkHotplugged(t *testing.T, r *sdReport) {
	t.Helper()
	if u := r.unit(t, "seedkeeper-watch"); u["ActiveState"] != "active" || u["NRestarts"] != "0" {
		t.Errorf("%s: (d) seedkeeper-watch.service: %v", r.name, u)
	}
	bad := false
	for _, snap := range []string{"addr-hotplug.json", "addr-hotplug-30s.json"} {
		if got := r.addrs(t, snap, nicHot.MAC); !slices.Equal(got, []string{addrHot}) {
			t.Errorf("%s: (d) hot-added NIC (%s): %v, want [%s]", r.name, snap, got, addrHot)
			bad = true
		}
	}
	if bad {
		t.Logf("%s: watch journal:\n%s\nnetwork files:\n%s\nnetworkctl:\n%s",
			r.name, r.get(t, "journal-seedkeeper"), r.get(t, "netfiles"), r.get(t, "networkctl"))
	}
}

// TestIntegrationSystemdStacks boots the ifupdown and NetworkManager images:
// a static and a DHCP NIC owned by seedkeeper both end up configured by the
// image's own manager, which does not undo the live addresses (checked once
// the manager has started and again 30 s later), and a hot-added NIC gets
// its address and keeps it. The NetworkManager image has a catch-all
// profile beside (checkNMOnlyOurProfiles).
func TestIntegrationSystemdStacks(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	for _, stack := range []string{"ifupdown", "networkmanager"} {
		t.Run(stack, func(t *testing.T) {
			t.Parallel()
			stackScenario(t, relBookworm, stack)
		})
	}
}

// stackScenario is TestIntegrationSystemdStacks's boot of the ifupdown or
// NetworkManager image on release.
func stackScenario(t *testing.T, release, stack string) {
	unit, status := map[string]string{"ifupdown": "networking", "networkmanager": "NetworkManager"}[stack], "Stack:       "+stack
	var img *sdImage
	var app []string
	if stack == "networkmanager" {
		// With a catch-all profile, as images leave one.
		img = needSystemdVariant(t, release, stack, "nm-catchall")
		app = []string{"sk.nmtry=" + nmCatchAll}
	} else {
		img = needSystemdImage(t, release, stack, true)
	}
	d := newSDDisk(t, img)
	hot := nicHot
	r := d.boot(t, sdBoot{Name: stack, UUID: uuidVM, Seed: hotplugSeed(resolverA), NICs: []sdNIC{nicStatic, nicDHCP}, Hotplug: &hot, Append: app})
	if stack == "networkmanager" {
		checkNMOnlyOurProfiles(t, r, nmCatchAll, 3)
	}
	checkSeedkeeperBoot(t, r, resolverA)
	if u := r.unit(t, unit); u["ActiveState"] != "active" {
		t.Errorf("the image's manager %s.service is not active: %v", unit, u)
	}
	if s := r.get(t, "seedkeeper-status"); !strings.Contains(s, status) {
		t.Errorf("seedkeeper status does not say %q:\n%s", status, s)
	}
	for _, snap := range []string{"addr-hotplug.json", "addr-hotplug-30s.json"} {
		if got := r.addrs(t, snap, nicStatic.MAC); !slices.Equal(got, []string{addrStatic}) {
			t.Errorf("static NIC (%s): %v, want [%s]", snap, got, addrStatic)
		}
		if got := r.addrs(t, snap, nicDHCP.MAC); !slices.Equal(got, []string{addrDHCP}) {
			t.Errorf("DHCP NIC (%s): %v, want [%s]", snap, got, addrDHCP)
		}
		if got := r.addrs(t, snap, nicHot.MAC); !slices.Equal(got, []string{addrHot}) {
			t.Errorf("hot-added NIC (%s): %v, want [%s]", snap, got, addrHot)
		}
	}
	if t.Failed() {
		t.Logf("network files:\n%s\nseedkeeper journal:\n%s", r.get(t, "netfiles"), r.get(t, "journal-seedkeeper"))
	}
}

// TestIntegrationSystemdSmartOSHostLate is (f), LP #1667735 under the real
// unit: SMBIOS says SmartOS, ttyS1 goes to the simulated host, and the
// host agent stays down for longer than seedkeeper-boot.service's
// TimeoutStartSec (3 min) after the guest's first request. The unit must
// extend its own start timeout while it waits, then finish with sdc:uuid
// as cloud-init's instance-id.
func TestIntegrationSystemdSmartOSHostLate(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	img := needSystemdImage(t, relBookworm, "networkd", true)
	st, uuid, _ := smartosStore(t)
	h := mdatatest.NewHost(st)
	t.Cleanup(func() { h.Close() })
	h.Down()
	const down = 200 * time.Second
	d := newSDDisk(t, img)
	// No network config: nothing for wait-online to wait for.
	r := d.boot(t, sdBoot{Name: "smartos", UUID: uuid, Host: h, NICs: []sdNIC{nicStatic}, Idles: true,
		Append: []string{"systemd.mask=systemd-networkd-wait-online.service"},
		During: func(t *testing.T, m *machine) {
			if err := h.Wait(m.running(), func(s mdatatest.Stats) bool { return s.Discarded >= 1 }); err != nil {
				t.Fatalf("the guest never tried the host while it was down: %v", err)
			}
			t.Logf("the guest asked the host at %v; keeping it down for %v, its VM slot free meanwhile", time.Since(m.started).Round(time.Second), down)
			// The guest only retries the host meanwhile: another may boot.
			if !m.idle(down) {
				t.Fatalf("the guest stopped while the host was down:\n%s", m.con.tail(40))
			}
			t.Logf("the host comes up at %v", time.Since(m.started).Round(time.Second))
			h.Up()
		}})
	if k := r.get(t, "kind"); k != "normal" {
		t.Errorf("reported by the hang timer (%s)", k)
	}
	u := r.unit(t, "seedkeeper-boot")
	if u["Result"] != "success" || u["ExecMainStatus"] != "0" {
		t.Errorf("seedkeeper-boot.service: %v\n%s", u, r.get(t, "journal-seedkeeper"))
	}
	if wall := r.mono(t, "seedkeeper-boot", "ActiveEnterTimestampMonotonic") - r.mono(t, "seedkeeper-boot", "InactiveExitTimestampMonotonic"); wall < down {
		t.Errorf("seedkeeper-boot took %v, less than the %v the host was down", wall, down)
	}
	if id := r.instanceID(t); id != uuid {
		t.Errorf("cloud-init's instance-id is %q, want sdc:uuid %s", id, uuid)
	}
	if s := h.Stats(); s.Served == 0 {
		t.Errorf("the host served nothing after coming up: %+v", s)
	}
}

// checkResolverChangeClone asserts (a) and (b): r2 is the boot of r1's disk
// after the host's resolver changed, rc a clone of r1's disk on another
// SMBIOS UUID.
func checkResolverChangeClone(t *testing.T, r1, r2, rc *sdReport) {
	t.Helper()
	id1, keys1 := r1.instanceID(t), r1.hostKeys(t)
	if id := r2.instanceID(t); id != id1 {
		t.Errorf("(a) resolver change: cloud-init's instance-id went %s → %s", id1, id)
	}
	if k := r2.hostKeys(t); !slices.Equal(k, keys1) {
		t.Errorf("(a) resolver change: SSH host keys regenerated: %v → %v", keys1, k)
	}
	if strings.Contains(r2.get(t, "resolv.conf"), resolverA) {
		t.Errorf("(a) the old resolver %s is still in /etc/resolv.conf:\n%s", resolverA, r2.get(t, "resolv.conf"))
	}
	if id := rc.instanceID(t); id == id1 {
		t.Errorf("(b) clone on another SMBIOS UUID kept the instance-id %s", id)
	}
	if k := rc.hostKeys(t); slices.Equal(k, keys1) || len(k) == 0 {
		t.Errorf("(b) clone kept the SSH host keys %v", k)
	}
}

// checkUnchanged asserts (e): r3 booted r2's disk again with nothing
// changed, so it kept r1's identity, rewrote no file on the disk and, when
// network is set, left the same addresses and routes and changed none
// beyond what a fresh boot applies.
func checkUnchanged(t *testing.T, stack string, network bool, r1, r2, r3 *sdReport) {
	t.Helper()
	id1, keys1 := r1.instanceID(t), r1.hostKeys(t)
	if id := r3.instanceID(t); id != id1 {
		t.Errorf("(e) unchanged boot: instance-id %s → %s", id1, id)
	}
	if k := r3.hostKeys(t); !slices.Equal(k, keys1) {
		t.Errorf("(e) unchanged boot: SSH host keys regenerated")
	}
	before, after := persistentFiles(t, r2), persistentFiles(t, r3)
	// Rewritten on every boot by design, so left out: status.json is
	// the boot's own record (its time). Every other file (identity,
	// seed, receipt, resolv.conf) must stay as it was.
	skip := []string{"/var/lib/seedkeeper/status.json"}
	if stack == "networkmanager" {
		// NetworkManager manages /etc/resolv.conf and rewrites it in
		// place on every boot (same inode, new mtime).
		skip = append(skip, "/etc/resolv.conf")
	}
	for _, p := range skip {
		delete(before, p)
		delete(after, p)
	}
	if len(before) == 0 {
		t.Errorf("(e) the report lists no file seedkeeper wrote:\n%s", r2.get(t, "files"))
	}
	for p, st := range before {
		if after[p] != st {
			t.Errorf("(e) unchanged boot rewrote %s: %q → %q", p, st, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("(e) unchanged boot wrote a new file %s", p)
		}
	}
	if !network {
		if j := r3.get(t, "journal-seedkeeper"); strings.Contains(j, `msg="seed written"`) {
			t.Errorf("(e) unchanged boot: seedkeeper logged %q", `msg="seed written"`)
		}
		return
	}
	for _, mac := range []string{nicStatic.MAC, nicDHCP.MAC} {
		if a, b := r2.addrs(t, "addr.json", mac), r3.addrs(t, "addr.json", mac); !slices.Equal(a, b) {
			t.Errorf("(e) unchanged boot: %s has %v, was %v", mac, b, a)
		}
	}
	if a, b := r2.get(t, "route4.json"), r3.get(t, "route4.json"); a != b {
		t.Errorf("(e) unchanged boot: routes differ:\n%s\n%s", a, b)
	}
	j := r3.get(t, "journal-seedkeeper")
	for _, w := range []string{`msg="seed written"`, "/etc/resolv.conf written", "add address", "del address", "add route", "del route"} {
		// Addresses and routes are live state: a fresh boot has none,
		// so the unchanged boot adds them as the first did; it must
		// not add or remove anything beyond that, so compare counts.
		if strings.HasPrefix(w, "add ") || strings.HasPrefix(w, "del ") {
			if a, b := strings.Count(r2.get(t, "journal-seedkeeper"), w), strings.Count(j, w); a != b {
				t.Errorf("(e) unchanged boot: %d %q operations, the boot before %d", b, w, a)
			}
			continue
		}
		if strings.Contains(j, w) {
			t.Errorf("(e) unchanged boot: seedkeeper logged %q", w)
		}
	}
}
