package datasource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/dmi"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/nocloudline"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/seedimage"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// NoCloud seed locations (system paths, read under Options.Root).
const (
	noCloudSeedDir    = paths.SeedDir    // /var/lib/cloud/seed/nocloud
	noCloudNetSeedDir = paths.SeedNetDir // /var/lib/cloud/seed/nocloud-net
	cmdlinePath       = "/proc/cmdline"
	dmiSerialFile     = "product_serial"
)

// noCloudLabels are the filesystem labels of a NoCloud seed disk, exactly
// as cloud-init accepts them (its fs_label "cidata" upper- and lower-case).
var noCloudLabels = []string{"cidata", "CIDATA"}

// NoCloudOptions are the options of the NoCloud source (Options.NoCloud):
// where and how it looks.
type NoCloudOptions struct {
	// SeedPath, when set, is the only seed read: a seed directory or an
	// ISO9660/FAT image file (or device). The command line, SMBIOS serial,
	// seed directories and labelled disks are then not consulted; a
	// seedfrom in its meta-data still is.
	SeedPath string
	// SeedDirs are the seed directories tried, in order (system paths,
	// read under Root); nil means /var/lib/cloud/seed/nocloud, then
	// /var/lib/cloud/seed/nocloud-net.
	// seedkeeper writes the one cloud-init reads and must not read its own
	// output back, so it passes the others here.
	SeedDirs []string
	// SkipDirs leaves out the seed directories altogether.
	SkipDirs bool
	// HTTPClient fetches an http(s) seedfrom; nil means
	// http.DefaultClient.
	HTTPClient *http.Client
	// SeedfromTries, SeedfromBackoff and SeedfromTimeout bound an http(s)
	// seedfrom fetch: attempts per file, the first wait between attempts
	// (doubling after each), and the time one request may take. Zero
	// values mean the Default* constants.
	SeedfromTries   int
	SeedfromBackoff time.Duration
	SeedfromTimeout time.Duration

	// root and log are Options.Root and Options.Logger, filled in by
	// the reader.
	root sysroot.Root
	log  *slog.Logger
}

// noCloudOptions are o's NoCloud options with the root and logger.
func noCloudOptions(o *Options) *NoCloudOptions {
	no := o.NoCloud
	no.root, no.log = sysroot.Root(o.Root), o.logger()
	return &no
}

// seedDirs are the seed directories to try.
func (o *NoCloudOptions) seedDirs() []string {
	switch {
	case o.SkipDirs:
		return nil
	case o.SeedDirs != nil:
		return o.SeedDirs
	}
	return []string{noCloudSeedDir, noCloudNetSeedDir}
}

func (o *NoCloudOptions) logger() *slog.Logger {
	if o.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.log
}

// readNoCloud reads the NoCloud seed the way cloud-init's NoCloud datasource
// does (docs/cloud-init.md, "NoCloud"), from these sources in this order:
//
//  1. the SMBIOS system serial number (/sys/class/dmi/id/product_serial)
//     and 2. the kernel command line (/proc/cmdline), each holding a
//     ds=nocloud[;key=value...] token (see internal/nocloudline);
//  3. the first of the seed directories (SeedDirs; by default
//     noCloudSeedDir, then noCloudNetSeedDir) that has both meta-data and
//     user-data;
//  4. the first block device, in reverse name order, whose ISO9660 or FAT
//     label is one of noCloudLabels and that has both files, read in
//     process (see seedimage.Scan);
//  5. the seedfrom location named in the meta-data gathered so far
//     (file://, an absolute path, or http(s)://, with __dmi.<key>__
//     replaced by that DMI value).
//
// With SeedPath set, that seed replaces sources 1 to 4.
//
// Meta-data keys merge first-wins in that order, so an i= on the command
// line beats the instance-id of a disk. user-data, vendor-data and
// network-config are last-wins: a later source that has the file replaces
// an earlier one (an empty network-config does not). This is the order of
// cloud-init's code (22.4.2 and current), where seedfrom is fetched after
// the disk search: its meta-data ranks lowest and its user-data wins.
//
// The instance ID is meta-data instance-id, or "nocloud" with
// InstanceIDDefaulted set. MachineID is the DMI product_uuid, lower-cased.
// A meta-data dsmode of "disabled", like finding nothing at all, gives an
// error wrapping ErrNoSource. The options are o.NoCloud, the system paths
// under o.Root. A cancelled ctx ends the read (a seedfrom fetch, a seed
// file being read) with ctx's error.
func readNoCloud(ctx context.Context, o Options) (*Metadata, error) {
	return readNoCloudDetected(ctx, Detection{}, &o)
}

