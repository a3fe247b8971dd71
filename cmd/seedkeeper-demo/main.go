// Command seedkeeper-demo runs seedkeeper's main job on built-in defaults,
// in a scratch folder, without root: the simulated SmartOS host on a pty
// (mdata-get, mdata-list, then "seedkeeper boot" detecting SmartOS by its
// DMI product name and reading the host over the pty), and a sample NoCloud
// seed on a cidata ISO image found by its label and read in process.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding the built seedkeeper and its mdata-* links")
	testdata := flag.String("testdata", "testdata", "the repository's testdata directory (for the sample seed)")
	dropIn := flag.String("drop-in", "packaging/95-seedkeeper.cfg", "the cloud-init drop-in the package ships, put in each guest as an installed image has it")
	keep := flag.Bool("keep", true, "keep the scratch folder to look at afterwards")
	flag.Parse()
	if err := run(*bin, *testdata, *dropIn, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "seedkeeper-demo:", err)
		os.Exit(1)
	}
}

func run(bin, testdata, dropIn string, keep bool) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	// Each guest is an image with cloud-init and seedkeeper's package
	// installed: cloud-init's own configuration (a default user, as
	// distributions ship it) and the package's drop-in. Without them
	// boot and status warn of what only the demo's root lacks.
	drop, err := os.ReadFile(dropIn)
	if err != nil {
		return fmt.Errorf("the drop-in: %w (run from the repository root)", err)
	}
	cloudInit := map[string]string{
		"etc/cloud/cloud.cfg":                     "datasource_list: [NoCloud, None]\nsystem_info:\n  default_user:\n    name: admin\n",
		"etc/cloud/cloud.cfg.d/95-seedkeeper.cfg": string(drop),
	}
	scratch, err := os.MkdirTemp("", "seedkeeper-demo-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(scratch)
	}
	fmt.Printf("Scratch folder: %s\n", scratch)

	// Part 1: the simulated SmartOS host.
	host := mdatatest.NewHost(mdatatest.Default())
	p, err := host.StartPTY()
	if err != nil {
		return fmt.Errorf("starting the simulated host on a pty: %w", err)
	}
	defer host.Close()
	section("1. The simulated SmartOS host answers on " + p.Path())
	env := []string{"SEEDKEEPER_MDATA=serial:" + p.Path()}
	if err := show(bin, env, "mdata-get", "sdc:uuid"); err != nil {
		return err
	}
	if err := show(bin, env, "mdata-get", "sdc:hostname"); err != nil {
		return err
	}
	if err := show(bin, env, "mdata-list"); err != nil {
		return err
	}
	show(bin, env, "mdata-get", "no-such-key") // exit 1, "No metadata for ..."

	smart := filepath.Join(scratch, "smartos")
	if err := writeFiles(smart, cloudInit); err != nil {
		return err
	}
	if err := writeFiles(smart, map[string]string{
		"sys/class/dmi/id/product_name": "SmartDC HVM\n",
		"sys/class/dmi/id/sys_vendor":   "Joyent\n",
		"sys/class/dmi/id/product_uuid": mdatatest.SampleUUID + "\n",
	}); err != nil {
		return err
	}
	// The guest's COM2 is the pty: DMI says SmartDC, so boot finds it.
	if err := os.MkdirAll(filepath.Join(smart, "dev"), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(p.Path(), filepath.Join(smart, "dev/ttyS1")); err != nil {
		return err
	}
	section("2. seedkeeper boot on a SmartOS guest (root: " + smart + ")")
	if err := show(bin, nil, "seedkeeper", "boot", "--root", smart); err != nil {
		return err
	}
	if err := show(bin, nil, "seedkeeper", "status", "--root", smart); err != nil {
		return err
	}
	if err := cat(smart, "/var/lib/cloud/seed/nocloud/meta-data"); err != nil {
		return err
	}

	// Part 2: a NoCloud seed on a cidata ISO, read without mounting.
	nc := filepath.Join(scratch, "nocloud")
	if err := writeFiles(nc, cloudInit); err != nil {
		return err
	}
	iso, err := gunzip(filepath.Join(testdata, "nocloud/cloud-localds.iso.gz"))
	if err != nil {
		return fmt.Errorf("the sample seed: %w (run from the repository root)", err)
	}
	if err := writeFiles(nc, map[string]string{
		"sys/class/dmi/id/product_name": "Standard PC (Q35 + ICH9, 2009)\n",
		"sys/class/dmi/id/sys_vendor":   "QEMU\n",
		"sys/class/dmi/id/product_uuid": "0f3c7a52-9d1e-4b8a-b6c4-2e5d8f1a7c30\n",
		"sys/class/block/sr0/size":      fmt.Sprintf("%d\n", len(iso)/512),
		"dev/sr0":                       string(iso),
	}); err != nil {
		return err
	}
	section("3. seedkeeper boot on a KVM guest with a cidata CD-ROM (root: " + nc + ")")
	if err := show(bin, nil, "seedkeeper", "boot", "--root", nc); err != nil {
		return err
	}
	if err := show(bin, nil, "seedkeeper", "status", "--root", nc); err != nil {
		return err
	}
	if err := show(bin, nil, "seedkeeper", "fetch", "--seed", filepath.Join(nc, "dev/sr0")); err != nil {
		return err
	}
	section("Done")
	fmt.Printf("Everything seedkeeper wrote is under %s.\nRun \"make test\" for the whole test suite.\n", scratch)
	return nil
}

func section(s string) { fmt.Printf("\n=== %s\n", s) }

// show runs one of the built commands, echoing it and its output.
func show(bin string, env []string, name string, args ...string) error {
	fmt.Printf("\n$ %s%s %s\n", strings.Join(env, " ")+map[bool]string{true: " ", false: ""}[len(env) > 0], name, strings.Join(args, " "))
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stdout
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		fmt.Printf("(exit status %d)\n", ee.ExitCode())
		return fmt.Errorf("%s %s failed with exit status %d", name, strings.Join(args, " "), ee.ExitCode())
	}
	return err
}

func cat(root, path string) error {
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return err
	}
	fmt.Printf("\n$ cat %s\n%s", filepath.Join(root, path), b)
	return nil
}

func writeFiles(root string, files map[string]string) error {
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func gunzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	_, err = io.Copy(&b, z)
	return b.Bytes(), err
}
