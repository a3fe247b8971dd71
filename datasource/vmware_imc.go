package datasource

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/dmi"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/vmtools"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// VMware Guest OS Customization (IMC): the specification vCenter attaches
// to a VM, which VMware Tools' deployPkg plugin leaves in iMCDir as
// cust.cfg (and the files it names) when the image hands customization to
// the guest's agent. It is the VMware source's third transport, read as
// cloud-init's VMware datasource reads it (docs/cloud-init.md, "VMware
// guest customization", lists every difference).

// Where Tools leaves the spec, and what the transport is called.
const (
	iMCDir        = "/var/run/vmware-imc"
	iMCSpecFile   = "cust.cfg"
	transportIMC  = "imc"
	imcSpecPath   = iMCDir + "/" + iMCSpecFile
	imcKindTrad   = "traditional"
	imcKindCloud  = "cloud-init"
	imcPassKey    = "-PASS"
	imcMaxPass    = 256
	imcMaxIndexed = 32
)

// Bounds of a spec. vCenter writes a few dozen lines; these leave room
// for ten NICs with every address they can have and refuse what no
// vCenter writes.
const (
	// maxIMCSpec bounds cust.cfg.
	maxIMCSpec = 64 << 10
	// maxIMCSections and maxIMCKeys bound its sections and its keys in
	// all; a spec with more is refused.
	maxIMCSections = 64
	maxIMCKeys     = 1024
	// maxIMCValue bounds one value: a longer one is dropped.
	maxIMCValue = 1024
	// maxIMCNICs bounds the NICs of NIC-CONFIG NICS (a VM has at most 10).
	maxIMCNICs = 16
)

// ErrBadIMCSpec wraps the errors of a spec that cannot be read at all
// (too large, too many sections or keys, a kind that names files that are
// not there). One bad value is not such an error: it is dropped with a
// warning, and a bad NIC section drops that NIC.
var ErrBadIMCSpec = errors.New("bad VMware customization spec")

// IMCSpec is what the VMware source read from a customization spec
// beside the Metadata (Metadata.VMwareIMC): what boot needs to report to
// vCenter and to apply the spec once. It holds no secret.
type IMCSpec struct {
	// Kind is "traditional" (the Linux spec) or "cloud-init" (the
	// [CLOUDINIT] kind naming a meta-data and a user-data).
	Kind string `json:"kind"`
	// MarkerID is MISC MARKER-ID: a customization is applied once per
	// marker; "" when the spec has none (or it was dropped).
	MarkerID string `json:"marker_id,omitempty"`
	// PostGCStatus is MISC POST-GC-STATUS = yes: report the progress in
	// guestinfo.gc.status too.
	PostGCStatus bool `json:"post_gc_status,omitempty"`
	// CustomScript is true when the spec names a pre/post-customization
	// script (CUSTOM-SCRIPT SCRIPT-NAME); seedkeeper does not run it.
	CustomScript bool `json:"custom_script,omitempty"`
	// Password is true when the spec sets the root password (handed to
	// cloud-init in vendor-data; the password itself is never here).
	Password bool `json:"password,omitempty"`
	// NICs counts the NIC sections read, and NICsDropped those left out.
	NICs        int `json:"nics,omitempty"`
	NICsDropped int `json:"nics_dropped,omitempty"`
	// Waited says how long the reader waited for the spec to appear
	// (VMwareOptions.IMCWait); "" when it was there at once.
	Waited string `json:"waited,omitempty"`
	// Kept is true when the spec is the copy an earlier boot kept
	// (paths.VMwareIMCSpec), read because no spec and no guestinfo was
	// there; AppliedAt is when that boot applied it (RFC 3339).
	Kept      bool   `json:"kept,omitempty"`
	AppliedAt string `json:"applied_at,omitempty"`
	// Live is true when the spec was applied while the VM ran
	// (seedkeeper watch): its instance ID is the one of the boot it was
	// applied in, not the spec's own.
	Live bool `json:"live,omitempty"`

	// cloudConfig is the vendor-data before it is encoded.
	cloudConfig map[string]any
	// keep is what a boot that applies a spec read from iMCDir keeps of
	// it; nil for a kept spec.
	keep *keptIMC
}

// imcSection is one [SECTION] of a spec: its keys and values as written,
// and whether a line of it could not be read (a NIC section with one is
// dropped).
type imcSection struct {
	name string
	keys map[string]string
	bad  []string // what could not be read, never quoting it
}

// imcINI is a parsed spec: sections by name, in order.
type imcINI struct {
	sections map[string]*imcSection
	order    []string
	warnings []string
	// lineSection is, per line, the section it is in (its header
	// included; "" before any), as the keys were read.
	lineSection []string
}

func (s *imcINI) get(section, key string) (string, bool) {
	sec := s.sections[section]
	if sec == nil {
		return "", false
	}
	v, ok := sec.keys[key]
	return v, ok
}

