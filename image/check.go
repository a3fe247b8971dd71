package image

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Verdict is the outcome of one check item.
type Verdict string

// The verdicts, from good to bad.
const (
	// OK: a clone will behave.
	OK Verdict = "ok"
	// Note: a clone will behave; something is worth knowing.
	Note Verdict = "note"
	// Finding: a clone will not behave as it should; Fix says how to fix it.
	Finding Verdict = "finding"
	// Error: the item could not be checked.
	Error Verdict = "error"
)

// Item is the outcome of one check item.
type Item struct {
	// ID names the item: "units", "drop-in", ...
	ID string `json:"id"`
	// Title says what the item is about.
	Title   string  `json:"title"`
	Verdict Verdict `json:"verdict"`
	// Found says what is in the image.
	Found string `json:"found"`
	// Clone says what a clone made from the image does at first boot.
	Clone string `json:"clone"`
	// Fix is the command (or the step) that fixes a finding.
	Fix string `json:"fix,omitempty"`
	// Paths are the files the item is about (system paths).
	Paths []string `json:"paths,omitempty"`
}

// Report is the outcome of Check.
type Report struct {
	// Root is the root checked; "/" for the running system.
	Root  string `json:"root"`
	Items []Item `json:"items"`
}

// Count returns how many items have verdict v.
func (r *Report) Count(v Verdict) int {
	n := 0
	for _, it := range r.Items {
		if it.Verdict == v {
			n++
		}
	}
	return n
}

// Summary is the verdict of the whole check in one line.
func (r *Report) Summary() string {
	switch f, e := r.Count(Finding), r.Count(Error); {
	case e > 0:
		return fmt.Sprintf("%d item(s) could not be checked and %d finding(s): fix them before cloning this image", e, f)
	case f > 0:
		return fmt.Sprintf("%d finding(s): a clone of this image will not behave as it should at first boot", f)
	default:
		return "a clone of this image will behave at first boot"
	}
}

// Checks is the catalogue of check items, in the order they are reported.
// Each entry reads the image and says what a clone will do.
var Checks = []struct {
	ID, Title string
	run       func(*inspection) Item
}{
	{"units", "seedkeeper's units installed and enabled", checkUnits},
	{"drop-in", "cloud-init's settings: the drop-in and what overrides it", checkDropIn},
	{"nocloud-line", "a ds=nocloud line that forces cloud-init's datasource", checkNoCloudLine},
	{"cloud-init-hotplug", "cloud-init's own hotplug beside seedkeeper-watch", checkCloudInitHotplug},
	{"cloud-init-state", "cloud-init state left by an earlier boot", checkCloudInitState},
	{"seedkeeper-state", "seedkeeper's identity pin, status and receipt", checkSeedkeeperState},
	{"sealed", "the sealed marker", checkSealed},
	{"machine-id", "/etc/machine-id and D-Bus's machine ID", checkMachineID},
	{"ssh-host-keys", "SSH host keys", checkSSHHostKeys},
	{"network-stack", "the network stack and seedkeeper's part in it", checkNetworkStack},
	{"allowlist", "the hotplug driver allowlist", checkAllowlist},
	{"seed-dir", "cloud-init's seed directory", checkSeedDir},
	{"vmware-tools", "VMware Tools' hand-over of customization specs to seedkeeper", checkVMwareTools},
}

// inspection is what the items share: the root and what was read once.
type inspection struct {
	root   sysroot.Root
	cc     cloudConfig
	ccErr  error
	cfg    *config.Config
	cfgErr error
	seal   *identity.Seal
}

// Check reads the image under rootDir, a directory standing for "/" ("" or
// "/" is the running system), and reports, item by item, what a clone made
// from it will do at its first boot. It fails only when rootDir is not a
// directory; an item that cannot be read is reported with verdict Error.
//
// With ids, only those items are checked (e.g. "drop-in" for a status
// command that warns about overrides).
func Check(rootDir string, ids ...string) (*Report, error) {
	root := sysroot.Root(rootDir)
	if err := isRoot(root); err != nil {
		return nil, fmt.Errorf("checking the image: %w", err)
	}
	in := &inspection{root: root, seal: identity.ReadSeal(root)}
	in.cc, in.ccErr = readCloudConfig(root)
	in.cfg, in.cfgErr = config.LoadIn(string(root), config.DefaultPath, datasource.Names())
	if in.cfg == nil {
		in.cfg = config.Default()
	}
	rep := &Report{Root: root.Path("/")}
	for _, c := range Checks {
		if len(ids) > 0 && !slices.Contains(ids, c.ID) {
			continue
		}
		it := c.run(in)
		it.ID, it.Title = c.ID, c.Title
		rep.Items = append(rep.Items, it)
	}
	return rep, nil
}

// cmd spells a command for this root: seedkeeper's own take --root.
func (in *inspection) cmd(c string) string {
	if in.root.IsReal() {
		return c
	}
	return c + " --root " + string(in.root)
}

// systemctl spells a systemctl command for this root.
func (in *inspection) systemctl(args string) string {
	if in.root.IsReal() {
		return "systemctl " + args
	}
	return "systemctl --root=" + string(in.root) + " " + args
}

// exists reports whether sys exists in the image (links not followed).
func (in *inspection) exists(sys string) bool {
	_, err := fsutil.StatIn(string(in.root), sys, false)
	return err == nil
}

// readSmall reads a small regular file in the image (links followed
// inside it); a larger file is an error naming the path and the bound.
func (in *inspection) readSmall(sys string) ([]byte, error) {
	return fsutil.ReadFileIn(context.Background(), string(in.root), sys, fsutil.SmallFile)
}

// isRoot checks that root is a directory to check or seal.
func isRoot(root sysroot.Root) error {
	if fi, err := os.Stat(root.Path("/")); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", root.Path("/"))
	}
	return nil
}
