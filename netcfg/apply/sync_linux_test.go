package apply

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// A hotplug event syncs one NIC: only its operations run, the receipt is
// saved, and the Locked step gets the whole configuration's ownership
// with the receipt still locked (the event used to open, lock and plan
// twice).
func TestIntegrationSyncOnlyLocked(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "ens4", mac1, "p4", "bc:24:11:00:00:01")
	addVeth(t, nh, "ens5", mac2, "p5", "bc:24:11:00:00:02")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "eth0", Kind: netcfg.Physical, MAC: mac1, Addresses: []netip.Prefix{pfx("192.0.2.10/24")}},
		{ID: "eth1", Kind: netcfg.Physical, MAC: mac2, Addresses: []netip.Prefix{pfx("198.51.100.10/24")}},
	}}
	receipt := filepath.Join(t.TempDir(), "receipt.json")
	var owned []string
	lockedOut := false
	s, err := Sync(context.Background(), cfg, SyncOptions{
		Receipt: receipt, Allow: Drivers("veth"), Only: []string{mac2}, Namespace: ns,
		Locked: func(ctx context.Context, s *Synced) error {
			owned = s.Whole.Owned
			f, err := os.OpenFile(receipt+".lock", os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			lockedOut = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == unix.EWOULDBLOCK
			return nil
		},
	})
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if !lockedOut {
		t.Error("the receipt was not locked during the Locked step")
	}
	if !slices.Equal(owned, []string{"eth0", "eth1"}) {
		t.Errorf("Whole.Owned = %q, want both NICs", owned)
	}
	if a := addrs(t, nh, "ens4"); slices.Contains(a, "192.0.2.10/24") {
		t.Errorf("ens4 was changed although only %s was synced: %q", mac2, a)
	}
	if a := addrs(t, nh, "ens5"); !slices.Contains(a, "198.51.100.10/24") {
		t.Errorf("ens5 addresses %q", a)
	}
	rc, err := LoadReceipt(receipt)
	if err != nil || !slices.Contains(rc.Links[mac2].Addresses, pfx("198.51.100.10/24")) || len(rc.Links[mac1].Addresses) != 0 {
		t.Errorf("receipt %+v (%v)", rc, err)
	}
	if len(s.Result.Ops) == 0 || s.Result.Failed() {
		t.Errorf("result %+v", s.Result)
	}

	// The next NIC's sync does not say that the first, in the receipt
	// now, is no longer configured: it is, outside the part planned.
	s, err = Sync(context.Background(), cfg, SyncOptions{Receipt: receipt, Allow: Drivers("veth"), Only: []string{mac1}, Namespace: ns})
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	for _, n := range s.Plan.Notes {
		if strings.Contains(n, "no longer configured") {
			t.Errorf("a sync of %s notes %q", mac1, n)
		}
	}
}

// A dry run reads and plans, changes nothing and takes no lock.
func TestIntegrationSyncDryRun(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "ens4", mac1, "p4", "bc:24:11:00:00:01")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "eth0", Kind: netcfg.Physical, MAC: mac1, Addresses: []netip.Prefix{pfx("192.0.2.10/24")}},
	}}
	dir := t.TempDir()
	s, err := Sync(context.Background(), cfg, SyncOptions{Receipt: filepath.Join(dir, "r.json"), Allow: Drivers("veth"), DryRun: true, Namespace: ns})
	if err != nil || s.Result != nil || len(s.Plan.Ops) == 0 {
		t.Fatalf("Sync dry run = %+v, %v", s, err)
	}
	if a := addrs(t, nh, "ens4"); len(a) != 0 && slices.Contains(a, "192.0.2.10/24") {
		t.Errorf("a dry run changed ens4: %q", a)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("a dry run wrote %q", m)
	}
}