// parseIMCINI reads the INI text of a spec the way Python's configparser
// reads it for cloud-init (keys and section names keep their case; "="
// or ":" ends a key; "#" and ";" begin a comment line; no inline
// comments), with these differences, each said in a warning: a line
// before any section, or that is neither a section, a comment nor a key,
// and a key given twice, are dropped (configparser refuses the whole
// file); an indented continuation line makes its key unreadable (no key
// of a spec has more than one line); a value is taken as written, without
// "%" interpolation. Warnings name the line and section, never its text.
func parseIMCINI(b []byte) (*imcINI, error) {
	if len(b) > maxIMCSpec {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBadIMCSpec, len(b), maxIMCSpec)
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: not UTF-8 text", ErrBadIMCSpec)
	}
	ini := &imcINI{sections: map[string]*imcSection{}}
	var cur *imcSection
	lastKey := ""
	nkeys := 0
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		if cur != nil {
			ini.lineSection = append(ini.lineSection, cur.name)
		} else {
			ini.lineSection = append(ini.lineSection, "")
		}
		line = strings.TrimSuffix(line, "\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			lastKey = ""
			continue
		}
		if trimmed[0] == '#' || trimmed[0] == ';' {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if cur != nil && lastKey != "" {
				cur.bad = append(cur.bad, fmt.Sprintf("key %s continues on line %d", safeName(lastKey), n))
				delete(cur.keys, lastKey)
				continue
			}
		}
		if trimmed[0] == '[' && trimmed[len(trimmed)-1] == ']' && len(trimmed) > 2 {
			name := trimmed[1 : len(trimmed)-1]
			lastKey = ""
			if ini.sections[name] != nil {
				ini.warnings = append(ini.warnings, fmt.Sprintf("cust.cfg line %d: section %s given again; its keys are dropped", n, safeName(name)))
				cur = &imcSection{name: name, keys: map[string]string{}} // read and dropped
				ini.lineSection[i] = name
				continue
			}
			if len(ini.order) >= maxIMCSections {
				return nil, fmt.Errorf("%w: more than %d sections", ErrBadIMCSpec, maxIMCSections)
			}
			cur = &imcSection{name: name, keys: map[string]string{}}
			ini.lineSection[i] = name
			ini.sections[name] = cur
			ini.order = append(ini.order, name)
			continue
		}
		if cur == nil {
			ini.warnings = append(ini.warnings, fmt.Sprintf("cust.cfg line %d dropped: before any section", n))
			continue
		}
		j := strings.IndexAny(trimmed, "=:")
		if j <= 0 {
			cur.bad = append(cur.bad, fmt.Sprintf("line %d is not KEY = VALUE", n))
			lastKey = ""
			continue
		}
		key, val := strings.TrimSpace(trimmed[:j]), strings.TrimSpace(trimmed[j+1:])
		if nkeys++; nkeys > maxIMCKeys {
			return nil, fmt.Errorf("%w: more than %d keys", ErrBadIMCSpec, maxIMCKeys)
		}
		lastKey = ""
		if _, dup := cur.keys[key]; dup {
			cur.bad = append(cur.bad, fmt.Sprintf("key %s given again on line %d", safeName(key), n))
			delete(cur.keys, key)
			continue
		}
		if len(val) > maxIMCValue {
			cur.bad = append(cur.bad, fmt.Sprintf("key %s on line %d is %d bytes long, more than %d", safeName(key), n, len(val), maxIMCValue))
			continue
		}
		cur.keys[key] = val
		lastKey = key
	}
	return ini, nil
}

// plainNameRE is what a section or key name of a customization spec, or
// a key of a metadata document, looks like; another name is described,
// not quoted, in a message.
var plainNameRE = boundedRE{regexp.MustCompile(`^[A-Za-z0-9_|.-]+$`), 64}

// boundedRE is a pattern whose matches are ASCII, with their length bound
// checked apart: a regexp's {1,64} is compiled into 64 copies of what it
// repeats, and the package's patterns spelled so cost every run of
// seedkeeper, whatever its command, milliseconds before it starts.
type boundedRE struct {
	re  *regexp.Regexp
	max int // bytes
}

func (b boundedRE) MatchString(s string) bool { return len(s) <= b.max && b.re.MatchString(s) }

// safeName is a name read from outside as a message may show it: the
// name when it is a plain one, else its length.
func safeName(s string) string {
	if plainNameRE.MatchString(s) {
		return s
	}
	return fmt.Sprintf("(a name of %d bytes)", len(s))
}

// imcReader turns a parsed spec into Metadata, one warning per value it
// drops.
type imcReader struct {
	ini  *imcINI
	md   *Metadata
	spec *IMCSpec
	log  *slog.Logger
}

func (r *imcReader) warn(format string, a ...any) { r.md.warn(r.log, fmt.Sprintf(format, a...)) }

