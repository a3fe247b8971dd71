package vm

// The systemd-booted guest: a Debian userland with systemd as PID 1,
// Debian's cloud-init and seedkeeper's .deb, booted from a persistent ext4
// disk under QEMU/TCG, as a golden image is booted by a hypervisor. Three
// releases: Debian 12 (relBookworm: cloud-init 22.4.2, systemd 252),
// Debian 13 (relTrixie: cloud-init 25.1.4, systemd 257) and Debian's next,
// forky (relForky: cloud-init 26.2, systemd 262); stacks networkd,
// ifupdown, networkmanager and netplan (netplan.io over networkd with a
// catch-all in /etc/netplan, and systemd-resolved as Debian's netplan
// images have it; forky's netplan has wait-online wait for DNS).
//
// # How it is built
//
// Each release's base is made by one mmdebstrap run (sdPackages plus the
// release's own): Debian 12 from this machine's apt sources as they are,
// Debian 13 and forky from the same mirror with the suite changed
// (sdSources; the host's sources are not touched; a Release file past its
// Valid-Until date is accepted), with the pinned kernel's modules and the
// image's own initramfs (systemd/customize.sh). Each stack's root
// filesystem is that base unpacked, with the stack's packages installed
// from the base's package lists and its network manager enabled
// (systemd/layer.sh, systemd/stack-STACK.sh). The tars are cached under
// DefaultKernelDir/rootfs/ as RELEASE-base-HASH.tar and
// RELEASE-STACK-HASH.tar, by the hash of their inputs (the release and the
// base's among them), so each is built once per change of inputs, never
// per change of our code. Every test
// run then unpacks it, installs the .deb it has just built (`make deb`; or
// $SEEDKEEPER_VM_DEB), the report units (systemd/sk-report*) and the test's
// cloud-init settings (systemd/sk-cloud.cfg), and makes
// one ext4 image per stack and variant with `mkfs.ext4 -d`. Each scenario
// boots a qcow2 overlay of that image, so its disk persists from boot to
// boot and costs nothing to make.
//
// # What a boot reports
//
// sk-report.service runs after cloud-final.service, writes a tar onto the
// second virtio disk (a zeroed raw file here) and powers off;
// sk-report-late.timer does the same when the boot hangs. The tar holds
// instance IDs, SSH host key fingerprints, `ip -j` addresses, routes and
// links (`ip -d -j link` too: kinds, bond, VLAN and bridge parameters,
// masters), /etc/resolv.conf, `systemctl show` of the units that matter,
// the journal, `seedkeeper status`, status.json and the network receipt,
// the network files written, and the inode and mtime of every file the
// boot flow may write. See systemd/sk-report.sh.
//
// # Adding a scenario
//
// A scenario is a disk and a sequence of boots, then assertions on the
// reports:
//
//	img := needSystemdImage(t, relTrixie, "networkd", true) // release, stack, with seedkeeper?
//	d := newSDDisk(t, img)                       // a fresh disk of that image
//	r1 := d.boot(t, sdBoot{Name: "first", UUID: uuid1, Seed: seed, NICs: nics})
//	c := d.clone(t)                              // a copy of the disk as it is now
//	r2 := c.boot(t, sdBoot{Name: "clone", UUID: uuid2, Seed: seed, NICs: nics})
//	if r1.instanceID(t) == r2.instanceID(t) { t.Error(...) }
//
// sdBoot also takes a hot-added NIC (plugged from the QEMU monitor once the
// guest says it is up; the report then waits for its address), a SmartOS
// metadata host on ttyS1, extra kernel arguments and extra SMBIOS fields.
// An image variant (needSystemdVariant, sdVariants) adds files to an image
// after the .deb, from the same cached rootfs: "vmware" has a
// vmware-rpctool that serves guestinfo from the kernel command line
// (systemd/vmware-rpctool; systemd_vmware_test.go). Boots take a slot of
// vmSlots, so scenarios written as parallel subtests boot side by side as
// far as memory and CPU allow; a chain's later boots are served before
// other chains' first (bootPriority). A template booted without a seed and then
// cloned is newSDDisk + boot with Seed nil + clone; a sealed image is a
// boot that runs `seedkeeper image seal` (an sk.run= knob would go in
// sk-report.sh) followed by clones. A unit change to try is a kernel
// argument: sk.dropin=UNIT:Key=Value (systemd/sk-dropins, a generator).
//
// # Knobs
//
// SEEDKEEPER_VM_JOBS guests at once (default 2; each takes 1 GiB and a
// core; go test's -parallel, unless given, is twice that:
// defaultParallel), SEEDKEEPER_VM_GATE a file that holds them to one while it
// exists (make test's, see scripts/test.sh), SEEDKEEPER_VM_BOOT the
// host's bound on one boot (default 25m), SEEDKEEPER_VM_DEB a prebuilt .deb, SEEDKEEPER_VM_KEEP a directory to
// keep every report and console in, SEEDKEEPER_VM_CACHE and
// SEEDKEEPER_VM_APT the rootfs cache and the apt sources mmdebstrap uses,
// SEEDKEEPER_VM_CONSOLE=1 logs every console. SEEDKEEPER_VM_BENCH=1 runs
// the boot cost measurement (TestIntegrationSystemdBootCost), with
// SEEDKEEPER_VM_BENCH_PAIRS rounds (default 3) on the releases in
// SEEDKEEPER_VM_BENCH_RELEASES (default bookworm,trixie), the variants in
// SEEDKEEPER_VM_BENCH_VARIANTS (default all) and SEEDKEEPER_VM_BENCH_BOOTS
// boots of each disk (default 2).

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// sdPackages is what every systemd guest has; sdStackPackages adds the
// network stack under test.
var sdPackages = []string{
	"systemd-sysv", "udev", "dbus", "kmod", "cloud-init", "iproute2",
	"openssh-server", "initramfs-tools", "e2fsprogs",
}

