package vm

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// The templates scenarios (a seedless template, a sealed one): a golden
// image booted once as a template, then copied into clones, as a hypervisor
// clones a VM.

// templateKey is the SSH key of the seeds' user: it must end up in the
// user's authorized_keys when cloud-init applies the user-data.
const templateKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEANZmYOuRrA3Z7qlLxR5sIghfq4mcS6wS8oT8DWb45S admin@seedkeeper-test"

// templateHostname is the hostname the seeds' user-data sets (the image's
// own is skguest).
const templateHostname = "vm101"

// SMBIOS system UUIDs of the clones (the template boots as uuidVM).
const (
	uuidCloneA = "5eed0011-0000-4000-8000-000000000011"
	uuidCloneB = "5eed0012-0000-4000-8000-000000000012"
	uuidCloneC = "5eed0013-0000-4000-8000-000000000013"
)

// A clone gets new MACs from the hypervisor (Proxmox: a full clone), on
// the same networks as the template's NICs.
var (
	nicStaticA = sdNIC{MAC: "52:54:00:5e:ed:11", Net: nicStatic.Net}
	nicDHCPA   = sdNIC{MAC: "52:54:00:5e:ed:12", Net: nicDHCP.Net}
	nicStaticB = sdNIC{MAC: "52:54:00:5e:ed:21", Net: nicStatic.Net}
	nicDHCPB   = sdNIC{MAC: "52:54:00:5e:ed:22", Net: nicDHCP.Net}
)

// keySeed is the seed Proxmox VE writes for a VM whose NICs are static
// and dhcp, with an SSH key for its user: its instance-id is the SHA-1 of
// user-data and network-config, so the NICs' MACs are part of it.
func keySeed(static, dhcp sdNIC) *seedFiles {
	return &seedFiles{
		UserData: `#cloud-config
hostname: ` + templateHostname + `
manage_etc_hosts: true
fqdn: ` + templateHostname + `
user: admin
ssh_authorized_keys:
  - ` + templateKey + `
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
    - type: nameserver
      address:
      - '%s'
      search:
      - 'example.lan'
`, static.MAC, dhcp.MAC, resolverA),
	}
}

// checkSeeded asserts what a boot that had seed shows: seedkeeper-boot
// succeeded, cloud-init's instance-id is the seed's derived ID (not
// cloud-init's placeholder), the user-data was applied (hostname and the
// user's key), the static NIC has its address, and seedkeeper status
// names the rule that decided (rule 6, first-run, unless rule is "").
func checkSeeded(t *testing.T, r *sdReport, seed *seedFiles, static sdNIC, rule string) {
	t.Helper()
	if k := r.get(t, "kind"); k != "normal" {
		t.Errorf("%s: reported by the hang timer (%s), not after cloud-final", r.name, k)
	}
	u := r.unit(t, "seedkeeper-boot")
	if u["Result"] != "success" || u["ExecMainStatus"] != "0" {
		t.Errorf("%s: seedkeeper-boot.service: %v\njournal:\n%s", r.name, u, r.get(t, "journal-seedkeeper"))
	}
	if id, want := r.instanceID(t), seed.instanceID(); id != want {
		t.Errorf("%s: cloud-init's instance-id is %q, want the seed's derived ID %q\nseedkeeper status:\n%s", r.name, id, want, r.get(t, "seedkeeper-status"))
	}
	if ds := r.get(t, "datasource"); strings.Contains(ds, "DataSourceNone") {
		t.Errorf("%s: cloud-init ran as %s", r.name, ds)
	}
	if h := r.get(t, "hostname"); h != templateHostname {
		t.Errorf("%s: hostname %q, want the user-data's %q", r.name, h, templateHostname)
	}
	if k := r.get(t, "authorized-keys"); !strings.Contains(k, templateKey) {
		t.Errorf("%s: the user-data's SSH key is not authorized (authorized_keys: %q)", r.name, k)
	}
	if got := r.addrs(t, "addr.json", static.MAC); !slices.Contains(got, addrStatic) {
		t.Errorf("%s: static NIC %s has %v, want %s\nnetwork files:\n%s", r.name, static.MAC, got, addrStatic, r.get(t, "netfiles"))
	}
	if rule != "" {
		if s := r.get(t, "seedkeeper-status"); !strings.Contains(s, rule) {
			t.Errorf("%s: seedkeeper status does not say %q:\n%s", r.name, rule, s)
		}
	}
}