// noCloud is the NoCloud source: a seed on the kernel command line, in
// the SMBIOS serial, in a seed directory or on a disk labelled cidata.
var noCloud = Source{
	Name: SourceNoCloud,
	// A KVM, QEMU, Proxmox or plain bhyve guest gets its seed this way.
	Platforms:  []string{"kvm", "qemu", "proxmox", "bhyve"},
	Drivers:    []string{"virtio_net", "e1000", "e1000e", "vmxnet3"},
	DriversKey: KeyNetworkDrivers,
	// network-config is cloud-init network config.
	RawNetwork: true,
	// meta-data's instance-id may be Proxmox's hash of the seed, or
	// missing (cloud-init's default); a seed is read from the places
	// Origin.Transport lists.
	DerivedID: true,
	Seeds:     true,
	detect:    func(ctx context.Context, o *Options) (Detection, error) { return detectNoCloud(ctx, *o) },
	read:      readNoCloudDetected,
}

// readNoCloudDetected is readNoCloud going on from what detection read
// (d's probe; none reads afresh).
func readNoCloudDetected(ctx context.Context, d Detection, o *Options) (*Metadata, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opt, p := noCloudOptions(o), d.nocloud
	log := opt.logger()
	m := noCloudMerge{meta: map[string]any{}, nodes: map[string]*yaml.Node{}}
	if opt.SeedPath != "" {
		s, err := readSeedPath(ctx, opt.SeedPath)
		if err != nil {
			return nil, err
		}
		if err := m.add(s); err != nil {
			return nil, err
		}
	} else {
		if p == nil {
			p = opt.probe()
		}
		if err := opt.gather(ctx, &m, log, p); err != nil {
			return nil, err
		}
	}
	if len(m.transports) == 0 {
		return nil, fmt.Errorf("nocloud: %w: no ds=nocloud on the kernel command line or in the SMBIOS serial, no seed directory, no filesystem labelled cidata", ErrNoSource)
	}
	if err := opt.seedfrom(ctx, &m, log); err != nil {
		return nil, err
	}
	return m.metadata(opt.root, log)
}

// noCloudProbe is what NoCloud detection read: the ds=nocloud lines (the
// SMBIOS serial, the kernel command line) and, once scanned, the block
// devices labelled cidata. The reader goes on from it instead of reading
// them again.
type noCloudProbe struct {
	lines   []probedLine
	scanned bool
	devs    []seedimage.Device
	skipped []string
	scanErr error
}

type probedLine struct {
	transport, path, value string
	err                    error
}

// probe reads the ds=nocloud lines under root, through the bounded reader.
func (o *NoCloudOptions) probe() *noCloudProbe {
	p := &noCloudProbe{}
	for _, l := range []struct{ transport, path string }{
		{"dmi", dmi.Dir + "/" + dmiSerialFile},
		{"cmdline", cmdlinePath},
	} {
		b, err := readSysFile(o.root, l.path)
		p.lines = append(p.lines, probedLine{l.transport, l.path, strings.TrimSpace(string(b)), err})
	}
	return p
}