var sdStackPackages = map[string][]string{
	"networkd":       nil, // part of systemd; systemd/stack-networkd.sh enables it
	"ifupdown":       {"ifupdown", "isc-dhcp-client"},
	"networkmanager": {"network-manager"},
	// netplan.io as the configuration layer over networkd, with the
	// catch-all an image builder leaves (systemd/stack-netplan.sh).
	"netplan": {"netplan.io"},
	// netplan.io over NetworkManager, the same catch-all
	// (systemd/stack-netplan-nm.sh).
	"netplan-nm": {"netplan.io", "network-manager"},
}

// The Debian releases of the guest's userland.
const (
	// relBookworm is Debian 12: cloud-init 22.4.2 (cloud-init-local,
	// cloud-init, cloud-config, cloud-final), systemd 252.
	relBookworm = "bookworm"
	// relTrixie is Debian 13: cloud-init 25.1.4 with the 24.3+
	// single-process layout (cloud-init-main.service, whose stage shims
	// talk to it with `nc -Uu`; cloud-init-network replaces
	// cloud-init.service), systemd 257.
	relTrixie = "trixie"
	// relForky is Debian's next release (testing): cloud-init 26.2
	// (the 24.3+ layout, VMware network events from 25.2, the stream
	// socket between its stages from 25.3), systemd 262, NetworkManager
	// 1.58, netplan.io 1.2.
	relForky = "forky"
)

// sdReleasePackages adds what a release's guest needs beyond sdPackages.
var sdReleasePackages = map[string][]string{
	relBookworm: nil,
	relTrixie:   {"netcat-openbsd"},
	relForky:    {"netcat-openbsd"},
}

// sdReleaseStackPackages adds what a stack's image needs on a release
// beyond sdStackPackages. netplan images over networkd carry
// systemd-resolved (a package of its own, not part of systemd), and
// netplan.io 1.2 has systemd-networkd-wait-online wait for DNS (--dns),
// which only resolved answers: the test's netplan images carry it too,
// on Debian 13 as on forky, so that they are what users boot.
var sdReleaseStackPackages = map[string]map[string][]string{
	relTrixie: {"netplan": {"systemd-resolved"}},
	relForky:  {"netplan": {"systemd-resolved"}},
}

// Environment knobs of the systemd guest.
const (
	envVMDeb   = "SEEDKEEPER_VM_DEB"   // a prebuilt .deb to install instead of building one
	envVMJobs  = "SEEDKEEPER_VM_JOBS"  // how many guests boot at once (default 2)
	envVMGate  = "SEEDKEEPER_VM_GATE"  // a file: one guest at a time while it exists
	envVMBoot  = "SEEDKEEPER_VM_BOOT"  // the host's bound on one boot (default 25m)
	envAptList = "SEEDKEEPER_VM_APT"   // the apt sources file mmdebstrap uses
	envVMCache = "SEEDKEEPER_VM_CACHE" // where the rootfs tars are cached
	envVMKeep  = "SEEDKEEPER_VM_KEEP"  // a directory to keep every boot's report and console in
)

// vmSlots bounds the guests running at once: each takes 1 GiB and a core.
var vmSlots = newVMSlots(os.Getenv(envVMJobs), os.Getenv(envVMGate), time.Second)

// sdBootTimeout is the host's bound on one boot; the guest's own hang
// timer (sk-report-late.timer) fires 3 minutes before it. A first boot
// with a hot-added NIC took 12 minutes with two guests at once on a
// 2-core host whose load average was 15; the bound is twice that.
func sdBootTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(envVMBoot)); err == nil && d >= 5*time.Minute {
		return d
	}
	return 25 * time.Minute
}

// sdImage is one bootable disk image: a release and a stack, with or
// without seedkeeper.
type sdImage struct {
	release    string
	stack      string
	seedkeeper bool
	disk       string // raw ext4
	initrd     string // the image's own initramfs
	vmlinux    string
}

type onceImage struct {
	once sync.Once
	img  *sdImage
	skip string
	err  error
}

var (
	sdMu     sync.Mutex
	sdImages = map[string]*onceImage{}
	sdTars   = map[string]*onceImage{} // img.disk holds the tar's path
	// sdBuilds bounds the rootfs builds at once: three, so that the
	// three releases' bases (minutes each, much of it waiting on the mirror
	// and on dpkg's writes) are built side by side at the start and the
	// first guests boot minutes sooner; make test runs the other
	// packages beside them.
	sdBuilds = make(chan struct{}, 3)
	debOnce  sync.Once
	debPath  string
	debErr   error
	sdKernel struct {
		once    sync.Once
		k       kernel
		vmlinux string
		skip    string
		err     error
	}
)

func onceFor(m map[string]*onceImage, key string) *onceImage {
	sdMu.Lock()
	defer sdMu.Unlock()
	o := m[key]
	if o == nil {
		o = &onceImage{}
		m[key] = o
	}
	return o
}

// needSystemdImage skips the test when the systemd guest cannot run here
// and returns the image of stack on release (relBookworm, relTrixie), with
// or without seedkeeper's .deb, building it (and its cached rootfs) on
// first use.
func needSystemdImage(t *testing.T, release, stack string, withSeedkeeper bool) *sdImage {
	t.Helper()
	return needSDImage(t, release, stack, withSeedkeeper, "")
}

// needSystemdVariant is needSystemdImage's image of stack on release with
// seedkeeper, and with what variant (a key of sdVariants) adds on top: the
// same cached rootfs tar, one more unpack and mkfs.
func needSystemdVariant(t *testing.T, release, stack, variant string) *sdImage {
	t.Helper()
	if _, ok := sdVariants[variant]; !ok {
		t.Fatalf("no such image variant %q", variant)
	}
	return needSDImage(t, release, stack, true, variant)
}

// needSDHost skips the test when this host cannot build or boot the
// systemd guest.
func needSDHost(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("systemd guest test skipped in -short mode (each boot takes minutes of TCG)")
	}
	if why := sdHostSkip(); why != "" {
		t.Skip(why)
	}
}