// value returns section|key when present and valid by check (nil: any);
// an invalid one is dropped with a warning saying why.
func (r *imcReader) value(section, key string, check func(string) error) (string, bool) {
	v, ok := r.ini.get(section, key)
	if !ok {
		return "", false
	}
	if check != nil {
		if err := check(v); err != nil {
			r.warn("cust.cfg %s %s dropped: %v", section, key, err)
			return "", false
		}
	}
	return v, true
}

// yesNo reads a yes/no key as cloud-init does (any case); another value
// is dropped, and def is used.
func (r *imcReader) yesNo(section, key string, def bool) bool {
	v, ok := r.value(section, key, func(v string) error {
		switch strings.ToLower(v) {
		case "yes", "no":
			return nil
		}
		return errors.New("want yes or no")
	})
	if !ok {
		return def
	}
	return strings.EqualFold(v, "yes")
}

// indexed returns the values of section|PREFIX|1, |2, ... in index order,
// each checked; a key whose index is not a number from 1 to
// imcMaxIndexed is dropped.
func (r *imcReader) indexed(section, prefix string, check func(string) error) []string {
	sec := r.ini.sections[section]
	if sec == nil {
		return nil
	}
	type iv struct {
		i int
		v string
	}
	var got []iv
	for _, k := range slices.Sorted(maps.Keys(sec.keys)) {
		rest, ok := strings.CutPrefix(k, prefix+"|")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(rest)
		if err != nil || i < 1 || i > imcMaxIndexed || strconv.Itoa(i) != rest {
			r.warn("cust.cfg %s %s dropped: the index is not a number from 1 to %d", section, safeName(k), imcMaxIndexed)
			continue
		}
		if v, ok := r.value(section, k, check); ok {
			got = append(got, iv{i, v})
		}
	}
	slices.SortFunc(got, func(a, b iv) int { return a.i - b.i })
	out := make([]string, len(got))
	for i, g := range got {
		out[i] = g.v
	}
	return out
}