// scan lists the labelled block devices, once.
func (p *noCloudProbe) scan(root sysroot.Root) ([]seedimage.Device, []string, error) {
	if !p.scanned {
		p.devs, p.skipped, p.scanErr = seedimage.Scan(root, noCloudLabels...)
		p.scanned = true
	}
	return p.devs, p.skipped, p.scanErr
}

// gather reads sources 1 to 4, going on from what detection read (p).
func (o *NoCloudOptions) gather(ctx context.Context, m *noCloudMerge, log *slog.Logger, p *noCloudProbe) error {
	root := o.root
	for _, l := range p.lines {
		if l.err != nil {
			if !errors.Is(l.err, fs.ErrNotExist) {
				log.Debug("cannot read", "path", l.path, "err", l.err)
			}
			continue
		}
		if md, ok := nocloudline.Parse(l.value); ok {
			m.addMeta(noCloudMeta{values: md}, l.transport)
			m.items = append(m.items, l.path)
		}
	}
	for _, dir := range o.seedDirs() {
		s, err := readSeedDir(ctx, root, dir, m.used)
		if err != nil {
			return err
		}
		if !s.complete() {
			if s.hasMeta || s.hasUser {
				log.Warn("seed directory is not a seed", "dir", dir, "missing", s.missing())
			}
			continue
		}
		if err := m.add(s); err != nil {
			return err
		}
		break
	}
	devs, skipped, err := p.scan(root)
	if err != nil {
		return err
	}
	for _, why := range skipped {
		log.Debug("block device skipped", "reason", why)
	}
	for _, d := range devs {
		s, err := readSeedImage(root, d.Dev, d.Dev, m.used)
		if err != nil {
			log.Warn("labelled filesystem cannot be read", "device", d.Dev, "err", err)
			continue
		}
		if !s.complete() {
			log.Warn("labelled filesystem is not a seed", "device", d.Dev, "label", d.Label, "missing", s.missing())
			continue
		}
		if err := m.add(s); err != nil {
			return err
		}
		break
	}
	return nil
}

// readSeedPath reads an explicit seed: a directory or an image. It is the
// first seed of its merge, so it has the whole of maxSeedTotal.
func readSeedPath(ctx context.Context, p string) (noCloudSeed, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return noCloudSeed{}, fmt.Errorf("nocloud seed: %w", err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return noCloudSeed{}, fmt.Errorf("nocloud seed: %w", err)
	}
	var s noCloudSeed
	switch m := fi.Mode(); {
	case m.IsDir():
		s, err = readSeedDir(ctx, "", p, 0)
	case m.IsRegular() || (m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0):
		s, err = readSeedImage("", p, p, 0)
	default:
		// Opening a FIFO or a terminal could block for ever.
		return s, fmt.Errorf("nocloud seed %s: a %s is neither a seed directory nor an image", p, fsutil.Kind(m))
	}
	if err != nil {
		return s, fmt.Errorf("nocloud seed: %w", err)
	}
	if !s.complete() {
		return s, fmt.Errorf("nocloud seed %s: no %s", p, s.missing())
	}
	return s, nil
}

// seedfrom reads source 5, when the meta-data names one.
func (o *NoCloudOptions) seedfrom(ctx context.Context, m *noCloudMerge, log *slog.Logger) error {
	v, ok := m.meta["seedfrom"]
	if !ok || v == nil {
		return nil
	}
	base, ok := v.(string)
	if !ok || base == "" {
		return fmt.Errorf("meta-data seedfrom: want a URL or path, got %s", yamlx.Kind(v))
	}
	base, unknown := substDMI(o.root, base)
	for _, k := range unknown {
		log.Warn("seedfrom names an unknown DMI key; left as is", "key", k)
	}
	s, err := o.readSeedfrom(ctx, base, m.used)
	if err != nil {
		return err
	}
	return m.add(s)
}