// sdHostSkip says why this host cannot build or boot the systemd guest,
// or "" when it can.
func sdHostSkip() string {
	const install = "run `sudo make test` (scripts/test-deps.sh installs qemu-system-x86, mmdebstrap, qemu-utils, e2fsprogs and the pinned kernel linux-image-" + KernelRelease + ")"
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return "the systemd guest runs on linux/amd64 hosts only"
	}
	if os.Geteuid() != 0 {
		return "the systemd guest needs root (mmdebstrap --mode=root, mkfs.ext4 -d keeping ownership): " + install
	}
	for _, tool := range []string{"qemu-system-x86_64", "qemu-img", "mmdebstrap", "mkfs.ext4", "genisoimage"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("the systemd guest needs %s: %s", tool, install)
		}
	}
	return ""
}

// sdImageSet is every release's stacks that make test boots (make e2e's
// too with SEEDKEEPER_VM_MATRIX=full), whose rootfs tars
// TestIntegrationSystemdImages builds. A stack missing here is built on
// its first boot, as before.
func sdImageSet() map[string][]string {
	set := map[string][]string{
		relBookworm: {"networkd", "ifupdown", "networkmanager"},
		relTrixie:   {"networkd", "netplan"},
		relForky:    {"networkd", "netplan"},
	}
	if fullMatrix() {
		set[relTrixie] = append(set[relTrixie], "netplan-nm")
		set[relForky] = append(set[relForky], "networkmanager")
	}
	return set
}

// prebuildImages starts, without waiting, the builds of every rootfs tar
// of sdImageSet (three at a time, sdBuilds) and of the .deb, when the run
// includes TestIntegrationSystemdImages on a host that can boot the
// guest: TestMain calls it before any test runs. The tests, and
// TestIntegrationSystemdImages, wait on the same builds (cachedRootfsTar,
// debOnce) and report their errors. Left to the tests, a release's base
// was built once a test of that release held one of go test's parallel
// slots, which the guests' tests hold while they boot: in make test
// Debian 13's base was built alone 14 minutes into the run while one VM
// slot stood idle, where it could have been built beside the others at
// the start.
func prebuildImages() {
	if testing.Short() || !runIncludes("TestIntegrationSystemdImages") || sdHostSkip() != "" {
		return
	}
	if skip, err := sdKernelInit(); skip != "" || err != nil {
		return
	}
	for release, stacks := range sdImageSet() {
		for _, stack := range stacks {
			go cachedRootfsTar(release, stack)
		}
	}
	go func() {
		if wd, err := sdWorkDir(); err == nil {
			sharedDeb(wd)
		}
	}()
}

// sharedDeb is the run's .deb, built once (buildDeb) by whoever asks first.
func sharedDeb(wd string) (string, error) {
	debOnce.Do(func() { debPath, debErr = buildDeb(wd) })
	return debPath, debErr
}

// TestIntegrationSystemdImages waits for the cached rootfs tars of
// sdImageSet, built from the start of the run (prebuildImages), and
// boots nothing: every image at the start of a run, beside the other
// packages' tests in make test (scripts/test.sh), rather than each on its
// first boot. In a run that finds the tars cached it costs a stat of
// each.
func TestIntegrationSystemdImages(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	needSDHost(t)
	for release, stacks := range sdImageSet() {
		for _, stack := range stacks {
			t.Run(release+"/"+stack, func(t *testing.T) {
				t.Parallel()
				if skip, err := sdKernelInit(); skip != "" {
					t.Skip(skip)
				} else if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if _, err := cachedRootfsTar(release, stack); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s/%s: the rootfs tar is ready after %v", release, stack, time.Since(start).Round(time.Second))
			})
		}
	}
}

// sdVariants are the image variants: each installs its files into the
// unpacked root after the .deb and the report, never into the cached tar
// (whose hash would change, and every image's rebuild with it).
var sdVariants = map[string]func(root string) error{
	"vmware":      installVMwareTools,
	"nm-catchall": installNMCatchAll,
}

func needSDImage(t *testing.T, release, stack string, withSeedkeeper bool, variant string) *sdImage {
	t.Helper()
	needSDHost(t)
	if _, ok := sdStackPackages[stack]; !ok {
		t.Fatalf("no such network stack %q", stack)
	}
	if _, ok := sdReleasePackages[release]; !ok {
		t.Fatalf("no such Debian release %q", release)
	}
	o := onceFor(sdImages, fmt.Sprintf("%s/%s/%v/%s", release, stack, withSeedkeeper, variant))
	o.once.Do(func() { o.img, o.skip, o.err = buildSDImage(release, stack, withSeedkeeper, variant) })
	if o.skip != "" {
		t.Skip(o.skip)
	}
	if o.err != nil {
		t.Fatalf("building the %s %s image: %v", release, stack, o.err)
	}
	return o.img
}

func sdWorkDir() (string, error) {
	sdMu.Lock()
	defer sdMu.Unlock()
	if workDir == "" {
		d, err := os.MkdirTemp("", "seedkeeper-vm-")
		if err != nil {
			return "", err
		}
		workDir = d
	}
	return workDir, nil
}

func sdCacheDir() string {
	if d := os.Getenv(envVMCache); d != "" {
		return d
	}
	dir := os.Getenv(EnvKernelDir)
	if dir == "" {
		dir = DefaultKernelDir
	}
	return filepath.Join(dir, "rootfs")
}

// sdKernelInit finds the pinned kernel and extracts its vmlinux, once a
// run: a skip message when the kernel is not installed.
func sdKernelInit() (string, error) {
	sdKernel.once.Do(func() {
		dir := os.Getenv(EnvKernelDir)
		if dir == "" {
			dir = DefaultKernelDir
		}
		k, err := findKernel(dir)
		if err != nil {
			sdKernel.skip = fmt.Sprintf("needs the kernel: %v; run scripts/test-deps.sh as root, or set %s", err, EnvKernelDir)
			return
		}
		wd, err := sdWorkDir()
		if err != nil {
			sdKernel.err = err
			return
		}
		sdKernel.k = k
		sdKernel.vmlinux, sdKernel.err = k.vmlinux(wd)
	})
	return sdKernel.skip, sdKernel.err
}