// maybeKeys returns the SSH host key fingerprints, none when the machine
// has no host key.
func maybeKeys(t *testing.T, r *sdReport) []string {
	t.Helper()
	if strings.TrimSpace(string(r.files["ssh-host-keys"])) == "" {
		return nil
	}
	return r.hostKeys(t)
}

// TestIntegrationSystemdTemplates runs the template scenarios on one disk
// of the networkd image: the seedless template, then the same template
// seeded and sealed. make test boots the template three times (seedless,
// seeded and sealed, one clone of the sealed disk); make e2e
// (SEEDKEEPER_VM_MATRIX=full) adds two clones of the seedless template and
// a second clone of the sealed one.
func TestIntegrationSystemdTemplates(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	start := time.Now()
	t.Cleanup(func() { t.Logf("template scenarios took %v", time.Since(start).Round(time.Second)) })
	img := needSystemdImage(t, relBookworm, "networkd", true)
	d := newSDDisk(t, img)
	keys0 := seedlessTemplate(t, d)
	unseededClones(t, d, keys0)
	sealedTemplate(t, d, keys0)
}

// seedlessTemplate boots the template without a seed: cloud-init must be
// held back (its units skipped, so that it does not record its
// placeholder "iid-datasource-none"). It returns the SSH host keys the
// boot left, if any.
func seedlessTemplate(t *testing.T, d *sdDisk) []string {
	t.Helper()
	// No network configuration without a seed: nothing for wait-online
	// to wait for but its 2-minute timeout.
	r0 := d.boot(t, sdBoot{Name: "template-no-seed", UUID: uuidVM, NICs: []sdNIC{nicStatic, nicDHCP},
		Append: []string{"systemd.mask=systemd-networkd-wait-online.service"}})
	if k := r0.get(t, "kind"); k != "normal" {
		t.Errorf("template: reported by the hang timer (%s)", k)
	}
	// Without seedkeeper's hold, cloud-init ran here as
	// DataSourceNone and every later seeded boot adopted its placeholder.
	if id := strings.TrimSpace(string(r0.files["instance-id"])); id != "" {
		t.Errorf("template without a seed: cloud-init recorded instance-id %q; it must be held back", id)
	}
	// Held back means skipped by the drop-ins' condition (systemd logs
	// each skip with the unit's description), not merely not started.
	const skipped = "was skipped because of an unmet condition check (ConditionPathExists=!/run/seedkeeper/no-source)"
	units := []string{"cloud-init-local", "cloud-init", "cloud-config", "cloud-final"}
	for _, u := range units {
		if p := r0.unit(t, u); p["InactiveExitTimestampMonotonic"] != "0" {
			t.Errorf("template without a seed: %s.service started: %v", u, p)
		}
	}
	if n := strings.Count(r0.get(t, "journal"), skipped); n < len(units) {
		t.Errorf("template without a seed: the journal says %d times %q, want once for each of %v", n, skipped, units)
	}
	if s := r0.get(t, "seedkeeper-status"); !strings.Contains(s, "cloud-init is skipped this boot") {
		t.Errorf("template without a seed: seedkeeper status does not say cloud-init was held back:\n%s", s)
	}
	keys0 := maybeKeys(t, r0)
	if t.Failed() {
		t.FailNow()
	}
	return keys0
}