// noCloudMerge accumulates sources with cloud-init's precedence.
type noCloudMerge struct {
	meta  map[string]any
	nodes map[string]*yaml.Node
	// user etc. hold the winning file and its name.
	user, vendor, network             []byte
	userName, vendorName, networkName string
	hasUser, hasVendor, hasNetwork    bool
	// used is how many bytes of seed files the merge has taken in, all
	// seeds together: the next seed reads within what it leaves of
	// maxSeedTotal.
	used              int64
	transports, items []string
	warnings          []string
}

// addMeta merges meta-data keys, first-wins, and records the source.
func (m *noCloudMerge) addMeta(md noCloudMeta, transport string) {
	for k, v := range md.values {
		if _, ok := m.meta[k]; ok {
			continue
		}
		m.meta[k] = v
		if n, ok := md.nodes[k]; ok {
			m.nodes[k] = n
		}
	}
	m.transports = append(m.transports, transport)
	m.warnings = append(m.warnings, md.warnings...)
}

// add merges a seed: its meta-data under what is there, its files over it.
// Its files count against maxSeedTotal for the seeds after it.
func (m *noCloudMerge) add(s noCloudSeed) error {
	m.used += int64(len(s.meta) + len(s.user) + len(s.vendor) + len(s.network))
	var md noCloudMeta
	if s.hasMeta {
		var err error
		if md, err = parseNoCloudMeta(s.meta, s.names[ncMetaData]); err != nil {
			return err
		}
		m.items = append(m.items, s.names[ncMetaData])
	}
	m.addMeta(md, s.transport)
	m.warnings = append(m.warnings, s.warnings...)
	replace := func(file string, has bool, data []byte, dst *[]byte, dstHas *bool, name *string) {
		if has {
			*dst, *dstHas, *name = data, true, s.names[file]
			m.items = append(m.items, s.names[file])
		}
	}
	replace(ncUserData, s.hasUser, s.user, &m.user, &m.hasUser, &m.userName)
	replace(ncVendorData, s.hasVendor, s.vendor, &m.vendor, &m.hasVendor, &m.vendorName)
	// An empty network-config replaces nothing (cloud-init tests it for
	// truth before loading it).
	replace(ncNetworkConfig, s.hasNetwork && len(bytes.TrimSpace(s.network)) > 0, s.network, &m.network, &m.hasNetwork, &m.networkName)
	return nil
}

// metadata turns the merged seed into the model.
func (m *noCloudMerge) metadata(root sysroot.Root, log *slog.Logger) (*Metadata, error) {
	md := &Metadata{
		Source:   SourceNoCloud,
		Origin:   Origin{Transport: strings.Join(m.transports, ","), Items: m.items},
		MetaData: m.meta,
	}
	if mode, _, _ := noCloudString(m.meta, "dsmode"); mode == "disabled" {
		return nil, fmt.Errorf("nocloud (%s): %w: meta-data dsmode is disabled", md.Origin.Transport, ErrNoSource)
	}
	for _, w := range m.warnings {
		md.warn(log, w)
	}
	id, ok, err := noCloudString(m.meta, "instance-id")
	if err != nil {
		md.warn(log, err.Error()+"; treating it as absent")
	}
	if !ok || strings.TrimSpace(id) == "" || md.usableInstanceID(log, "meta-data instance-id", id) == "" {
		id, md.InstanceIDDefaulted = "nocloud", true
		log.Info("meta-data has no usable instance-id; using cloud-init's default", "instance_id", id)
	}
	md.InstanceID = id
	if name, ok, err := noCloudString(m.meta, "local-hostname"); err != nil {
		md.warn(log, err.Error()+"; dropped")
	} else if ok {
		md.setHostname(log, "meta-data local-hostname", name)
	}
	keys, where, warnings := noCloudPublicKeys(m.meta["public-keys"], m.nodes["public-keys"])
	for _, w := range warnings {
		md.warn(log, w)
	}
	md.setPublicKeys(log, keys, where)
	md.MachineID = strings.ToLower(dmi.Value(root, "product_uuid"))

	md.UserData = m.user
	if md.UserData == nil {
		md.UserData = []byte{} // a cmdline-only seed: cloud-init's ""
	}
	if m.hasVendor {
		md.VendorData = m.vendor
	}
	if m.hasNetwork {
		md.NetworkConfigRaw = m.network
		md.Network, err = netcfg.Parse(m.network)
		switch {
		case errors.Is(err, netcfg.ErrDisabled):
			log.Info("network-config disables networking; leaving the network alone", "file", m.networkName)
			md.Network = nil
		case err != nil:
			// The rest of the seed is good: hand it over and leave the
			// network alone, rather than fail the whole boot.
			md.warn(log, fmt.Sprintf("%s dropped, leaving the network alone: %v", m.networkName, err))
			md.Network, md.NetworkConfigRaw = nil, nil
		}
		md.networkNotes(log, m.networkName)
	} else if _, ok := m.meta["network-interfaces"]; ok {
		log.Warn("meta-data network-interfaces (ENI, deprecated) is not supported; leaving the network alone")
	}
	if v, ok := m.meta[KeyNetworkDrivers]; ok {
		md.NetworkDriversSet = true
		drivers, err := parseNetworkDrivers(v)
		if err != nil {
			log.Warn("hotplug driver allowlist is malformed; it allows nothing", "key", KeyNetworkDrivers, "err", err)
		}
		md.NetworkDrivers = drivers
	}
	log.Info("nocloud seed read", "sources", md.Origin.Transport, "instance_id", md.InstanceID)
	return md, nil
}

