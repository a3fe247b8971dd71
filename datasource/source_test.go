package datasource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// The table's own invariants: what the code names a source is the table's
// name for it, no two sources share a name or a platform, every source can
// be detected and read, and every platform Platform can return is claimed
// by one source (else its NICs would get no default allowlist).
func TestSourceTable(t *testing.T) {
	if want := []string{SourceSmartOS, SourceVMware, SourceNoCloud}; !slices.Equal(Names(), want) {
		t.Errorf("Names() = %v, want %v", Names(), want)
	}
	claimed, named := map[string]string{}, map[string]bool{}
	for _, s := range sources {
		if s.Name == "" || s.detect == nil || s.read == nil || s.DriversKey == "" || (len(s.Platforms) > 0) != (len(s.Drivers) > 0) {
			t.Errorf("source %q is missing a field: %+v", s.Name, s)
		}
		if got, ok := Lookup(s.Name); !ok || got.Name != s.Name {
			t.Errorf("Lookup(%q) = %v, %v", s.Name, got.Name, ok)
		}
		if named[s.Name] {
			t.Errorf("source %q is listed twice", s.Name)
		}
		named[s.Name] = true
		for _, d := range s.Drivers {
			if err := netcfg.CheckDriverName(d); err != nil {
				t.Errorf("source %q: default driver %q: %v", s.Name, d, err)
			}
		}
		for _, p := range s.Platforms {
			if other, dup := claimed[p]; dup {
				t.Errorf("platform %q is claimed by %q and %q", p, other, s.Name)
			}
			claimed[p] = s.Name
			if !slices.ContainsFunc(platforms, func(q platformCheck) bool { return q.name == p }) {
				t.Errorf("source %q claims platform %q, which Platform never returns", s.Name, p)
			}
		}
	}
	for _, p := range platforms {
		if _, ok := claimed[p.name]; !ok {
			t.Errorf("platform %q is claimed by no source: it has no default allowlist", p.name)
		}
		if d, ok := platformDrivers(p.name); !ok || len(d) == 0 {
			t.Errorf("platformDrivers(%q) = %v, %v", p.name, d, ok)
		}
	}
	if _, ok := platformDrivers(""); ok {
		t.Error("the unknown platform has a default allowlist")
	}
	if _, ok := Lookup("ec2"); ok || ValidSource("") {
		t.Error("a name not in the table is a source")
	}
	// A name the caller gave (Options.Sources, Read) that is not in the
	// table is named in the error, as are the names it could be.
	for _, err := range []error{
		func() error { _, err := Read(context.Background(), "ec2", Options{}); return err }(),
		func() error { _, _, err := Detect(context.Background(), Options{Sources: []string{"ec2"}}); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), `unknown source "ec2" (want one of [smartos vmware nocloud])`) {
			t.Errorf("unknown source: %v", err)
		}
	}
}

// What Lookup returns is the caller's: writing to its lists leaves the
// table, and so every platform's default allowlist, as it was.
func TestLookupReturnsACopy(t *testing.T) {
	s, _ := Lookup(SourceVMware)
	s.Drivers[0], s.Platforms[0] = "veth", "kvm"
	if d, _ := platformDrivers("vmware"); !slices.Equal(d, vmware.Drivers) || d[0] != "e1000" {
		t.Errorf("a caller's write reached the table: vmware defaults %v", d)
	}
	if again, _ := Lookup(SourceVMware); !slices.Equal(again.Platforms, []string{"vmware"}) {
		t.Errorf("a caller's write reached the table: platforms %v", again.Platforms)
	}
}

func TestPlatform(t *testing.T) {
	for _, tc := range []struct{ product, vendor, want string }{
		{"VMware Virtual Platform", "VMware, Inc.", "vmware"},
		{"SmartDC HVM", "Joyent", "smartos"},
		{"BHYVE", "", "bhyve"},
		{"Proxmox VE", "", "proxmox"},
		{"Standard PC (i440FX + PIIX, 1996)", "QEMU", "qemu"},
		{"KVM", "Red Hat", "kvm"},
		{"", "", ""},
	} {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "sys/class/dmi/id"), 0o755)
		os.WriteFile(filepath.Join(root, "sys/class/dmi/id/product_name"), []byte(tc.product+"\n"), 0o444)
		os.WriteFile(filepath.Join(root, "sys/class/dmi/id/sys_vendor"), []byte(tc.vendor+"\n"), 0o444)
		if got := Platform(root); got != tc.want {
			t.Errorf("Platform(%q, %q) = %q, want %q", tc.product, tc.vendor, got, tc.want)
		}
	}
}

// Every detector and reader, through the table and through its own
// exported function, gives up at once on a cancelled context, with the
// context's error: none starts I/O it would then wait on.
func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A root where every source would be found: a zone socket path is
	// not needed, a forced transport is; a VMware envvar; a seed dir.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, noCloudSeedDir), 0o755)
	os.WriteFile(filepath.Join(root, noCloudSeedDir, "meta-data"), []byte("instance-id: i\n"), 0o644)
	os.WriteFile(filepath.Join(root, noCloudSeedDir, "user-data"), []byte(""), 0o644)
	o := Options{Root: root, MdataTransport: "unix:" + filepath.Join(root, "md.sock"),
		VMware: VMwareOptions{Getenv: func(k string) string { return map[string]string{"VMX_GUESTINFO": "1"}[k] }}}
	for _, s := range sources {
		if _, err := s.detect(ctx, &o); !errors.Is(err, context.Canceled) {
			t.Errorf("%s detect: %v, want context.Canceled", s.Name, err)
		}
		if _, err := Read(ctx, s.Name, o); !errors.Is(err, context.Canceled) {
			t.Errorf("%s read: %v, want context.Canceled", s.Name, err)
		}
	}
	for name, f := range map[string]func(context.Context, Options) (Detection, error){
		"detectSmartOS": detectSmartOS, "detectVMware": detectVMware, "detectNoCloud": detectNoCloud,
	} {
		if _, err := f(ctx, o); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
	}
	for name, f := range map[string]func(context.Context, Options) (*Metadata, error){
		"readSmartOS": func(ctx context.Context, o Options) (*Metadata, error) { return readSmartOS(ctx, Detection{}, &o) },
		"readVMware":  readVMware, "readNoCloud": readNoCloud,
	} {
		if md, err := f(ctx, o); !errors.Is(err, context.Canceled) || md != nil {
			t.Errorf("%s: %v, %v; want context.Canceled", name, md, err)
		}
	}
	if _, _, err := Detect(ctx, o); !errors.Is(err, context.Canceled) {
		t.Errorf("Detect: %v, want context.Canceled", err)
	}
}

// The README's configuration example and synopsis list the sources in the
// table's detection order: a source added to the table and not to them
// (or the other way round) fails here.
func TestREADMEListsTheTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Skipf("no README beside the package: %v", err)
	}
	readme := string(b)
	for _, want := range []string{
		"sources: [" + strings.Join(Names(), ", ") + "]",
		"[--source " + strings.Join(Names(), "|") + "]",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
}
