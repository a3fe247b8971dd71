package vm

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// changedDrive is the Proxmox drive after an admin changed the VM's
// config once seedkeeper is gone: another hostname and the host's other
// resolver, so another derived instance-id.
func changedDrive() *seedFiles {
	s := proxmoxSeed(resolverB)
	s.UserData = strings.NewReplacer("hostname: vm101", "hostname: vm102", "fqdn: vm101", "fqdn: vm102").Replace(s.UserData)
	return s
}

// TestIntegrationSystemdRemoval boots the networkd image with the Proxmox
// drive, removes the package (dpkg -r) at the end of that boot, changes
// the drive and boots again: the change is applied as plain cloud-init
// applies it. Without --keep-instance-id that is a new instance (the
// drive's derived ID, new SSH host keys), as it would be had seedkeeper
// never been installed; with it, the ID seedkeeper kept stays and the
// drive's new hostname and network still apply.
func TestIntegrationSystemdRemoval(t *testing.T) {
	t.Parallel()
	start := time.Now()
	t.Cleanup(func() { t.Logf("removal scenarios took %v", time.Since(start).Round(time.Second)) })
	img := needSystemdImage(t, "networkd", true)
	nics := []sdNIC{nicStatic, nicDHCP}
	seedA, seedC := proxmoxSeed(resolverA), changedDrive()
	if seedA.instanceID() == seedC.instanceID() {
		t.Fatal("the changed drive has the same derived ID; the scenario proves nothing")
	}

	for _, keep := range []bool{false, true} {
		name, run := "remove", "sk.run=remove"
		if keep {
			name, run = "remove-keep-id", "sk.run=remove-keep-id"
		}
		t.Run(name, func(t *testing.T) {
			d := newSDDisk(t, img)
			r1 := d.boot(t, sdBoot{Name: "with-seedkeeper", UUID: uuidVM, Seed: seedA, NICs: nics, Append: []string{run}})
			checkSeedkeeperBoot(t, r1, resolverA)
			id1, keys1 := r1.instanceID(t), r1.hostKeys(t)
			if keep && r1.get(t, "keep-id.rc") != "0" {
				t.Fatalf("seedkeeper uninstall --keep-instance-id: %s", r1.get(t, "keep-id"))
			}
			if r1.get(t, "remove.rc") != "0" {
				t.Fatalf("dpkg -r seedkeeper: %s", r1.get(t, "remove"))
			}
			// Only /etc/resolv.conf is left (named): removing it would end
			// name resolution for the rest of this boot.
			for _, l := range strings.Split(r1.get(t, "remove"), "\n") {
				if strings.HasPrefix(l, "seedkeeper uninstall: left") && !strings.HasPrefix(l, "seedkeeper uninstall: left /etc/resolv.conf: ") {
					t.Errorf("dpkg -r left a file of seedkeeper's: %s", l)
				}
			}
			// What is left for cloud-init: nothing of seedkeeper's, or
			// with --keep-instance-id the ID-only seed.
			var want []string
			if keep {
				want = []string{"/var/lib/cloud/seed/nocloud/meta-data", "/var/lib/cloud/seed/nocloud/user-data"}
				if md := r1.get(t, "after-remove-meta-data"); md != `instance-id: "`+id1+`"` {
					t.Errorf("the handed-over meta-data is %q; want the instance-id %s alone", md, id1)
				}
			}
			var left []string
			for _, f := range strings.Split(r1.get(t, "after-remove"), "\n") {
				if f != "" && !strings.HasPrefix(f, "/etc/cloud/cloud.cfg.d/") {
					left = append(left, f)
				}
				if strings.HasSuffix(f, "/95-seedkeeper.cfg") {
					t.Errorf("after dpkg -r the drop-in %s is still in force", f)
				}
			}
			if !slices.Equal(left, want) {
				t.Errorf("after dpkg -r, left for cloud-init: %q; want %q", left, want)
			}

			r2 := d.boot(t, sdBoot{Name: "drive-changed", UUID: uuidVM, Seed: seedC, NICs: nics})
			if u := r2.unit(t, "seedkeeper-boot"); u["LoadState"] != "not-found" {
				t.Errorf("seedkeeper-boot.service is still there: %v", u)
			}
			if h := r2.get(t, "hostname"); h != "vm102" {
				t.Errorf("the drive's new hostname was not applied: %q", h)
			}
			if got := r2.addrs(t, "addr.json", nicStatic.MAC); !slices.Contains(got, addrStatic) {
				t.Errorf("cloud-init did not apply the drive's network: static NIC has %v\n%s", got, r2.get(t, "netfiles"))
			}
			if ds := r2.get(t, "datasource"); !strings.Contains(ds, "DataSourceNoCloud") {
				t.Errorf("cloud-init's datasource: %q", ds)
			}
			id2, keys2 := r2.instanceID(t), r2.hostKeys(t)
			if keep {
				if id2 != id1 || !slices.Equal(keys2, keys1) {
					t.Errorf("with --keep-instance-id the instance went %s → %s (host keys %v → %v); want it kept", id1, id2, keys1, keys2)
				}
				return
			}
			// Plain cloud-init decides alone: the drive's ID, a new
			// instance, new host keys.
			// (cloud-init's previous-instance-id is no witness: its second
			// stage of the same boot rewrites it with the new ID.)
			if id2 != seedC.instanceID() || id2 == id1 {
				t.Errorf("instance-id %s after %s; want the drive's %s", id2, id1, seedC.instanceID())
			}
			if slices.Equal(keys2, keys1) {
				t.Error("a new instance kept the SSH host keys")
			}
		})
	}
}