// detectNoCloud reports, from cheap local checks only, whether a NoCloud
// seed is present, and why: o.NoCloud.SeedPath exists; a ds=nocloud token
// in the SMBIOS serial or on the kernel command line; a seed directory
// with meta-data and user-data (see SeedDirs); a filesystem labelled
// cidata. It does not fetch a seedfrom or read seed files. A seed that is
// not here is a Detection with Found false; the error is ctx's, the only
// one it returns.
func detectNoCloud(ctx context.Context, o Options) (Detection, error) {
	d := Detection{Candidate: Candidate{Source: SourceNoCloud}}
	if err := ctx.Err(); err != nil {
		return d, err
	}
	opt := noCloudOptions(&o)
	found := func(reason string) (Detection, error) { d.Found, d.Reason = true, reason; return d, nil }
	root := opt.root
	if opt.SeedPath != "" {
		if _, err := os.Stat(opt.SeedPath); err != nil {
			d.Reason = fmt.Sprintf("seed path: %v", err)
			return d, nil
		}
		return found("seed path " + opt.SeedPath)
	}
	d.nocloud = opt.probe()
	why := map[string]string{"dmi": "ds=nocloud in the SMBIOS system serial number", "cmdline": "ds=nocloud on the kernel command line"}
	for _, l := range d.nocloud.lines {
		if _, ok := nocloudline.Parse(l.value); ok && l.err == nil {
			return found(why[l.transport])
		}
	}
	for _, dir := range opt.seedDirs() {
		if noCloudFileExists(root, dir+"/"+ncMetaData) && noCloudFileExists(root, dir+"/"+ncUserData) {
			return found("seed directory " + dir)
		}
	}
	if err := ctx.Err(); err != nil {
		return d, err
	}
	if devs, _, err := d.nocloud.scan(root); err == nil && len(devs) > 0 {
		dev := devs[0]
		return found(fmt.Sprintf("%s filesystem labelled %s on %s", dev.Type, dev.Label, dev.Dev))
	}
	d.Reason = "no ds=nocloud on the kernel command line or in the SMBIOS serial, no seed directory, no filesystem labelled cidata"
	return d, nil
}

// noCloudFileExists reports whether the system path p under root is a
// regular file, links followed inside the root.
func noCloudFileExists(root sysroot.Root, p string) bool {
	fi, err := fsutil.StatIn(string(root), p, true)
	return err == nil && fi.Mode().IsRegular()
}
