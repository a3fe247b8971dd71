package seedimage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Device is a block device whose filesystem carries a wanted label.
type Device struct {
	// Name is the kernel name ("sr0", "vdb1").
	Name string
	// Dev is the device node as the system names it ("/dev/sr0"), and
	// Path the same under the scan's root, lexically, for messages: open
	// Dev with OpenIn under the root, never Path, which may lead through
	// a link out of it.
	Dev, Path string
	Info
}

// skipPrefixes are kernel names never probed: floppies (reading an empty
// drive blocks for seconds) and RAM disks (never a seed).
var skipPrefixes = []string{"fd", "ram", "zram"}

// Scan lists the block devices in /sys/class/block under root, whole disks,
// partitions and CD-ROMs alike, opens each /dev/<name> under root read-only
// and returns those whose ISO9660 or FAT label (Info.Label, or on FAT the
// boot-sector label) equals one of labels exactly. Devices of size zero
// (an empty CD-ROM drive, an unused loop device) are skipped, as are
// floppies and RAM disks.
//
// The result is in the order cloud-init tries candidates: kernel names
// sorted in reverse ("vdb" before "vda", "sr0" before "sda"). Devices that
// cannot be opened or hold no ISO9660/FAT filesystem are left out, each
// with a line in skipped saying why; an error is returned only when the
// device list itself cannot be read (a missing /sys/class/block is no
// error: there is nothing to scan).
func Scan(root sysroot.Root, labels ...string) (found []Device, skipped []string, err error) {
	names, err := blockDevices(root)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range names {
		dev := "/dev/" + strings.ReplaceAll(name, "!", "/")
		if slices.ContainsFunc(skipPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		if sectors, err := fsutil.ReadFileIn(context.Background(), string(root), "/sys/class/block/"+name+"/size", fsutil.TinyFile); err == nil && strings.TrimSpace(string(sectors)) == "0" {
			continue
		}
		path := root.Path(dev)
		info, err := probeIn(root, dev)
		if err != nil {
			if !errors.Is(err, ErrUnknownFormat) {
				skipped = append(skipped, fmt.Sprintf("%s: %v", dev, err))
			}
			continue
		}
		if slices.Contains(labels, info.Label) || info.BootLabel != "" && slices.Contains(labels, info.BootLabel) {
			found = append(found, Device{Name: name, Dev: dev, Path: path, Info: info})
		}
	}
	return found, skipped, nil
}

// blockDevices returns the kernel names in /sys/class/block, reverse
// sorted.
func blockDevices(root sysroot.Root) ([]string, error) {
	des, err := fsutil.ReadDirIn(string(root), "/sys/class/block")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing block devices: %w", err)
	}
	names := make([]string, 0, len(des))
	for _, de := range des {
		names = append(names, de.Name())
	}
	slices.Sort(names)
	slices.Reverse(names)
	return names, nil
}

// Probe reads the type and labels of the filesystem at path (an image
// file or block device) from its first sectors, without reading any
// directory but the FAT root's first cluster.
func Probe(path string) (info Info, err error) {
	f, err := fsutil.OpenImage(path)
	if err != nil {
		return Info{}, err
	}
	return probeFile(f, path)
}

// probeIn is Probe for the system path p under root, opened confined to
// it (see OpenIn).
func probeIn(root sysroot.Root, p string) (Info, error) {
	f, err := fsutil.OpenIn(string(root), p, fsutil.Regular|fsutil.BlockDevice)
	if err != nil {
		return Info{}, err
	}
	return probeFile(f, p)
}

// probeFile probes the image in f, which it closes.
func probeFile(f *os.File, path string) (info Info, err error) {
	defer recoverError(&err, path, "probing")
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return Info{}, fmt.Errorf("%s: finding the size: %w", path, err)
	}
	info, _, err = probe(f, size)
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}