// unseededClones is case (a) of the seedless template, in make e2e: two
// copies of its disk boot side by side as clones, on other SMBIOS UUIDs
// and MACs with Proxmox-style seeds. Each must be a new instance with the
// seed's derived ID (a first run, rule 6), its user-data applied and SSH
// host keys of its own. In make test the template's own disk boots with
// its seed from the same seedless state (sealedTemplate's first boot, a
// first run too), and the sealed clone boots on another UUID and MACs:
// these clones only repeat that first run with other inputs.
func unseededClones(t *testing.T, d *sdDisk, keys0 []string) {
	t.Helper()
	if !fullMatrix() {
		t.Run("clones", func(t *testing.T) {
			t.Skip("the seedless template's clones boot in make e2e (SEEDKEEPER_VM_MATRIX=full); make test boots the template's own disk with its seed")
		})
		return
	}
	seedA, seedB := keySeed(nicStaticA, nicDHCPA), keySeed(nicStaticB, nicDHCPB)
	cloneA, cloneB := d.clone(t), d.clone(t)
	var rA, rB *sdReport
	t.Run("clones", func(t *testing.T) {
		t.Run("a", func(t *testing.T) {
			t.Parallel()
			rA = cloneA.boot(t, sdBoot{Name: "clone-a", UUID: uuidCloneA, Seed: seedA, NICs: []sdNIC{nicStaticA, nicDHCPA}})
		})
		t.Run("b", func(t *testing.T) {
			t.Parallel()
			rB = cloneB.boot(t, sdBoot{Name: "clone-b", UUID: uuidCloneB, Seed: seedB, NICs: []sdNIC{nicStaticB, nicDHCPB}})
		})
	})
	if rA == nil || rB == nil {
		t.FailNow() // a boot failed and said why
	}
	checkSeeded(t, rA, seedA, nicStaticA, "rule 6, first-run")
	checkSeeded(t, rB, seedB, nicStaticB, "rule 6, first-run")
	if kA, kB := rA.hostKeys(t), rB.hostKeys(t); slices.Equal(kA, kB) {
		t.Errorf("(a) two clones of the template have the same SSH host keys %v", kB)
	}
	if keys0 != nil {
		for _, r := range []*sdReport{rA, rB} {
			if slices.Equal(r.hostKeys(t), keys0) {
				t.Errorf("%s kept the SSH host keys of the template's seedless boot %v", r.name, keys0)
			}
		}
	}
}

