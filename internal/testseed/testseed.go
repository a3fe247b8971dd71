// Package testseed makes the NoCloud seeds that tests boot from: Proxmox's,
// byte for byte as qemu-server writes them, on an ISO9660 disk made by
// the real genisoimage, attached to a scratch root the way the seed
// scanner finds block devices. It is for tests only.
package testseed

import (
	"compress/gzip"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Proxmox returns the user-data, network-config and meta-data that
// qemu-server's Cloudinit.pm writes
// (docs/cloud-init.md#proxmox-ve) for a VM with one
// static NIC whose DNS is "use host settings", on a host whose
// /etc/resolv.conf has the given nameservers: the instance ID is the SHA-1
// of user-data followed by network-config.
func Proxmox(hostResolvers ...string) (userData, networkConfig, metaData string) {
	userData = `#cloud-config
hostname: web1
manage_etc_hosts: true
fqdn: web1.example.lan
user: debian
ssh_authorized_keys:
  - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKx web@admin
chpasswd:
  expire: False
users:
  - default
package_upgrade: true
`
	var n strings.Builder
	n.WriteString(`version: 1
config:
    - type: physical
      name: eth0
      mac_address: 'bc:24:11:aa:bb:01'
      subnets:
      - type: static
        address: '192.0.2.10'
        netmask: '255.255.255.0'
        gateway: '192.0.2.1'
    - type: nameserver
`)
	if len(hostResolvers) > 0 {
		n.WriteString("      address:\n")
		for _, a := range hostResolvers {
			fmt.Fprintf(&n, "      - '%s'\n", a)
		}
		n.WriteString("      search:\n      - 'example.lan'\n")
	}
	networkConfig = n.String()
	h := sha1.Sum([]byte(userData + networkConfig))
	return userData, networkConfig, "instance-id: " + hex.EncodeToString(h[:]) + "\n"
}

// ProxmoxISO builds the cidata ISO as Proxmox does (genisoimage
// -iso-level 3 -J -R -V cidata, four files, an empty vendor-data) at img
// and returns the instance ID in its meta-data. It skips the test when
// genisoimage is not installed.
func ProxmoxISO(t testing.TB, img string, hostResolvers ...string) string {
	t.Helper()
	if _, err := exec.LookPath("genisoimage"); err != nil {
		t.Skip("needs genisoimage: run `sudo make test`, which installs it (scripts/test-deps.sh)")
	}
	u, n, m := Proxmox(hostResolvers...)
	dir := t.TempDir()
	for name, data := range map[string]string{"user-data": u, "network-config": n, "meta-data": m, "vendor-data": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("genisoimage", "-quiet", "-iso-level", "3", "-J", "-R", "-V", "cidata", "-o", img, dir).CombinedOutput(); err != nil {
		t.Fatalf("genisoimage: %v\n%s", err, out)
	}
	return strings.TrimSpace(strings.TrimPrefix(m, "instance-id: "))
}

// Attach makes the image at img the block device NAME of root, the way
// the seed scanner finds devices: /sys/class/block/NAME and a copy of the
// image at /dev/NAME.
func Attach(t testing.TB, root, name, img string) {
	t.Helper()
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sys/class/block", name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "dev", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Gunzip writes the gzipped file at gz (a fixture such as
// testdata/nocloud/cloud-localds.iso.gz) to dst.
func Gunzip(t testing.TB, gz, dst string) {
	t.Helper()
	f, err := os.Open(gz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
