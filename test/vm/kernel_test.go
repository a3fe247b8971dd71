package vm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeKernel makes an extracted-package tree for release under dir.
func fakeKernel(t *testing.T, dir, release string, vmlinuz []byte) kernel {
	t.Helper()
	k := kernel{Tree: filepath.Join(dir, "linux-image-"+release), Release: release}
	for _, d := range []string{filepath.Join(k.Tree, "boot"), filepath.Join(k.ModuleDir(), "kernel", "drivers", "net")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(k.Vmlinuz(), vmlinuz, 0o644); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestFindKernelPrefersThePinnedRelease(t *testing.T) {
	dir := t.TempDir()
	fakeKernel(t, dir, "9.9.9-1-amd64", nil)
	want := fakeKernel(t, dir, KernelRelease, nil)
	fakeKernel(t, dir, "1.0.0-1-amd64", nil)
	k, err := findKernel(dir)
	if err != nil {
		t.Fatal(err)
	}
	if k != want {
		t.Errorf("found %+v, want %+v", k, want)
	}
	// The extracted tree itself may be given too.
	if k, err := findKernel(want.Tree); err != nil || k != want {
		t.Errorf("findKernel(tree) = %+v, %v; want %+v", k, err, want)
	}
}

func TestFindKernelWithoutModulesFails(t *testing.T) {
	dir := t.TempDir()
	k := fakeKernel(t, dir, KernelRelease, nil)
	if err := os.RemoveAll(filepath.Join(k.Tree, "lib")); err != nil {
		t.Fatal(err)
	}
	if _, err := findKernel(dir); err == nil || !strings.Contains(err.Error(), "no extracted kernel package") {
		t.Errorf("err = %v, want no extracted kernel package", err)
	}
}

func TestModulePaths(t *testing.T) {
	k := fakeKernel(t, t.TempDir(), KernelRelease, nil)
	net := filepath.Join(k.ModuleDir(), "kernel", "drivers", "net")
	for _, f := range []string{"virtio_net.ko", "net_failover.ko", "e1000.ko.xz"} {
		if err := os.WriteFile(filepath.Join(net, f), []byte("mod"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	builtin := "kernel/drivers/virtio/virtio.ko\nkernel/net/core/failover.ko\n"
	if err := os.WriteFile(filepath.Join(k.ModuleDir(), "modules.builtin"), []byte(builtin), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := k.modulePaths([]string{"virtio", "failover", "net_failover", "virtio_net"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(net, "net_failover.ko"), filepath.Join(net, "virtio_net.ko")}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v (built-in ones left out, order kept)", got, want)
	}
	_, err = k.modulePaths([]string{"virtio_net", "e1000", "sr_mod"})
	if err == nil || !strings.Contains(err.Error(), "e1000, sr_mod") {
		t.Errorf("err = %v, want e1000 (compressed) and sr_mod missing", err)
	}
}

func TestVmlinuxExtractsTheXZPayload(t *testing.T) {
	xz, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("needs xz (package xz-utils)")
	}
	elf := append([]byte("\x7fELF"), bytes.Repeat([]byte("kernel "), 1000)...)
	cmd := exec.Command(xz, "-c", "--check=crc32")
	cmd.Stdin = bytes.NewReader(elf)
	payload, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	// A bzImage: setup code, the xz stream, then trailing data.
	vmlinuz := append(append([]byte("MZ setup code \x00\x01"), payload...), "trailer"...)
	k := fakeKernel(t, t.TempDir(), KernelRelease, vmlinuz)
	p, err := k.vmlinux(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if p != filepath.Join(k.Tree, "boot", "vmlinux-"+KernelRelease) {
		t.Errorf("extracted to %s, want next to the vmlinuz", p)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, elf) {
		t.Errorf("extracted %d bytes, want the %d of the payload", len(got), len(elf))
	}
}

func TestVmlinuxRejectsImagesWithoutXZ(t *testing.T) {
	k := fakeKernel(t, t.TempDir(), KernelRelease, []byte("MZ gzip-compressed kernel"))
	if _, err := k.vmlinux(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no xz stream") {
		t.Errorf("err = %v, want no xz stream", err)
	}
}