// sealedTemplate is (b) and the sealed template: the seedless template's
// own disk boots with the CD-ROM attached late, a first run (rule 6);
// then `seedkeeper image check` (exit 1: the template ran cloud-init) and
// `seedkeeper image seal` run on it before it powers off; a clone with
// another SMBIOS UUID and MACs (so another derived ID) boots, and in make
// e2e a second one beside it. Each must be a new machine: its own
// instance ID, /etc/machine-id and SSH host keys, and the sealed marker
// consumed.
func sealedTemplate(t *testing.T, d *sdDisk, keys0 []string) {
	t.Helper()
	seedT := keySeed(nicStatic, nicDHCP)
	r0 := d.boot(t, sdBoot{Name: "template-sealed", UUID: uuidVM, Seed: seedT, NICs: []sdNIC{nicStatic, nicDHCP},
		Append: []string{"sk.run=seal"}})
	checkSeeded(t, r0, seedT, nicStatic, "rule 6, first-run")
	if keys0 != nil && slices.Equal(r0.hostKeys(t), keys0) {
		t.Errorf("%s kept the SSH host keys of the template's seedless boot %v", r0.name, keys0)
	}
	if rc := r0.get(t, "image-check.rc"); rc != "1" {
		t.Errorf("image check on the unsealed template exited %s, want 1:\n%s", rc, r0.get(t, "image-check"))
	}
	if c := r0.get(t, "image-check"); !strings.Contains(c, "FINDING") || !strings.Contains(c, "seedkeeper image seal") {
		t.Errorf("image check on the unsealed template names no finding fixed by image seal:\n%s", c)
	}
	if rc := r0.get(t, "image-seal.rc"); rc != "0" {
		t.Errorf("image seal exited %s:\n%s", rc, r0.get(t, "image-seal"))
	}
	if m := r0.get(t, "machine-id-sealed"); m != "" {
		t.Errorf("after the seal /etc/machine-id still holds %q", m)
	}
	if s := r0.get(t, "seedkeeper-state-sealed"); !slices.Contains(strings.Fields(s), "sealed") {
		t.Errorf("after the seal /var/lib/seedkeeper holds %q, no sealed marker", s)
	}
	if s := r0.get(t, "ssh-sealed"); strings.Contains(s, "ssh_host_") {
		t.Errorf("after the seal /etc/ssh still holds host keys: %q", s)
	}
	id0, mid0, keys1 := r0.instanceID(t), r0.get(t, "machine-id"), r0.hostKeys(t)
	t.Logf("template: image check before the seal:\n%s\nimage seal:\n%s", r0.get(t, "image-check"), r0.get(t, "image-seal"))
	if t.Failed() {
		t.FailNow()
	}

	seedA, seedB := keySeed(nicStaticA, nicDHCPA), keySeed(nicStaticB, nicDHCPB)
	cloneA, cloneB := d.clone(t), d.clone(t)
	var rA, rB *sdReport
	t.Run("sealed-clones", func(t *testing.T) {
		t.Run("a", func(t *testing.T) {
			t.Parallel()
			rA = cloneA.boot(t, sdBoot{Name: "sealed-clone-a", UUID: uuidCloneA, Seed: seedA, NICs: []sdNIC{nicStaticA, nicDHCPA}})
		})
		t.Run("b", func(t *testing.T) {
			if !fullMatrix() {
				// Clone a against the sealed template is the pair make
				// test compares.
				t.Skip("the second clone boots in make e2e (SEEDKEEPER_VM_MATRIX=full)")
			}
			t.Parallel()
			rB = cloneB.boot(t, sdBoot{Name: "sealed-clone-b", UUID: uuidCloneC, Seed: seedB, NICs: []sdNIC{nicStaticB, nicDHCPB}})
		})
	})
	if rA == nil || rB == nil && fullMatrix() {
		t.FailNow()
	}

	// The status says the seal decided (identity's explanation), which a
	// clone of an unsealed template cannot say.
	checkSeeded(t, rA, seedA, nicStaticA, "The image was sealed")
	clones := []*sdReport{rA}
	if rB != nil {
		checkSeeded(t, rB, seedB, nicStaticB, "The image was sealed")
		clones = append(clones, rB)
	}
	// The template and every clone: each a machine of its own.
	ids, mids, keys := map[string]string{id0: r0.name}, map[string]string{mid0: r0.name}, map[string]string{strings.Join(keys1, ","): r0.name}
	for _, r := range clones {
		id, mid, k := r.instanceID(t), r.get(t, "machine-id"), strings.Join(r.hostKeys(t), ",")
		if other, dup := ids[id]; dup {
			t.Errorf("%s has the instance ID %s of %s", r.name, id, other)
		}
		if other, dup := mids[mid]; dup || mid == "" {
			t.Errorf("%s has /etc/machine-id %q, as %s", r.name, mid, other)
		}
		if other, dup := keys[k]; dup || k == "" {
			t.Errorf("%s has the SSH host keys %s of %s", r.name, k, other)
		}
		ids[id], mids[mid], keys[k] = r.name, r.name, r.name
	}
	for _, r := range clones {
		if s := r.get(t, "seedkeeper-state"); slices.Contains(strings.Fields(s), "sealed") {
			t.Errorf("%s: /var/lib/seedkeeper/sealed is still there after the clone's first boot", r.name)
		}
	}
}
