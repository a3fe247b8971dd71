package intent

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

const (
	keyA  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAdminKeyA alice@laptop"
	keyB  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAdminKeyB bob@desk"
	hash1 = "$6$rounds=4096$saltsalt$9YVh0r6CY3rAJ5h4pT8mCxI8lX1zYzN4wq0o0Qm3l5bq1F3cJ8o4w2k3d1s0a9Z8y7x6w5v4u3t2s1r0q9p8o."
	hash2 = "$6$rounds=4096$othersal$1234567890abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ./0123456789abcdefghijklmn"
)

// proxmoxUserData is the user-data Proxmox VE generates (its exact key
// order), for a VM named name with these keys and password.
func proxmoxUserData(name, password string, upgrade bool, keys ...string) []byte {
	var b strings.Builder
	b.WriteString("#cloud-config\nhostname: " + name + "\nmanage_etc_hosts: true\nfqdn: " + name + ".example.lan\nuser: admin\n")
	if password != "" {
		b.WriteString("password: " + password + "\n")
	}
	b.WriteString("ssh_authorized_keys:\n")
	for _, k := range keys {
		b.WriteString("  - " + k + "\n")
	}
	b.WriteString("chpasswd:\n  expire: False\nusers:\n  - default\n")
	if upgrade {
		b.WriteString("package_upgrade: true\n")
	}
	return []byte(b.String())
}

func nocloud(ud []byte) *datasource.Metadata {
	return &datasource.Metadata{Source: datasource.SourceNoCloud, InstanceID: "iid-1", UserData: ud}
}

func changes(t *testing.T, a, b *datasource.Metadata) []string {
	t.Helper()
	da := Settings(Input{Metadata: a, ImageDefaultUser: "debian", Salt: "s"})
	db := Settings(Input{Metadata: b, ImageDefaultUser: "debian", Salt: "s"})
	var out []string
	for _, c := range Compare(da.Settings, db.Settings) {
		out = append(out, c.Setting+" "+c.Kind)
	}
	return out
}

// What counts as a change of a Proxmox VM's settings: the keys as a set
// of authorizations (order, comment and spacing are not a change, an
// option is), the password, the VM name, ciupgrade.
func TestChangesProxmox(t *testing.T) {
	base := proxmoxUserData("vm101", hash1, true, keyA)
	for _, tc := range []struct {
		name string
		ud   []byte
		want []string
	}{
		{"unchanged", proxmoxUserData("vm101", hash1, true, keyA), nil},
		{"key added", proxmoxUserData("vm101", hash1, true, keyA, keyB), []string{"keys:admin changed"}},
		{"key removed", proxmoxUserData("vm101", hash1, true), []string{"keys:admin changed"}},
		{"comment and spacing", proxmoxUserData("vm101", hash1, true, "ssh-ed25519   AAAAC3NzaC1lZDI1NTE5AAAAIAdminKeyA other-comment"), nil},
		{"option added", proxmoxUserData("vm101", hash1, true, `no-pty ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAdminKeyA alice@laptop`), []string{"keys:admin changed"}},
		{"password", proxmoxUserData("vm101", hash2, true, keyA), []string{"password:admin changed"}},
		{"ciuser renamed", []byte(strings.Replace(string(base), "user: admin", "user: ops", 1)), []string{"keys:admin removed", "keys:ops added", "password:admin removed", "password:ops added", "user-data:user changed"}},
		{"VM renamed", proxmoxUserData("vm102", hash1, true, keyA), []string{"user-data:fqdn changed", "user-data:hostname changed"}},
		{"ciupgrade 0", proxmoxUserData("vm101", hash1, false, keyA), []string{"user-data:package_upgrade removed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := changes(t, nocloud(base), nocloud(tc.ud))
			if !slices.Equal(got, tc.want) {
				t.Errorf("changes %v, want %v", got, tc.want)
			}
		})
	}
	// The keys are a set: their order is no change.
	if got := changes(t, nocloud(proxmoxUserData("vm101", hash1, true, keyA, keyB)), nocloud(proxmoxUserData("vm101", hash1, true, keyB, keyA))); got != nil {
		t.Errorf("reordered keys: changes %v, want none", got)
	}
}

// A Proxmox network change (a host resolver) is the network's only.
func TestChangesNetwork(t *testing.T) {
	a, b := nocloud(proxmoxUserData("vm101", "", false, keyA)), nocloud(proxmoxUserData("vm101", "", false, keyA))
	a.NetworkConfigRaw = []byte("version: 1\nconfig:\n  - type: nameserver\n    address: [192.0.2.53]\n")
	b.NetworkConfigRaw = []byte("version: 1\nconfig:\n  - type: nameserver\n    address: [192.0.2.99]\n")
	if got := changes(t, a, b); !slices.Equal(got, []string{"network changed"}) {
		t.Errorf("changes %v, want [network changed]", got)
	}
	da := Settings(Input{Metadata: a, Salt: "s"})
	db := Settings(Input{Metadata: b, Salt: "s"})
	if da.CloudInit != db.CloudInit {
		t.Error("a network change changed what cloud-init reads: its cache would be dropped for nothing")
	}
}

