package seedimage

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// needTools skips the test when a seed-making tool is missing.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (packages genisoimage, cloud-image-utils, dosfstools, mtools): run `sudo make test`, which installs them", tool)
		}
	}
}

func run(t *testing.T, dir string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}

// integrationSeed writes a seed directory with distinct content per file
// and returns it.
func integrationSeed(t *testing.T) (dir string, files map[string][]byte) {
	dir = filepath.Join(t.TempDir(), "seed")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files = map[string][]byte{
		"meta-data":      []byte("instance-id: iid-integration\nlocal-hostname: it\n"),
		"user-data":      []byte("#cloud-config\nruncmd: [[echo, '" + strings.Repeat("x", 5000) + "']]\n"), // spans clusters
		"vendor-data":    {},
		"network-config": []byte("version: 2\nethernets: {eth0: {dhcp4: true}}\n"),
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

// TestIntegrationSeedImages builds seeds with the real tools, in the ways
// people and Proxmox make them, and reads every file back.
func TestIntegrationSeedImages(t *testing.T) {
	testenv.Integration(t)
	needTools(t, "genisoimage", "cloud-localds", "mkfs.vfat", "mcopy")
	seed, files := integrationSeed(t)
	all := []string{"meta-data", "user-data", "vendor-data", "network-config"}
	tests := []struct {
		name    string
		make    [][]string // run in the image's directory; IMG is the image, SEED the seed dir
		variant string
		label   string
		present []string
	}{
		{"cloud-localds iso with network-config", [][]string{{"cloud-localds", "-N", "SEED/network-config", "IMG", "SEED/user-data", "SEED/meta-data"}},
			"iso9660", "cidata", []string{"meta-data", "user-data", "network-config"}},
		{"cloud-localds vfat", [][]string{{"cloud-localds", "-f", "vfat", "IMG", "SEED/user-data", "SEED/meta-data"}},
			"fat12", "cidata", []string{"meta-data", "user-data"}},
		{"genisoimage as Proxmox runs it", [][]string{{"genisoimage", "-quiet", "-iso-level", "3", "-J", "-R", "-V", "cidata", "-o", "IMG", "SEED"}},
			"iso9660", "cidata", all},
		{"genisoimage Joliet only", [][]string{{"genisoimage", "-quiet", "-J", "-V", "cidata", "-o", "IMG", "SEED"}},
			"iso9660", "cidata", all},
		{"genisoimage Rock Ridge only", [][]string{{"genisoimage", "-quiet", "-R", "-V", "CIDATA", "-o", "IMG", "SEED"}},
			"iso9660", "CIDATA", all},
		{"genisoimage plain 8.3", [][]string{{"genisoimage", "-quiet", "-V", "cidata", "-o", "IMG", "SEED"}},
			"iso9660", "cidata", all},
		{"genisoimage plain level 3", [][]string{{"genisoimage", "-quiet", "-iso-level", "3", "-V", "cidata", "-o", "IMG", "SEED"}},
			"iso9660", "cidata", all},
		{"mkfs.vfat default (FAT12) + mcopy", [][]string{
			{"mkfs.vfat", "-n", "cidata", "-C", "IMG", "1024"},
			{"mcopy", "-i", "IMG", "SEED/meta-data", "SEED/user-data", "SEED/vendor-data", "SEED/network-config", "::"}},
			"fat12", "cidata", all},
		{"mkfs.vfat FAT16 + mcopy", [][]string{
			{"mkfs.vfat", "-F", "16", "-s", "1", "-n", "CIDATA", "-C", "IMG", "8192"},
			{"mcopy", "-i", "IMG", "SEED/meta-data", "SEED/user-data", "SEED/vendor-data", "SEED/network-config", "::"}},
			"fat16", "CIDATA", all},
		{"mkfs.vfat FAT32 + mcopy", [][]string{
			{"mkfs.vfat", "-F", "32", "-n", "cidata", "-C", "IMG", "65536"},
			{"mcopy", "-i", "IMG", "SEED/meta-data", "SEED/user-data", "SEED/vendor-data", "SEED/network-config", "::"}},
			"fat32", "cidata", all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			img := filepath.Join(dir, "seed.img")
			for _, argv := range tt.make {
				argv = slices.Clone(argv)
				for i, a := range argv {
					a = strings.ReplaceAll(a, "IMG", img)
					argv[i] = strings.ReplaceAll(a, "SEED", seed)
				}
				run(t, dir, argv...)
			}
			im, err := Open(img)
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			if im.Info().Variant != tt.variant || im.Label() != tt.label {
				t.Errorf("variant %q label %q, want %q %q", im.Info().Variant, im.Label(), tt.variant, tt.label)
			}
			for _, n := range all {
				got, err := im.ReadFile(n)
				if !slices.Contains(tt.present, n) {
					if !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("ReadFile(%s) = %v, want fs.ErrNotExist", n, err)
					}
					continue
				}
				if err != nil || !bytes.Equal(got, files[n]) {
					t.Errorf("ReadFile(%s) = %d bytes, %v; want the %d bytes written", n, len(got), err, len(files[n]))
				}
			}
		})
	}
}

// TestIntegrationScan puts tool-made images where block devices are and
// checks that Scan finds the labelled ones in cloud-init's order.
func TestIntegrationScan(t *testing.T) {
	testenv.Integration(t)
	needTools(t, "genisoimage", "mkfs.vfat")
	seed, _ := integrationSeed(t)
	root := t.TempDir()
	mk := func(name string, argv ...string) {
		dev := filepath.Join(root, "dev", name)
		if err := os.MkdirAll(filepath.Dir(dev), 0o755); err != nil {
			t.Fatal(err)
		}
		for i, a := range argv {
			argv[i] = strings.ReplaceAll(strings.ReplaceAll(a, "IMG", dev), "SEED", seed)
		}
		run(t, root, argv...)
		if err := os.MkdirAll(filepath.Join(root, "sys/class/block", name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk("sr0", "genisoimage", "-quiet", "-J", "-R", "-V", "cidata", "-o", "IMG", "SEED")
	mk("sr1", "genisoimage", "-quiet", "-J", "-R", "-V", "config-2", "-o", "IMG", "SEED")
	mk("vda1", "mkfs.vfat", "-n", "CIDATA", "-C", "IMG", "1024")
	mk("vdb", "mkfs.vfat", "-n", "CiData", "-C", "IMG", "1024") // not a label cloud-init accepts
	found, skipped, err := Scan(sysroot.Root(root), "cidata", "CIDATA")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range found {
		got = append(got, d.Dev+"="+d.Label)
	}
	if want := []string{"/dev/vda1=CIDATA", "/dev/sr0=cidata"}; !slices.Equal(got, want) || len(skipped) != 0 {
		t.Errorf("Scan = %q (skipped %q), want %q", got, skipped, want)
	}
}