// hostnameLabel is one label of a host or domain name (RFC 1123).
var hostnameLabel = boundedRE{regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$`), 63}

// checkDomainName accepts a host or domain name: dot-separated RFC 1123
// labels, at most 253 bytes.
func checkDomainName(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if len(s) > 253 {
		return fmt.Errorf("%d bytes long, more than 253", len(s))
	}
	for i, l := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if !hostnameLabel.MatchString(l) {
			return fmt.Errorf("label %d is not a host name label (letters, digits and inner hyphens, at most 63)", i+1)
		}
	}
	return nil
}

// tzName is an IANA time zone name as cloud-init's timezone module
// accepts it: a path under /usr/share/zoneinfo.
var tzName = regexp.MustCompile(`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`)

func checkTimezone(s string) error {
	if len(s) > 64 || !tzName.MatchString(s) {
		return fmt.Errorf("not a time zone name (%d bytes)", len(s))
	}
	return nil
}

func checkIP(v4 bool) func(string) error {
	return func(s string) error {
		a, err := netip.ParseAddr(s)
		switch {
		case err != nil || a.Zone() != "":
			return errors.New("not an IP address")
		case a.Is4() != v4:
			if v4 {
				return errors.New("not an IPv4 address")
			}
			return errors.New("not an IPv6 address")
		case a.IsUnspecified() || a.IsMulticast():
			return errors.New("an unspecified or multicast address")
		}
		return nil
	}
}

// checkFileName accepts a file name beside cust.cfg.
func checkFileName(s string) error {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\x00") || len(s) > 255 {
		return errors.New("not a file name in the spec's directory")
	}
	return netcfg.CheckLine(s)
}

// checkMarkerID accepts a marker as a file name part: vCenter's are
// UUIDs and numbers.
var markerRE = boundedRE{regexp.MustCompile(`^[A-Za-z0-9._-]+$`), 128}

func checkMarkerID(s string) error {
	if !markerRE.MatchString(s) {
		return fmt.Errorf("not a marker ID (letters, digits, '.', '_', '-'; at most 128; %d bytes)", len(s))
	}
	return nil
}

// defaultIMCWait is cloud-init's default vmware_cust_file_max_wait.
const defaultIMCWait = 15 * time.Second

// imcPoll is how often the spec is looked for while waiting.
const imcPoll = 500 * time.Millisecond

// deployPkgPlugin is VMware Tools' customization plugin, in the
// directories cloud-init looks in: without it no spec can come.
var deployPkgPlugin = []string{
	"/usr/lib/open-vm-tools/plugins/vmsvc/libdeployPkgPlugin.so",
	"/usr/lib/x86_64-linux-gnu/open-vm-tools/plugins/vmsvc/libdeployPkgPlugin.so",
	"/usr/lib/aarch64-linux-gnu/open-vm-tools/plugins/vmsvc/libdeployPkgPlugin.so",
	"/usr/lib64/open-vm-tools/plugins/vmsvc/libdeployPkgPlugin.so",
	"/usr/lib/vmware-tools/plugins/vmsvc/libdeployPkgPlugin.so",
	"/usr/lib64/vmware-tools/plugins/vmsvc/libdeployPkgPlugin.so",
}

// imcDeployingMore is how much longer than its bound the wait goes on
// while Tools is seen deploying a package (imcDeploying): the guest's
// part of a hand-over (a Python start of cloud-init -v, five cp and mv)
// is what a loaded machine slows down. With vmware.imc_wait's bound of
// 2 min it stays inside seedkeeper-boot's 3 min start timeout.
const imcDeployingMore = 30 * time.Second

// The directories Tools extracts a package into (open-vm-tools
// libDeployPkg/linuxDeployment.c, Deploy: mkdtemp of this prefix in
// /var/run/vmware-imc when it exists, else in /var/run), removed once it
// has handed the spec over or applied it.
var imcDeployDirs = []string{iMCDir, "/var/run"}

const imcDeployPrefix = ".vmware-imgcust-d"

// imcDeploying reports whether Tools is deploying a package now: one of
// its extraction directories is there (looked at inside the root, at
// most 256 entries of each directory).
func imcDeploying(root sysroot.Root) bool {
	for _, d := range imcDeployDirs {
		ents, err := fsutil.ReadDirInMax(string(root), d, 256)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), imcDeployPrefix) {
				return true
			}
		}
	}
	return false
}

// waitIMC waits, at most wait (0: defaultIMCWait), for the spec to appear
// when Tools' deployPkg plugin is installed under root, and reads it; an
// error wrapping ErrNoSource says what was waited for when none came.
// While Tools is seen deploying a package when the bound ends, it waits
// on until that ends, at most imcDeployingMore longer.
func waitIMC(ctx context.Context, root sysroot.Root, wait time.Duration, log *slog.Logger) (*Metadata, error) {
	plugin := ""
	for _, p := range deployPkgPlugin {
		if fi, err := fsutil.StatIn(string(root), p, true); err == nil && fi.Mode().IsRegular() {
			plugin = p
			break
		}
	}
	if plugin == "" {
		return nil, fmt.Errorf("%w: no %s (and VMware Tools' deployPkg plugin is not installed)", ErrNoSource, imcSpecPath)
	}
	if wait == 0 {
		wait = defaultIMCWait
	}
	if wait < 0 {
		return nil, fmt.Errorf("%w: no %s (not waited for)", ErrNoSource, imcSpecPath)
	}
	log.Info("waiting for a VMware customization spec", "path", imcSpecPath, "at_most", wait.String(), "plugin", plugin)
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	more := false // waiting past the bound for a package Tools is deploying
	for {
		select {
		case <-tctx.Done():
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if !more && imcDeploying(root) {
				more = true
				log.Info("VMware Tools is deploying a customization package: waiting on for it", "at_most", imcDeployingMore.String())
				tctx, cancel = context.WithTimeout(ctx, imcDeployingMore)
				defer cancel()
				continue
			}
			if more {
				return nil, fmt.Errorf("%w: no %s after waiting %s for it, and %s more while VMware Tools was deploying a package (VMware Tools' deployPkg plugin is installed)", ErrNoSource, imcSpecPath, wait, imcDeployingMore)
			}
			return nil, fmt.Errorf("%w: no %s after waiting %s for it (VMware Tools' deployPkg plugin is installed)", ErrNoSource, imcSpecPath, wait)
		case <-time.After(imcPoll):
		}
		if more && !imcDeploying(root) {
			// Tools is done: a spec it handed over is there now, or
			// it applied or refused the package itself.
			md, err := readIMC(ctx, root, log)
			if errors.Is(err, ErrNoSource) {
				return nil, fmt.Errorf("%w: no %s after waiting %s for it; VMware Tools deployed a package meanwhile and handed no spec over (VMware Tools' deployPkg plugin is installed)", ErrNoSource, imcSpecPath, time.Since(start).Round(time.Millisecond))
			}
			if err == nil {
				md.VMwareIMC.Waited = time.Since(start).Round(time.Millisecond).String()
			}
			return md, err
		}
		md, err := readIMC(ctx, root, log)
		if !errors.Is(err, ErrNoSource) {
			if err == nil {
				md.VMwareIMC.Waited = time.Since(start).Round(time.Millisecond).String()
				log.Info("VMware customization spec appeared", "after", md.VMwareIMC.Waited)
			}
			return md, err
		}
	}
}

// readIMC reads the spec under root, nil when there is none (ErrNoSource
// wrapped). maxUser bounds the user-data file of the cloud-init kind.
func readIMC(ctx context.Context, root sysroot.Root, log *slog.Logger) (*Metadata, error) {
	b, err := fsutil.ReadFileInNoFollow(ctx, string(root), imcSpecPath, maxIMCSpec+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: no %s", ErrNoSource, imcSpecPath)
	case errors.Is(err, fsutil.ErrTooLarge):
		return nil, fmt.Errorf("%s: %w: more than %d bytes", imcSpecPath, ErrBadIMCSpec, maxIMCSpec)
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", imcSpecPath, err)
	}
	files := map[string][]byte{}
	read := func(name string, limit int) ([]byte, error) {
		p := path.Join(iMCDir, name)
		b, err := fsutil.ReadFileInNoFollow(ctx, string(root), p, int64(limit))
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %w", p, ErrBadIMCSpec, err)
		}
		files[name] = b
		return b, nil
	}
	md, err := parseIMC(b, read, log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", imcSpecPath, err)
	}
	md.VMwareIMC.keep = &keptIMC{MarkerID: md.VMwareIMC.MarkerID, CustCfg: stripIMCPassword(b)}
	if len(files) > 0 {
		md.VMwareIMC.keep.Files = files
	}
	// The same customization, applied while the VM ran and still in
	// /run (seedkeeper boot run again in that boot): its instance ID
	// is the one kept with it, as on the boots after.
	if k := keptIMCFor(ctx, root, md.VMwareIMC.keep); k != nil {
		liveIMCIdentity(md, k.InstanceID)
		md.VMwareIMC.keep.InstanceID = k.InstanceID
	}
	if err := imcIdentity(md, root, imcSpecPath, log); err != nil {
		return nil, err
	}
	return md, nil
}

// imcIdentity sets md's machine ID, and its instance ID when the spec
// (read from where) has none, from the DMI product_uuid under root.
func imcIdentity(md *Metadata, root sysroot.Root, where string, log *slog.Logger) error {
	uuid, err := dmi.Read(root, "product_uuid")
	if err != nil {
		log.Warn("no machine identity", "err", err)
	}
	md.MachineID = strings.ToLower(uuid)
	if md.InstanceID == "" {
		if md.MachineID == "" || CheckInstanceID(md.MachineID) != nil {
			return fmt.Errorf("%s: %w: the spec has no usable instance ID and the DMI product_uuid is none either", where, ErrBadIMCSpec)
		}
		md.InstanceID, md.InstanceIDDefaulted = md.MachineID, true
		log.Info("no instance ID in the customization spec; using the DMI product_uuid", "instance_id", md.InstanceID)
	}
	return nil
}

// parseIMC reads a spec (cust.cfg's bytes) into Metadata; read reads a
// file the cloud-init kind names, within a limit. The instance ID is
// left empty when the spec has none (the caller defaults it).
func parseIMC(b []byte, read func(name string, limit int) ([]byte, error), log *slog.Logger) (*Metadata, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ini, err := parseIMCINI(b)
	if err != nil {
		return nil, err
	}
	md := &Metadata{Source: SourceVMware, Origin: Origin{Transport: transportIMC, Items: []string{imcSpecPath}}}
	spec := &IMCSpec{Kind: imcKindTrad}
	md.VMwareIMC = spec
	r := &imcReader{ini: ini, md: md, spec: spec, log: log}
	for _, w := range ini.warnings {
		r.warn("%s", w)
	}
	for _, name := range ini.order {
		sec := ini.sections[name]
		if strings.HasPrefix(name, "NIC") && name != "NIC-CONFIG" {
			continue // said with the NIC
		}
		for _, b := range sec.bad {
			r.warn("cust.cfg [%s]: %s; dropped", safeName(name), b)
		}
	}
	spec.MarkerID, _ = r.value("MISC", "MARKER-ID", checkMarkerID)
	spec.PostGCStatus = r.yesNo("MISC", "POST-GC-STATUS", false)
	if _, ok := r.value("CUSTOM-SCRIPT", "SCRIPT-NAME", nil); ok {
		spec.CustomScript = true
	}

	if mdName, ok := r.value("CLOUDINIT", "METADATA", checkFileName); ok {
		spec.Kind = imcKindCloud
		return md, r.cloudInitKind(mdName, read)
	}
	if _, present := ini.get("CLOUDINIT", "METADATA"); present {
		return nil, fmt.Errorf("%w: [CLOUDINIT] METADATA does not name a file in the spec's directory", ErrBadIMCSpec)
	}
	r.traditional()
	return md, nil
}

// cloudInitKind reads the meta-data and user-data the [CLOUDINIT]
// section names, as guestinfo's metadata and userdata are read.
func (r *imcReader) cloudInitKind(mdName string, read func(string, int) ([]byte, error)) error {
	doc, err := read(mdName, yamlx.MaxDocument)
	if err != nil {
		return err
	}
	r.md.Origin.Items = append(r.md.Origin.Items, path.Join(iMCDir, mdName))
	if err := applyVMwareMetaData(r.md, doc, r.log); err != nil {
		return fmt.Errorf("%w: meta-data: %w", ErrBadIMCSpec, err)
	}
	if udName, ok := r.ini.get("CLOUDINIT", "USERDATA"); ok {
		if err := checkFileName(udName); err != nil {
			return fmt.Errorf("%w: [CLOUDINIT] USERDATA: %w", ErrBadIMCSpec, err)
		}
		ud, err := read(udName, maxGuestinfoDecoded)
		if err != nil {
			return err
		}
		r.md.Origin.Items = append(r.md.Origin.Items, path.Join(iMCDir, udName))
		r.md.UserData = ud
	}
	return nil
}

// traditional reads the Linux spec: NETWORK, NIC-CONFIG and the NICs,
// DNS, DATETIME, PASSWORD and MISC.
func (r *imcReader) traditional() {
	md := r.md
	meta := map[string]any{}
	if id, ok := r.value("MISC", "INSTANCE-ID", CheckInstanceID); ok {
		md.InstanceID = id
		meta["instance-id"] = id
	}
	if host, ok := r.value("NETWORK", "HOSTNAME", checkDomainName); ok {
		if dom, ok := r.value("NETWORK", "DOMAINNAME", checkDomainName); ok {
			if err := checkDomainName(host + "." + dom); err == nil {
				host += "." + dom
			} else {
				r.warn("cust.cfg NETWORK DOMAINNAME dropped: with the host name it is %v", err)
			}
		}
		md.Hostname = host
		meta["local-hostname"] = host
	}
	md.MetaData = meta

	cfg := map[string]any{}
	if tz, ok := r.value("DATETIME", "TIMEZONE", checkTimezone); ok {
		cfg["timezone"] = tz
	}
	reset := r.yesNo("PASSWORD", "RESET", false)
	if pw, ok := r.value("PASSWORD", imcPassKey, checkIMCPassword); ok {
		plain, _ := base64.StdEncoding.DecodeString(pw)
		// The newline vCenter's encoder leaves ends chpasswd's line
		// in cloud-init's reading: it is no part of the password.
		plain = bytes.TrimRight(plain, "\n")
		r.spec.Password = true
		cfg["chpasswd"] = map[string]any{
			"expire": reset,
			"users":  []any{map[string]any{"name": "root", "password": string(plain), "type": "text"}},
		}
	} else if reset {
		r.warn("cust.cfg PASSWORD RESET dropped: without a password to set, seedkeeper does not expire the root password")
	}
	r.spec.cloudConfig = cfg
	md.VendorData = imcVendorData(cfg)
	r.network()
}

// imcVendorData encodes the cloud-config a traditional spec gives; nil
// when it gives none.
func imcVendorData(cfg map[string]any) []byte {
	if len(cfg) == 0 {
		return nil
	}
	y, err := yaml.Marshal(cfg)
	if err != nil {
		return nil
	}
	return append([]byte("#cloud-config\n"), y...)
}

// dropIMCPassword takes the root password of a traditional spec out of
// md's vendor-data (a customization already applied on an earlier boot
// sets no password again, as cloud-init's marker file has it). It
// reports whether there was one.
func dropIMCPassword(md *Metadata) bool {
	s := md.VMwareIMC
	if s == nil || !s.Password {
		return false
	}
	cfg := maps.Clone(s.cloudConfig)
	delete(cfg, "chpasswd")
	md.VendorData = imcVendorData(cfg)
	s.Password = false
	return true
}

// The states and codes of deployPkg.update.state, as open-vm-tools'
// deployPkg and cloud-init name them.
const (
	iMCStateRunning = 4
	iMCStateDone    = 5

	iMCSuccess            = 0
	iMCErrScriptDisabled  = 6
	iMCErrWrongMetaFormat = 9
	iMCEventCustomizeFail = 100
	iMCEventNetworkFail   = 101
)

// imcMessage is what a report's message may hold: seedkeeper's own
// words, never text of the spec.
var imcMessage = boundedRE{regexp.MustCompile(`^[A-Za-z0-9 ._@:/()-]*$`), 200}

// reportIMC tells vCenter how the customization goes, as cloud-init
// does: one "deployPkg.update.state STATE CODE MESSAGE" RPC through
// vmware-rpctool, run by r (nil: vmtools.Exec{}, which runs the tool found
// in $PATH by its absolute path, with no shell). A message with other
// characters than letters, digits, space and ._@:/()- is refused before
// the tool runs.
func reportIMC(ctx context.Context, r vmtools.Runner, state, code int, msg string) error {
	if !imcMessage.MatchString(msg) || (state != iMCStateRunning && state != iMCStateDone) || code < 0 || code > 999 {
		return fmt.Errorf("reporting to vCenter: refused: state %d, code %d, a message of %d bytes", state, code, len(msg))
	}
	if r == nil {
		r = vmtools.Exec{}
	}
	rpc := fmt.Sprintf("deployPkg.update.state %d %d %s", state, code, msg)
	res, err := r.Run(ctx, []string{ToolRPCTool, rpc})
	if err != nil {
		return &vmtools.ToolError{Tool: ToolRPCTool, Command: rpc, Err: err}
	}
	if res.ExitCode != 0 {
		return &vmtools.ToolError{Tool: ToolRPCTool, Command: rpc, ExitCode: res.ExitCode, Stderr: strings.TrimRight(string(res.Stderr), "\n")}
	}
	return nil
}

// checkIMCPassword accepts a -PASS value: base64 of a password of at
// most imcMaxPass bytes of text with no control character. The error
// never says anything of the password but its length.
func checkIMCPassword(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return errors.New("not base64")
	}
	b = bytes.TrimRight(b, "\n") // vCenter's, and echo's, trailing newline
	switch {
	case len(b) == 0:
		return errors.New("an empty password")
	case len(b) > imcMaxPass:
		return fmt.Errorf("a password longer than %d bytes", imcMaxPass)
	case !utf8.Valid(b):
		return errors.New("a password that is not UTF-8")
	case bytes.ContainsFunc(b, func(c rune) bool { return c < 0x20 || c == 0x7f }):
		return errors.New("a password with a control character")
	}
	return nil
}

// imcNIC is one NIC of the spec, read and checked.
type imcNIC struct {
	name, id string
	mac      string
	primary  bool
	static4  bool
	noV4     bool // IPv4_MODE DISABLED
	addr4    netip.Prefix
	gw4      []netip.Addr
	addr6    []netip.Prefix
	gw6      []netip.Addr
}

// network reads NIC-CONFIG and the NICs into a version 2 network config
// (Metadata.NetworkConfigRaw, and Network parsed from it).
func (r *imcReader) network() {
	list, ok := r.ini.get("NIC-CONFIG", "NICS")
	if !ok {
		return
	}
	var nics []*imcNIC
	seen := map[string]bool{}
	for i, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if i >= maxIMCNICs {
			r.warn("cust.cfg NIC-CONFIG NICS: NICs beyond the first %d dropped", maxIMCNICs)
			break
		}
		if !plainNameRE.MatchString(name) || seen[name] {
			r.warn("cust.cfg NIC-CONFIG NICS item %d dropped: not a section name, or named twice", i+1)
			r.spec.NICsDropped++
			continue
		}
		seen[name] = true
		n, err := r.nic(name)
		if err != nil {
			r.warn("cust.cfg [%s] dropped, that NIC is left alone: %v", name, err)
			r.spec.NICsDropped++
			continue
		}
		nics = append(nics, n)
	}
	r.spec.NICs = len(nics)
	if len(nics) == 0 {
		return
	}
	// PRIMARY: the NIC that holds the default routes. cloud-init refuses
	// the whole network for two; the first is kept here.
	primary := -1
	for i, n := range nics {
		if !n.primary {
			continue
		}
		if primary >= 0 {
			r.warn("cust.cfg [%s] PRIMARY dropped: [%s] is the primary NIC already", n.name, nics[primary].name)
			n.primary = false
			continue
		}
		primary = i
	}
	nameservers := r.indexed("DNS", "NAMESERVER", func(s string) error {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" || a.IsUnspecified() {
			return errors.New("not an IP address")
		}
		return nil
	})
	search := r.indexed("DNS", "SUFFIX", checkDomainName)
	dnsFromDHCP := r.yesNo("DNS", "DNSFROMDHCP", false)

	ethernets := map[string]any{}
	def4, def6 := primary >= 0, primary >= 0
	for _, n := range nics {
		e := map[string]any{"match": map[string]any{"macaddress": n.mac}}
		var addrs []any
		var routes []any
		switch {
		case n.noV4:
			e["dhcp4"] = false
		case n.static4:
			e["dhcp4"] = false
			addrs = append(addrs, n.addr4.String())
			// The gateways are the NIC's default gateways in order of
			// preference: the default route goes through the first.
			if len(n.gw4) > 0 && (n.primary || !def4) {
				routes = append(routes, map[string]any{"to": "0.0.0.0/0", "via": n.gw4[0].String()})
				def4 = true
			}
		default:
			e["dhcp4"] = true
			if len(nameservers) > 0 && !dnsFromDHCP {
				e["dhcp4-overrides"] = map[string]any{"use-dns": false}
			}
		}
		if len(n.addr6) > 0 {
			e["dhcp6"] = false
			for _, a := range n.addr6 {
				addrs = append(addrs, a.String())
			}
			if len(n.gw6) > 0 && (n.primary || !def6) {
				routes = append(routes, map[string]any{"to": "::/0", "via": n.gw6[0].String()})
				def6 = true
			}
		}
		if len(addrs) > 0 {
			e["addresses"] = addrs
		}
		if len(routes) > 0 {
			e["routes"] = routes
		}
		if len(nameservers) > 0 || len(search) > 0 {
			ns := map[string]any{}
			if len(nameservers) > 0 {
				ns["addresses"] = toAny(nameservers)
			}
			if len(search) > 0 {
				ns["search"] = toAny(search)
			}
			e["nameservers"] = ns
		}
		ethernets[n.id] = e
	}
	doc := map[string]any{"version": int64(2), "ethernets": ethernets}
	raw, err := json.Marshal(doc)
	if err != nil {
		r.warn("network config dropped: %v", err)
		return
	}
	cfg, err := netcfg.Parse(raw)
	if err != nil {
		r.warn("network config dropped, leaving the network alone: %v", err)
		return
	}
	r.md.NetworkConfigRaw, r.md.Network = raw, cfg
	r.md.networkNotes(r.log, "cust.cfg network")
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// nic reads the section of one NIC; any value that cannot be used makes
// the whole NIC unusable (a NIC half configured is worse than one left
// alone).
func (r *imcReader) nic(name string) (*imcNIC, error) {
	sec := r.ini.sections[name]
	if sec == nil {
		return nil, errors.New("no such section")
	}
	if len(sec.bad) > 0 {
		return nil, errors.New(sec.bad[0])
	}
	get := func(k string) string { return sec.keys[k] }
	n := &imcNIC{name: name, id: strings.ToLower(name)}
	hw, err := net.ParseMAC(get("MACADDR"))
	if err != nil || len(hw) != 6 {
		return nil, errors.New("MACADDR is not a MAC address")
	}
	n.mac = hw.String()
	yes := func(k string) (bool, error) {
		switch strings.ToLower(get(k)) {
		case "yes", "true":
			return true, nil
		case "", "no", "false":
			return false, nil
		}
		return false, fmt.Errorf("%s is not yes or no", k)
	}
	if n.primary, err = yes("PRIMARY"); err != nil {
		return nil, err
	}
	if _, err := yes("ONBOOT"); err != nil {
		return nil, err
	}
	switch strings.ToUpper(get("IPv4_MODE")) {
	case "", "BACKWARDS_COMPATIBLE", "STATIC":
	case "DISABLED":
		n.noV4 = true
	default:
		return nil, errors.New("IPv4_MODE is not BACKWARDS_COMPATIBLE, STATIC or DISABLED")
	}
	switch strings.ToLower(get("BOOTPROTO")) {
	case "", "dhcp":
	case "static":
		n.static4 = !n.noV4
	default:
		return nil, errors.New("BOOTPROTO is not static or dhcp")
	}
	if n.static4 {
		a, err := netip.ParseAddr(get("IPADDR"))
		if err != nil || checkIP(true)(get("IPADDR")) != nil {
			return nil, errors.New("BOOTPROTO is static and IPADDR is not an IPv4 address")
		}
		bits := 32
		if m := get("NETMASK"); m != "" {
			mask, err := netip.ParseAddr(m)
			if err != nil || !mask.Is4() {
				return nil, errors.New("NETMASK is not an IPv4 netmask")
			}
			ones, size := net.IPMask(mask.AsSlice()).Size()
			if size == 0 {
				return nil, errors.New("NETMASK is not a contiguous netmask")
			}
			bits = ones
		}
		n.addr4 = netip.PrefixFrom(a, bits)
		if g := get("GATEWAY"); g != "" {
			for i, s := range strings.Split(g, ",") {
				s = strings.TrimSpace(s)
				if checkIP(true)(s) != nil {
					return nil, fmt.Errorf("GATEWAY item %d is not an IPv4 address", i+1)
				}
				n.gw4 = append(n.gw4, netip.MustParseAddr(s))
			}
		}
	}
	want6 := 0
	for k := range sec.keys {
		if strings.HasPrefix(k, "IPv6ADDR|") {
			want6++
		}
	}
	for i := 1; ; i++ {
		k := "IPv6ADDR|" + strconv.Itoa(i)
		s, ok := sec.keys[k]
		if !ok {
			break
		}
		if i > imcMaxIndexed {
			return nil, fmt.Errorf("more than %d IPv6 addresses", imcMaxIndexed)
		}
		if checkIP(false)(s) != nil {
			return nil, fmt.Errorf("%s is not an IPv6 address", k)
		}
		bits := 128
		if m := get("IPv6NETMASK|" + strconv.Itoa(i)); m != "" {
			b, err := strconv.Atoi(m)
			if err != nil || b < 1 || b > 128 || strconv.Itoa(b) != m {
				return nil, fmt.Errorf("IPv6NETMASK|%d is not a prefix length", i)
			}
			bits = b
		}
		n.addr6 = append(n.addr6, netip.PrefixFrom(netip.MustParseAddr(s), bits))
		if g := get("IPv6GATEWAY|" + strconv.Itoa(i)); g != "" {
			if checkIP(false)(g) != nil {
				return nil, fmt.Errorf("IPv6GATEWAY|%d is not an IPv6 address", i)
			}
			n.gw6 = append(n.gw6, netip.MustParseAddr(g))
		}
	}
	if len(n.addr6) != want6 {
		return nil, errors.New("the IPv6ADDR|n keys are not numbered 1, 2, ... without a gap")
	}
	return n, nil
}