// cachedRootfsTar is rootfsTar once a run for each release and stack.
// At most three rootfs builds run at a time (sdBuilds): each is minutes
// of CPU and network.
func cachedRootfsTar(release, stack string) (string, error) {
	o := onceFor(sdTars, release+"/"+stack)
	o.once.Do(func() {
		o.img = &sdImage{}
		o.img.disk, o.err = rootfsTar(sdKernel.k, release, stack)
	})
	return o.img.disk, o.err
}

func buildSDImage(release, stack string, withSeedkeeper bool, variant string) (*sdImage, string, error) {
	if skip, err := sdKernelInit(); skip != "" || err != nil {
		return nil, skip, err
	}
	wd, err := sdWorkDir()
	if err != nil {
		return nil, "", err
	}
	tarPath, err := cachedRootfsTar(release, stack)
	if err != nil {
		return nil, "", err
	}
	deb := ""
	if withSeedkeeper {
		if deb, err = sharedDeb(wd); err != nil {
			return nil, "", err
		}
	}

	name := release + "-" + stack + "-plain"
	if withSeedkeeper {
		name = release + "-" + stack + "-seedkeeper"
	}
	if variant != "" {
		name += "-" + variant
	}
	root := filepath.Join(wd, name+".root")
	defer os.RemoveAll(root)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, "", err
	}
	if err := run("tar", "-C", root, "--numeric-owner", "-xpf", tarPath); err != nil {
		return nil, "", err
	}
	if deb != "" {
		if err := copyFile(deb, filepath.Join(root, "tmp", "seedkeeper.deb"), 0o644); err != nil {
			return nil, "", err
		}
		if err := run("chroot", root, "dpkg", "-i", "/tmp/seedkeeper.deb"); err != nil {
			return nil, "", fmt.Errorf("installing the .deb: %w", err)
		}
		os.Remove(filepath.Join(root, "tmp", "seedkeeper.deb"))
	}
	if err := installReport(root); err != nil {
		return nil, "", err
	}
	if variant != "" {
		if err := sdVariants[variant](root); err != nil {
			return nil, "", fmt.Errorf("the %s variant: %w", variant, err)
		}
	}
	img := &sdImage{release: release, stack: stack, seedkeeper: withSeedkeeper, vmlinux: sdKernel.vmlinux,
		disk: filepath.Join(wd, name+".img"), initrd: filepath.Join(wd, name+".initrd")}
	if err := copyFile(filepath.Join(root, "boot", "initrd.img-"+sdKernel.k.Release), img.initrd, 0o644); err != nil {
		return nil, "", fmt.Errorf("the image has no initramfs: %w", err)
	}
	if err := run("mkfs.ext4", "-q", "-F", "-L", "skroot", "-d", root, img.disk, "3G"); err != nil {
		return nil, "", err
	}
	return img, "", nil
}

// installReport puts the report script and units into the image and
// enables them, with the hang timer set 3 minutes before the host gives up,
// and the image's cloud-init settings of the test (systemd/sk-cloud.cfg).
// None of them is an input of the cached rootfs.
func installReport(root string) error {
	hang := sdBootTimeout() - 3*time.Minute
	for _, f := range []struct {
		src, dst string
		mode     os.FileMode
	}{
		{"sk-report.sh", "/usr/local/sbin/sk-report", 0o755},
		{"sk-report.service", "/etc/systemd/system/sk-report.service", 0o644},
		{"sk-report-late.service", "/etc/systemd/system/sk-report-late.service", 0o644},
		{"sk-report-late.timer", "/etc/systemd/system/sk-report-late.timer", 0o644},
		{"sk-dropins", "/etc/systemd/system-generators/sk-dropins", 0o755},
		{"sk-cloud.cfg", "/etc/cloud/cloud.cfg.d/80-sk-test.cfg", 0o644},
	} {
		b, err := os.ReadFile(filepath.Join("systemd", f.src))
		if err != nil {
			return err
		}
		b = bytes.ReplaceAll(b, []byte("@HANG@"), []byte(fmt.Sprintf("%ds", int(hang.Seconds()))))
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f.dst)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, f.dst), b, f.mode); err != nil {
			return err
		}
	}
	return run("chroot", root, "systemctl", "enable", "--quiet", "sk-report.service", "sk-report-late.timer")
}

