package vm

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
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
// applies it, as a new instance (the drive's derived ID, new SSH host
// keys), as it would be had seedkeeper never been installed.
func TestIntegrationSystemdRemoval(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	start := time.Now()
	t.Cleanup(func() { t.Logf("the removal scenario took %v", time.Since(start).Round(time.Second)) })
	img := needSystemdImage(t, relBookworm, "networkd", true)
	nics := []sdNIC{nicStatic, nicDHCP}
	seedA, seedC := proxmoxSeed(resolverA), changedDrive()
	if seedA.instanceID() == seedC.instanceID() {
		t.Fatal("the changed drive has the same derived ID; the scenario proves nothing")
	}
	d := newSDDisk(t, img)
	r1 := d.boot(t, sdBoot{Name: "with-seedkeeper", UUID: uuidVM, Seed: seedA, NICs: nics, Append: []string{"sk.run=remove"}})
	checkSeedkeeperBoot(t, r1, resolverA)
	id1, keys1 := r1.instanceID(t), r1.hostKeys(t)
	if r1.get(t, "remove.rc") != "0" {
		t.Fatalf("dpkg -r seedkeeper: %s", r1.get(t, "remove"))
	}
	// Only /etc/resolv.conf is left (named): removing it would end name
	// resolution for the rest of this boot.
	for _, l := range strings.Split(r1.get(t, "remove"), "\n") {
		if strings.HasPrefix(l, "seedkeeper uninstall: left") && !strings.HasPrefix(l, "seedkeeper uninstall: left /etc/resolv.conf: ") {
			t.Errorf("dpkg -r left a file of seedkeeper's: %s", l)
		}
	}
	// Nothing of seedkeeper's is left for cloud-init.
	for _, f := range strings.Split(r1.get(t, "after-remove"), "\n") {
		if f != "" && !strings.HasPrefix(f, "/etc/cloud/cloud.cfg.d/") || strings.HasSuffix(f, "/95-seedkeeper.cfg") {
			t.Errorf("after dpkg -r, %s is still there for cloud-init", f)
		}
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
	// Plain cloud-init decides alone: the drive's ID, a new instance, new
	// host keys. (cloud-init's previous-instance-id is no witness: its
	// second stage of the same boot rewrites it with the new ID.)
	if id2 := r2.instanceID(t); id2 != seedC.instanceID() || id2 == id1 {
		t.Errorf("instance-id %s after %s; want the drive's %s", id2, id1, seedC.instanceID())
	}
	if slices.Equal(r2.hostKeys(t), keys1) {
		t.Error("a new instance kept the SSH host keys")
	}
}
