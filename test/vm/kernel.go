package vm

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// KernelRelease is the pinned Debian kernel ABI the test boots: the
// package linux-image-KernelRelease, extracted with dpkg-deb -x.
const KernelRelease = "6.1.0-57-amd64"

// DefaultKernelDir is where scripts/test-deps.sh keeps the kernel package
// and its extracted tree (linux-image-KernelRelease/); the environment
// variable SEEDKEEPER_VM_KERNEL_DIR overrides it.
const DefaultKernelDir = "/var/cache/seedkeeper-test"

// EnvKernelDir names the environment variable that overrides
// DefaultKernelDir. It may name the cache directory or the extracted tree
// itself.
const EnvKernelDir = "SEEDKEEPER_VM_KERNEL_DIR"

// xzMagic starts the xz stream inside a Debian vmlinuz (CONFIG_KERNEL_XZ).
var xzMagic = []byte("\xfd7zXZ\x00")

// kernel is an extracted kernel package.
type kernel struct {
	Tree    string // the dpkg-deb -x tree: boot/ and lib/modules/ under it
	Release string // e.g. 6.1.0-57-amd64
}

// Vmlinuz is the compressed kernel image.
func (k kernel) Vmlinuz() string { return filepath.Join(k.Tree, "boot", "vmlinuz-"+k.Release) }

// ModuleDir is the module tree of the release.
func (k kernel) ModuleDir() string { return filepath.Join(k.Tree, "lib", "modules", k.Release) }

// findKernel looks in dir for an extracted kernel package: dir itself or
// a directory linux-image-*/ in it, with boot/vmlinuz-RELEASE and
// lib/modules/RELEASE/. The pinned KernelRelease wins over any other.
func findKernel(dir string) (kernel, error) {
	var found []kernel
	for _, tree := range append([]string{dir}, globDirs(filepath.Join(dir, "linux-image-*"))...) {
		zs, _ := filepath.Glob(filepath.Join(tree, "boot", "vmlinuz-*"))
		for _, z := range zs {
			k := kernel{Tree: tree, Release: strings.TrimPrefix(filepath.Base(z), "vmlinuz-")}
			if st, err := os.Stat(k.ModuleDir()); err != nil || !st.IsDir() {
				continue
			}
			if k.Release == KernelRelease {
				return k, nil
			}
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return kernel{}, fmt.Errorf("no extracted kernel package (boot/vmlinuz-* with lib/modules/) in %s or %s", dir, filepath.Join(dir, "linux-image-*"))
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Release < found[j].Release })
	return found[len(found)-1], nil
}

func globDirs(pattern string) []string {
	ms, _ := filepath.Glob(pattern)
	var dirs []string
	for _, m := range ms {
		if st, err := os.Stat(m); err == nil && st.IsDir() {
			dirs = append(dirs, m)
		}
	}
	return dirs
}

// vmlinux returns the path of the uncompressed kernel, which QEMU boots
// through its PVH entry point much faster than the vmlinuz under TCG. It
// is extracted once next to the vmlinuz (boot/vmlinux-RELEASE), or into
// scratch when that directory is not writable.
func (k kernel) vmlinux(scratch string) (string, error) {
	for _, out := range []string{
		filepath.Join(k.Tree, "boot", "vmlinux-"+k.Release),
		filepath.Join(scratch, "vmlinux-"+k.Release),
	} {
		if st, err := os.Stat(out); err == nil && st.Size() > 0 {
			return out, nil
		}
		err := extractVmlinux(k.Vmlinuz(), out)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, errReadOnly) {
			return "", err
		}
	}
	return "", fmt.Errorf("no writable place for the uncompressed kernel")
}

// errReadOnly says a place cannot take the extracted kernel.
var errReadOnly = errors.New("not writable")

// extractVmlinux decompresses the xz payload of a bzImage (from the
// "\xfd7zXZ\x00" magic on) into out, with the xz tool (or Python's lzma
// module when xz is missing). The payload is followed by other data, so
// only the first stream is decompressed.
func extractVmlinux(vmlinuz, out string) error {
	b, err := os.ReadFile(vmlinuz)
	if err != nil {
		return err
	}
	i := bytes.Index(b, xzMagic)
	if i < 0 {
		return fmt.Errorf("%s: no xz stream (is the kernel compressed with xz?)", vmlinuz)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".vmlinux-*")
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EROFS) {
			return fmt.Errorf("%w: %w", errReadOnly, err)
		}
		return err
	}
	defer os.Remove(tmp.Name())
	var cmd *exec.Cmd
	if p, err := exec.LookPath("xz"); err == nil {
		cmd = exec.Command(p, "-dc", "--single-stream")
	} else if p, err := exec.LookPath("python3"); err == nil {
		cmd = exec.Command(p, "-c", "import lzma,sys; sys.stdout.buffer.write(lzma.LZMADecompressor().decompress(sys.stdin.buffer.read()))")
	} else {
		tmp.Close()
		return fmt.Errorf("decompressing %s: neither xz nor python3 is installed", vmlinuz)
	}
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(b[i:]), tmp, &stderr
	err = cmd.Run()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("decompressing %s with %s: %w: %s", vmlinuz, filepath.Base(cmd.Path), err, strings.TrimSpace(stderr.String()))
	}
	head := make([]byte, 4)
	if f, err := os.Open(tmp.Name()); err == nil {
		f.Read(head)
		f.Close()
	}
	if !bytes.Equal(head, []byte("\x7fELF")) {
		return fmt.Errorf("decompressing %s: the result is not an ELF image", vmlinuz)
	}
	return os.Rename(tmp.Name(), out)
}

// modulePaths returns the files of the named modules under the module
// tree, in the order given, leaving out the ones built into the kernel
// (modules.builtin). Compressed modules (.ko.xz) are not supported and are
// reported as missing; Debian 12's kernel ships them uncompressed.
func (k kernel) modulePaths(names []string) ([]string, error) {
	builtin := map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(k.ModuleDir(), "modules.builtin")); err == nil {
		for _, l := range strings.Fields(string(b)) {
			builtin[strings.TrimSuffix(filepath.Base(l), ".ko")] = true
		}
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = !builtin[n]
	}
	paths := map[string]string{}
	err := filepath.WalkDir(filepath.Join(k.ModuleDir(), "kernel"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n := strings.TrimSuffix(d.Name(), ".ko"); !d.IsDir() && strings.HasSuffix(d.Name(), ".ko") && want[n] {
			paths[n] = p
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var missing, list []string
	for _, n := range names {
		switch {
		case builtin[n]:
		case paths[n] == "":
			missing = append(missing, n)
		default:
			list = append(list, paths[n])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("modules not found as .ko under %s: %s", k.ModuleDir(), strings.Join(missing, ", "))
	}
	return list, nil
}