// rootfsTar returns the cached root filesystem tar of stack on release,
// building it when no tar for the current inputs exists: the stack's
// packages and its hook (systemd/layer.sh, systemd/stack-STACK.sh)
// installed on an unpacked copy of the release's base (rootfsBase), so
// that a release's stacks share one mmdebstrap run and the same package
// versions.
func rootfsTar(k kernel, release, stack string) (string, error) {
	base, baseKey, err := rootfsBase(k, release)
	if err != nil {
		return "", err
	}
	layer, err := os.ReadFile(filepath.Join("systemd", "layer.sh"))
	if err != nil {
		return "", err
	}
	stackHook, err := os.ReadFile(filepath.Join("systemd", "stack-"+stack+".sh"))
	if err != nil {
		return "", err
	}
	pkgs := append(slices.Clone(sdStackPackages[stack]), sdReleaseStackPackages[release][stack]...)
	sum := inputsKey([]byte(baseKey), layer, stackHook, []byte(stack), []byte(strings.Join(pkgs, ",")))
	cache := sdCacheDir()
	out := filepath.Join(cache, fmt.Sprintf("%s-%s-%s.tar", release, stack, sum))
	if st, err := os.Stat(out); err == nil && st.Size() > 0 {
		return out, nil
	}
	sdBuilds <- struct{}{}
	defer func() { <-sdBuilds }()
	layerPath, err := filepath.Abs(filepath.Join("systemd", "layer.sh"))
	if err != nil {
		return "", err
	}
	root, err := os.MkdirTemp(cache, release+"-"+stack+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(root)
	start := time.Now()
	if err := run("tar", "-C", root, "--numeric-owner", "-xpf", base); err != nil {
		return "", err
	}
	// A mount namespace of its own: the chroot's /proc, /sys and /dev go
	// with the process, however it ends.
	args := append([]string{"--mount", "--propagation", "private", "sh", layerPath, root, stack}, pkgs...)
	if err := run("unshare", args...); err != nil {
		return "", fmt.Errorf("the %s %s layer: %w", release, stack, err)
	}
	tmp := out + ".tmp"
	if err := run("tar", "-C", root, "--numeric-owner", "-cpf", tmp, "."); err != nil {
		os.Remove(tmp)
		return "", err
	}
	fmt.Fprintf(os.Stderr, "vm: built the %s %s rootfs %s on its base in %v\n", release, stack, filepath.Base(out), time.Since(start).Round(time.Second))
	removeStale(cache, release+"-"+stack, out)
	return out, os.Rename(tmp, out)
}

// inputsKey is the cache key of a tar: a hash of its inputs, each
// prefixed by its length.
func inputsKey(parts ...[]byte) string {
	h := sha256.New()
	for _, part := range parts {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// removeStale removes the cached tars named NAME-*.tar but keep: built
// from older inputs.
func removeStale(cache, name, keep string) {
	old, _ := filepath.Glob(filepath.Join(cache, name+"-*.tar"))
	for _, p := range old {
		// RELEASE-netplan-* also matches RELEASE-netplan-nm-*.
		if p != keep && !strings.Contains(strings.TrimPrefix(filepath.Base(p), name+"-"), "-") {
			os.Remove(p)
		}
	}
}

// rootfsBase returns the cached base tar of release and its key, building
// it with mmdebstrap (sdPackages and the release's own, the kernel's
// modules and the image's initramfs: systemd/customize.sh) when no tar for
// the current inputs exists; built once per release and test run at most.
// Bookworm is built from this machine's apt sources as they are; another
// release from the same mirror with the suite changed (sdSources).
func rootfsBase(k kernel, release string) (string, string, error) {
	o := onceFor(sdTars, release+"/")
	o.once.Do(func() {
		o.img = &sdImage{}
		o.img.disk, o.img.release, o.err = buildRootfsBase(k, release)
	})
	if o.err != nil {
		return "", "", o.err
	}
	return o.img.disk, o.img.release, nil
}

func buildRootfsBase(k kernel, release string) (string, string, error) {
	apt := os.Getenv(envAptList)
	if apt == "" {
		for _, p := range []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"} {
			if st, err := os.Stat(p); err == nil && st.Size() > 0 {
				apt = p
				break
			}
		}
	}
	if apt == "" {
		return "", "", fmt.Errorf("no apt sources on this machine for mmdebstrap; set %s", envAptList)
	}
	hook, err := os.ReadFile(filepath.Join("systemd", "customize.sh"))
	if err != nil {
		return "", "", err
	}
	sources, err := os.ReadFile(apt)
	if err != nil {
		return "", "", err
	}
	mirror := apt // what mmdebstrap is given: a sources file, or one line
	if release != relBookworm {
		line, err := sdSources(string(sources), release)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", apt, err)
		}
		sources, mirror = []byte(line), line
	}
	ver, _ := exec.Command("mmdebstrap", "--version").Output()
	pkgs := append(slices.Clone(sdPackages), sdReleasePackages[release]...)
	// A mirror's snapshot may serve a suite whose Release file is past
	// its Valid-Until date.
	const aptopt = `Acquire::Check-Valid-Until "false"`
	sum := inputsKey(hook, sources, ver, []byte(k.Release), []byte(release), []byte(strings.Join(pkgs, ",")), []byte(aptopt))
	cache := sdCacheDir()
	out := filepath.Join(cache, fmt.Sprintf("%s-base-%s.tar", release, sum))
	if st, err := os.Stat(out); err == nil && st.Size() > 0 {
		return out, sum, nil
	}
	sdBuilds <- struct{}{}
	defer func() { <-sdBuilds }()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", "", err
	}
	hookPath, err := filepath.Abs(filepath.Join("systemd", "customize.sh"))
	if err != nil {
		return "", "", err
	}
	tmp := out + ".tmp"
	cmd := exec.Command("mmdebstrap", "--mode=root", "--variant=minbase", "--format=tar", "--quiet",
		"--aptopt="+aptopt, "--skip=cleanup/apt/lists",
		"--include="+strings.Join(pkgs, ","),
		"--customize-hook="+fmt.Sprintf("sh %s \"$1\" %s %s", hookPath, k.Tree, k.Release),
		release, tmp, mirror)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", "", fmt.Errorf("mmdebstrap (%s): %w\n%s", release, err, tail(buf.String(), 40))
	}
	fmt.Fprintf(os.Stderr, "vm: built the %s base rootfs %s in %v\n", release, filepath.Base(out), time.Since(start).Round(time.Second))
	removeStale(cache, release+"-base", out)
	return out, sum, os.Rename(tmp, out)
}