// VMware guestinfo: the metadata's public keys are the default user's,
// local-hostname is the hostname; the user-data is parsed as NoCloud's.
func TestChangesVMware(t *testing.T) {
	md := func(host string, keys ...string) *datasource.Metadata {
		return &datasource.Metadata{Source: datasource.SourceVMware, InstanceID: "vm-1", Hostname: host, PublicKeys: keys,
			Network: &netcfg.Config{}, NetworkConfigRaw: []byte(`{"version":2}`)}
	}
	for _, tc := range []struct {
		name string
		b    *datasource.Metadata
		want []string
	}{
		{"unchanged", md("web1", keyA), nil},
		{"key added", md("web1", keyA, keyB), []string{"keys:debian changed"}},
		{"key removed", md("web1"), []string{"keys:debian changed"}},
		{"hostname", md("web2", keyA), []string{"hostname changed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := changes(t, md("web1", keyA), tc.b); !slices.Equal(got, tc.want) {
				t.Errorf("changes %v, want %v", got, tc.want)
			}
		})
	}
}

// SmartOS: root_authorized_keys (the public keys), hostname, sdc:nics
// (the network document) and user-script each are one setting.
func TestChangesSmartOS(t *testing.T) {
	md := func(host, nics, script string, keys ...string) *datasource.Metadata {
		return &datasource.Metadata{Source: datasource.SourceSmartOS, InstanceID: "uuid-1", Hostname: host, PublicKeys: keys,
			NetworkConfigRaw: []byte(nics), SmartOS: &datasource.SmartOSExtras{UserScript: []byte(script)}}
	}
	base := md("zone1", `[{"mac":"90:b8:d0:00:00:01"}]`, "#!/bin/sh\necho 1\n", keyA)
	for _, tc := range []struct {
		name string
		b    *datasource.Metadata
		want []string
	}{
		{"unchanged", md("zone1", `[{"mac":"90:b8:d0:00:00:01"}]`, "#!/bin/sh\necho 1\n", keyA), nil},
		{"root_authorized_keys", md("zone1", `[{"mac":"90:b8:d0:00:00:01"}]`, "#!/bin/sh\necho 1\n", keyB), []string{"keys:debian changed"}},
		{"hostname", md("zone2", `[{"mac":"90:b8:d0:00:00:01"}]`, "#!/bin/sh\necho 1\n", keyA), []string{"hostname changed"}},
		{"sdc:nics", md("zone1", `[{"mac":"90:b8:d0:00:00:02"}]`, "#!/bin/sh\necho 1\n", keyA), []string{"network changed"}},
		{"user-script", md("zone1", `[{"mac":"90:b8:d0:00:00:01"}]`, "#!/bin/sh\necho 2\n", keyA), []string{"user-script changed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := changes(t, base, tc.b); !slices.Equal(got, tc.want) {
				t.Errorf("changes %v, want %v", got, tc.want)
			}
		})
	}
}

// The record never holds a password or a key in clear, and the salt
// makes the same password digest differently on two machines.
func TestDigestsHideValues(t *testing.T) {
	md := nocloud(proxmoxUserData("vm101", "hunter2", false, keyA))
	a := Settings(Input{Metadata: md, Salt: "one"})
	b := Settings(Input{Metadata: md, Salt: "two"})
	for k, v := range a.Settings {
		if strings.Contains(v, "hunter2") || strings.Contains(v, "AdminKeyA") {
			t.Errorf("%s: digest holds the value", k)
		}
		if b.Settings[k] == v {
			t.Errorf("%s: same digest under two salts", k)
		}
	}
	if p := a.Passwords["admin"]; p.Value != "hunter2" || p.Hashed {
		t.Errorf("password for admin: %+v, want the plain text one", p)
	}
}

func TestLookupEveryRow(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules {
		if seen[r.Setting] {
			t.Errorf("%s: two rows", r.Setting)
		}
		seen[r.Setting] = true
		if r.How == "" {
			t.Errorf("%s: no reason", r.Setting)
		}
		if got := Lookup(r.Setting); got != r {
			t.Errorf("Lookup(%s) = %v", r.Setting, got)
		}
	}
	if r := Lookup("user-data:ntp"); r.Applier != NewInstance || r.Setting != "user-data:" {
		t.Errorf("an unlisted user-data key: %v, want the default row", r)
	}
	if r := Lookup("keys:someone"); r.Applier != BySeedkeeper {
		t.Errorf("keys:someone: %v", r)
	}
}

// A top-level user-data key that is no plain name is not quoted in the
// setting's name (which the status shows), and two such keys of the same
// length stay two settings: a change of one is that one's change.
func TestChangesOddTopKeys(t *testing.T) {
	ud := func(v1, v2 string) *datasource.Metadata {
		return nocloud([]byte("#cloud-config\n\"my secret1\": " + v1 + "\n\"my secret2\": " + v2 + "\n\"\\u202ertl\": 1\n"))
	}
	a := Settings(Input{Metadata: ud("a", "b"), Salt: "s"})
	b := Settings(Input{Metadata: ud("a", "c"), Salt: "s"})
	for k := range a.Settings {
		if strings.Contains(k, "secret") || strings.Contains(k, "rtl") {
			t.Errorf("setting %q quotes the key", k)
		}
	}
	if len(a.Settings) != 3 {
		t.Errorf("settings %v, want three", slices.Collect(maps.Keys(a.Settings)))
	}
	if ch := Compare(a.Settings, b.Settings); len(ch) != 1 || ch[0].Kind != "changed" {
		t.Errorf("one key's value changed: %+v", ch)
	}
}