// sdSources returns the one-line apt source of release's main suite on the
// mirror this machine's sources (a sources.list or a deb822 .sources
// file, as read from src) use for Debian itself: the first deb entry whose
// suite is a plain release name (not -security, -updates, -backports),
// with its Signed-By kept. The host's own files are never changed.
func sdSources(src, release string) (string, error) {
	plain := func(suite string) bool {
		return suite != "" && !strings.ContainsAny(suite, "-/")
	}
	line := func(uri, signedBy string) string {
		opt := ""
		if signedBy != "" {
			opt = "[signed-by=" + signedBy + "] "
		}
		return fmt.Sprintf("deb %s%s %s main", opt, uri, release)
	}
	// deb822: blank-line separated stanzas of Key: value.
	if strings.Contains(src, "URIs:") {
		for _, stanza := range strings.Split(src, "\n\n") {
			f := map[string]string{}
			for _, l := range strings.Split(stanza, "\n") {
				if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(strings.TrimSpace(l), "#") {
					f[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
				}
			}
			if !slices.Contains(strings.Fields(f["types"]), "deb") || f["uris"] == "" {
				continue
			}
			if slices.ContainsFunc(strings.Fields(f["suites"]), plain) {
				return line(strings.Fields(f["uris"])[0], f["signed-by"]), nil
			}
		}
		return "", fmt.Errorf("no deb822 entry of a Debian release suite to take the mirror from for %s", release)
	}
	for _, l := range strings.Split(src, "\n") {
		fs := strings.Fields(l)
		if len(fs) < 3 || fs[0] != "deb" {
			continue
		}
		signedBy := ""
		if strings.HasPrefix(fs[1], "[") {
			// Options: [a=b c=d]
			var opts []string
			for len(fs) > 1 {
				opts = append(opts, strings.Trim(fs[1], "[]"))
				end := strings.HasSuffix(fs[1], "]")
				fs = append(fs[:1], fs[2:]...)
				if end {
					break
				}
			}
			for _, o := range opts {
				if v, ok := strings.CutPrefix(o, "signed-by="); ok {
					signedBy = v
				}
			}
		}
		if len(fs) >= 3 && plain(fs[2]) {
			return line(fs[1], signedBy), nil
		}
	}
	return "", fmt.Errorf("no deb line of a Debian release suite to take the mirror from for %s", release)
}

// buildDeb builds seedkeeper's .deb from this tree (make deb), or takes
// the one $SEEDKEEPER_VM_DEB names.
func buildDeb(wd string) (string, error) {
	if p := os.Getenv(envVMDeb); p != "" {
		return p, nil
	}
	bin := filepath.Join(wd, "bin")
	cmd := exec.Command("make", "-s", "deb", "BIN="+bin)
	cmd.Dir = filepath.Join("..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("make deb: %w\n%s", err, tail(string(b), 30))
	}
	debs, _ := filepath.Glob(filepath.Join(bin, "pkg", "*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("make deb left %d .deb files in %s", len(debs), filepath.Join(bin, "pkg"))
	}
	return debs[0], nil
}

func run(name string, args ...string) error {
	b, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(string(b), 30))
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// sdDisk is a scenario's persistent disk: a qcow2 overlay of an image.
type sdDisk struct {
	img  *sdImage
	path string
	n    int // boots so far
}

func newSDDisk(t *testing.T, img *sdImage) *sdDisk {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk.qcow2")
	if err := run("qemu-img", "create", "-q", "-f", "qcow2", "-b", img.disk, "-F", "raw", p); err != nil {
		t.Fatal(err)
	}
	return &sdDisk{img: img, path: p}
}

// clone copies the disk as it is now, as a hypervisor clones a VM.
func (d *sdDisk) clone(t *testing.T) *sdDisk {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clone.qcow2")
	if err := run("cp", "--sparse=always", d.path, p); err != nil {
		t.Fatal(err)
	}
	return &sdDisk{img: d.img, path: p, n: d.n}
}

// sdNIC is a virtio NIC on its own QEMU user-mode network (which serves
// DHCP: the guest gets .15 of net).
type sdNIC struct {
	MAC string
	Net string // e.g. 10.0.2.0/24; empty for QEMU's default
}

// sdBoot is one boot of a disk.
type sdBoot struct {
	Name    string
	UUID    string          // the SMBIOS system UUID
	Seed    *seedFiles      // the cidata ISO on the IDE CD-ROM; nil for none
	NICs    []sdNIC         // present at boot
	Hotplug *sdNIC          // added from the monitor once the guest is up
	Host    *mdatatest.Host // SmartOS: SMBIOS product and ttyS1 wired to it
	Append  []string        // more kernel arguments
	SMBIOS  []string        // more -smbios options, e.g. "type=1,product=..."
	// During runs on the host while the guest boots (monitor commands,
	// a metadata host going up); it must return before the guest's
	// report can be complete. Where it knows the guest idles, it lets
	// another guest have the slot with m.idle.
	During func(t *testing.T, m *machine)
	// Idles says that During gives the slot up for minutes (m.idle): the
	// boot then takes a slot before every other (prioIdler), so that its
	// wait runs beside other guests rather than at the end of a run.
	Idles bool
}

// seedFiles is a Proxmox-style NoCloud seed: Proxmox's instance-id is the
// SHA-1 of user-data followed by network-config, unless MetaData is set.
type seedFiles struct {
	UserData, NetworkConfig, MetaData string
}

func (s *seedFiles) instanceID() string {
	return fmt.Sprintf("%x", sha1.Sum([]byte(s.UserData+s.NetworkConfig)))
}

func (s *seedFiles) iso(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "seed")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	md := s.MetaData
	if md == "" {
		md = "instance-id: " + s.instanceID() + "\n"
	}
	for name, body := range map[string]string{"user-data": s.UserData, "network-config": s.NetworkConfig, "meta-data": md, "vendor-data": ""} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "seed.iso")
	// Proxmox VE's flags.
	if err := run("genisoimage", "-quiet", "-iso-level", "3", "-J", "-R", "-V", "cidata", "-o", out, src); err != nil {
		t.Fatal(err)
	}
	return out
}

// sdGuestCost is on every systemd guest's kernel command line: what
// costs CPU under TCG and tests nothing of seedkeeper's. Every boot is
// CPU-bound from power-on to cloud-final, and make test is too.
//   - mitigations=off: the guest kernel's Spectre barriers and retpolines;
//   - modprobe.blacklist: the drivers udev loads at coldplug for QEMU's
//     legacy devices (floppy, parallel port, SMBus, the CPU's frequency
//     and virtualization extensions, SCSI generic), each module load a
//     decompression and a signature check, all of them beside
//     cloud-init-local's start. seedkeeper reads the CD through sr_mod,
//     which stays.
//
// A bookworm ifupdown boot with a hot-added NIC measured 122.5 s of QEMU
// CPU without them and 105.6 s with them, cloud-final 20 s sooner.
var sdGuestCost = []string{
	"mitigations=off",
	"modprobe.blacklist=floppy,parport,parport_pc,ppdev,kvm,kvm_amd,kvm_intel,i2c_piix4,powernow_k8,sg,pcspkr,serio_raw",
}

// sdCmdlineMax is the x86 kernel's COMMAND_LINE_SIZE, with its NUL.
const sdCmdlineMax = 2048

// sdReport is what one boot reported.
type sdReport struct {
	name    string
	files   map[string][]byte
	console string
	wall    time.Duration // QEMU start to exit
}

// boot boots the disk once and returns its report. The test fails when the
// guest does not report (the console's tail is logged).
func (d *sdDisk) boot(t *testing.T, b sdBoot) *sdReport {
	t.Helper()
	d.n++
	if b.Name == "" {
		b.Name = fmt.Sprintf("boot%d", d.n)
	}
	dir := filepath.Join(t.TempDir(), b.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.img")
	if err := os.WriteFile(report, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(report, 32<<20); err != nil {
		t.Fatal(err)
	}
	appendArgs := append(append([]string{"root=LABEL=skroot", "rw", "console=ttyS0", "quiet", "panic=-1"}, sdGuestCost...), b.Append...)
	if b.Hotplug != nil {
		appendArgs = append(appendArgs, "sk.hotplug="+b.Hotplug.MAC)
	}
	// The kernel truncates a longer line without a word, and the
	// guestinfo boots carry their metadata on it.
	if n := len(strings.Join(appendArgs, " ")); n >= sdCmdlineMax {
		t.Fatalf("%s: the kernel command line is %d bytes; the guest kernel keeps %d", b.Name, n, sdCmdlineMax-1)
	}
	args := []string{
		"-accel", "tcg", "-m", "1024", "-smp", "1", "-nographic", "-no-reboot",
		"-kernel", d.img.vmlinux, "-initrd", d.img.initrd,
		"-append", strings.Join(appendArgs, " "),
		"-serial", "stdio",
		"-drive", "file=" + d.path + ",if=virtio,format=qcow2",
		"-drive", "file=" + report + ",if=virtio,format=raw",
		"-nic", "none",
	}
	m := &machine{t: t, dir: dir, exited: make(chan struct{})}
	mdSock := filepath.Join(dir, "mdata.sock")
	if b.Host != nil {
		args = append(args, "-chardev", "socket,id=md,path="+mdSock+",server=on,wait=off",
			"-serial", "chardev:md", "-smbios", "type=1,product=SmartDC HVM")
	}
	if b.UUID != "" {
		args = append(args, "-smbios", "type=1,uuid="+b.UUID)
	}
	for _, s := range b.SMBIOS {
		args = append(args, "-smbios", s)
	}
	if b.Hotplug != nil {
		args = append(args, "-monitor", "unix:"+m.monitorPath()+",server=on,wait=off")
	} else {
		args = append(args, "-monitor", "none")
	}
	for i, n := range b.NICs {
		args = append(args, "-netdev", netdev(fmt.Sprintf("n%d", i), n), "-device", "virtio-net-pci,netdev="+fmt.Sprintf("n%d", i)+",mac="+n.MAC+",romfile=")
	}
	if b.Seed != nil {
		args = append(args, "-drive", "file="+b.Seed.iso(t, dir)+",media=cdrom,readonly=on")
	}

	// One slot per running guest; During may give it up while the guest
	// idles (machine.idle).
	prio := bootPriority(d.n)
	if b.Idles {
		prio = prioIdler
	}
	if !vmSlots.acquire(prio, t.Context().Done(), nil) {
		t.Fatal("test ended while waiting for a VM slot")
	}
	m.slots, m.slot = vmSlots, true
	defer func() {
		if m.slot {
			m.slots.release()
		}
	}()

	ctx, cancel := context.WithTimeout(t.Context(), sdBootTimeout())
	defer cancel()
	m.ctx = ctx
	m.cmd = exec.CommandContext(ctx, "qemu-system-x86_64", args...)
	stdin, err := m.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stderr = &m.qemuErr
	logf, err := os.Create(filepath.Join(dir, "console.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	m.con = newConsoleLog(logf)
	t.Logf("%s: qemu-system-x86_64 %s", b.Name, strings.Join(args, " "))
	m.started = time.Now()
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("starting QEMU: %v", err)
	}
	go m.con.read(stdout)
	go func() {
		m.cmd.Wait()
		close(m.exited)
	}()
	// The boot's cost once QEMU has exited, on every way out: fail waits
	// for the exit, and a test that stops early has QEMU killed here.
	defer func() {
		select {
		case <-m.exited:
		default:
			m.cmd.Process.Kill()
			<-m.exited
		}
		vmCost.add(t, b.Name, m.cmd.ProcessState, time.Since(m.started))
	}()
	fail := func(format string, a ...any) {
		t.Helper()
		select {
		case <-m.exited:
		default:
			m.cmd.Process.Kill()
			<-m.exited
		}
		<-m.con.eof
		t.Fatalf("%s: %s\nconsole (%s), last lines:\n%s\nQEMU stderr: %s", b.Name, fmt.Sprintf(format, a...), logf.Name(), m.con.tail(60), m.qemuErr.String())
	}

	if b.Host != nil {
		conn := m.dial(mdSock)
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := b.Host.Serve(conn); err != nil && !errors.Is(err, net.ErrClosed) {
				t.Logf("mdata host: %v", err)
			}
		}()
		defer func() {
			conn.Close()
			<-served
		}()
	}
	if b.Hotplug != nil {
		if _, err := m.con.wait(ctx, "up "); err != nil {
			fail("waiting for the guest to come up: %v", err)
		}
		m.monitor("netdev_add " + netdev("hp", *b.Hotplug))
		m.monitor("device_add virtio-net-pci,netdev=hp,id=hpnic,mac=" + b.Hotplug.MAC + ",romfile=")
	}
	if b.During != nil {
		b.During(t, m)
	}
	select {
	case <-m.exited:
	case <-ctx.Done():
		fail("no power-off within %v", sdBootTimeout())
	}
	<-m.con.eof
	r := &sdReport{name: b.Name, console: strings.Join(m.con.lines, "\n"), wall: time.Since(m.started), files: map[string][]byte{}}
	if err := r.read(report); err != nil {
		fail("reading the report: %v (QEMU: %v)", err, m.cmd.ProcessState)
	}
	if _, ok := r.files["kind"]; !ok {
		fail("the guest wrote no report")
	}
	t.Logf("%s: boot to power-off %v (%s); %s", b.Name, r.wall.Round(time.Second), strings.TrimSpace(string(r.files["kind"])), r.timeline())
	if keep := os.Getenv(envVMKeep); keep != "" {
		r.keep(t, filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"), b.Name))
	}
	if os.Getenv(envShowConsole) != "" {
		t.Logf("%s console:\n%s", b.Name, r.console)
	}
	return r
}

func netdev(id string, n sdNIC) string {
	s := "user,id=" + id + ",restrict=on"
	if n.Net != "" {
		s += ",net=" + n.Net
	}
	return s
}

func (r *sdReport) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		r.files[strings.TrimPrefix(h.Name, "./")] = b
	}
}

// get returns a report file, trimmed; the test fails when it is missing.
func (r *sdReport) get(t *testing.T, name string) string {
	t.Helper()
	b, ok := r.files[name]
	if !ok {
		t.Fatalf("%s: the report has no %s", r.name, name)
	}
	return strings.TrimSpace(string(b))
}

func (r *sdReport) instanceID(t *testing.T) string {
	t.Helper()
	id := r.get(t, "instance-id")
	if id == "" {
		t.Fatalf("%s: cloud-init has no instance-id (did it run?)\n%s", r.name, r.get(t, "units"))
	}
	return id
}

// hostKeys returns the SSH host key fingerprints, sorted.
func (r *sdReport) hostKeys(t *testing.T) []string {
	t.Helper()
	var keys []string
	for _, l := range strings.Split(r.get(t, "ssh-host-keys"), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && strings.HasPrefix(f[1], "SHA256:") {
			keys = append(keys, f[1])
		}
	}
	if len(keys) == 0 {
		t.Fatalf("%s: no SSH host keys: %q", r.name, r.get(t, "ssh-host-keys"))
	}
	slices.Sort(keys)
	return keys
}

// addrs returns the IPv4 addresses (CIDR) of the link with mac, from the
// named `ip -j addr` snapshot.
func (r *sdReport) addrs(t *testing.T, snapshot, mac string) []string {
	t.Helper()
	var links []struct {
		Ifname   string `json:"ifname"`
		Address  string `json:"address"`
		AddrInfo []struct {
			Family    string `json:"family"`
			Local     string `json:"local"`
			Prefixlen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(r.get(t, snapshot)), &links); err != nil {
		t.Fatalf("%s: %s: %v", r.name, snapshot, err)
	}
	for _, l := range links {
		if strings.EqualFold(l.Address, mac) {
			var out []string
			for _, a := range l.AddrInfo {
				if a.Family == "inet" {
					out = append(out, fmt.Sprintf("%s/%d", a.Local, a.Prefixlen))
				}
			}
			slices.Sort(out)
			return out
		}
	}
	t.Fatalf("%s: no link with MAC %s in %s", r.name, mac, snapshot)
	return nil
}

// unit returns the `systemctl show` properties of a unit.
func (r *sdReport) unit(t *testing.T, name string) map[string]string {
	t.Helper()
	props := map[string]string{}
	in := false
	for _, l := range strings.Split(r.get(t, "units"), "\n") {
		if strings.HasPrefix(l, "[") {
			in = l == "["+name+"]"
			continue
		}
		if k, v, ok := strings.Cut(l, "="); in && ok {
			props[k] = v
		}
	}
	if len(props) == 0 {
		t.Fatalf("%s: no unit %s in the report", r.name, name)
	}
	return props
}

func (r *sdReport) mono(t *testing.T, unit, prop string) time.Duration {
	t.Helper()
	n, err := strconv.ParseInt(r.unit(t, unit)[prop], 10, 64)
	if err != nil {
		t.Fatalf("%s: %s %s: %v", r.name, unit, prop, err)
	}
	return time.Duration(n) * time.Microsecond
}

// timeline summarises the units' place in the boot, for the log.
func (r *sdReport) timeline() string {
	var parts []string
	units := string(r.files["units"])
	for _, u := range []string{"seedkeeper-boot", "cloud-init-local", "cloud-final"} {
		p := parseUnits(units, u)
		start, _ := strconv.ParseInt(p["InactiveExitTimestampMonotonic"], 10, 64)
		end, _ := strconv.ParseInt(p["ActiveEnterTimestampMonotonic"], 10, 64)
		cpu, _ := strconv.ParseInt(p["CPUUsageNSec"], 10, 64)
		if start == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1fs→%.1fs (cpu %.1fs)", u, float64(start)/1e6, float64(end)/1e6, float64(cpu)/1e9))
	}
	return strings.Join(parts, ", ")
}

func parseUnits(units, name string) map[string]string {
	props := map[string]string{}
	in := false
	for _, l := range strings.Split(units, "\n") {
		if strings.HasPrefix(l, "[") {
			in = l == "["+name+"]"
			continue
		}
		if k, v, ok := strings.Cut(l, "="); in && ok {
			props[k] = v
		}
	}
	return props
}

// files returns the report's listing of the files the boot flow may write:
// path → "inode mtime size".
func (r *sdReport) fileStats(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(r.get(t, "files"), "\n") {
		if p, rest, ok := strings.Cut(l, " "); ok {
			out[p] = rest
		}
	}
	return out
}

// keep writes the report's files and the console into dir.
func (r *sdReport) keep(t *testing.T, dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("keeping the report: %v", err)
		return
	}
	for name, b := range r.files {
		if strings.Contains(name, "/") {
			continue
		}
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "console.log"), []byte(r.console), 0o644)
}
