package datasource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/dmi"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/vmtools"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// VMware guestinfo: the metadata, userdata and vendordata keys of the VM's
// extraConfig, read the way cloud-init's VMware datasource reads them
// (docs/cloud-init.md, "VMware guestinfo"): the envvar transport first, then
// vmware-rpctool with vmtoolsd as the fallback.

// ErrBadNetworkDrivers wraps every error of parseNetworkDrivers: the
// metadata's network-drivers value is not a list of driver names. An
// allowlist built from such a value must allow nothing.
var ErrBadNetworkDrivers = errors.New("bad network-drivers")

// VMwareOptions are the options of the VMware source (Options.VMware),
// read with Read(ctx, SourceVMware, o): guestinfo through the envvar
// transport when VMX_GUESTINFO is set, else, on a VMware platform,
// through vmware-rpctool (vmtoolsd when it is missing or fails), else the
// customization spec VMware Tools left. The error wraps ErrNoSource when
// none of them has metadata, and ErrNoVMwareTools too when neither tool
// is installed. The zero value reads through the tools in $PATH and does
// not redact.
type VMwareOptions struct {
	// Getenv reads the environment for the envvar transport; nil means
	// os.Getenv.
	Getenv func(string) string

	// Redact wipes the guestinfo keys after a successful read, as
	// cloud-init's redaction does: every value key that had content,
	// and every key the metadata lists under "redact" (or the legacy
	// "cleanup-guestinfo"), is set to "---" and its ".encoding" key to
	// one space, with info-set through the tool that did the reading.
	// The envvar transport is never redacted.
	//
	// It is off by default, and then even the metadata's own redact list
	// is not acted on: seedkeeper reads guestinfo again on every boot
	// and on every hotplug event to find the current network config,
	// and after a redaction those reads find nothing, so BOOT and
	// HOTPLUG could no longer configure the network. Turn it on when
	// keeping user-data away from unprivileged guest users (any of them
	// can run vmware-rpctool) matters more than later re-reads.
	Redact bool

	// IMCWait bounds the wait for a customization spec when guestinfo
	// has nothing and VMware Tools' deployPkg plugin is installed (Tools
	// may still be writing the spec), as cloud-init's
	// vmware_cust_file_max_wait does; 0 means 15 seconds, a negative
	// value no wait.
	IMCWait time.Duration

	// runner stands in for vmware-rpctool and vmtoolsd in tests; nil
	// means vmtools.Exec{} ($PATH, vmtools.DefaultTimeout per run).
	runner vmtools.Runner
}

func (o *VMwareOptions) tools() vmtools.Runner {
	if o.runner != nil {
		return o.runner
	}
	return vmtools.Exec{}
}

func (o *VMwareOptions) getenv() func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return os.Getenv
}

// vmware is the VMware source: guestinfo through the envvar transport,
// vmware-rpctool or vmtoolsd.
var vmware = Source{
	Name:       SourceVMware,
	Platforms:  []string{"vmware"},
	Drivers:    []string{"e1000", "e1000e", "vlance", "vmxnet2", "vmxnet3", "vrdma"},
	DriversKey: "network-drivers",
	// guestinfo.metadata's network is cloud-init network config.
	RawNetwork: true,
	detect:     func(ctx context.Context, o *Options) (Detection, error) { return detectVMware(ctx, *o) },
	read: func(ctx context.Context, _ Detection, o *Options) (*Metadata, error) {
		return readVMware(ctx, *o)
	},
	duties:  vmwareDuties,
	watcher: newVMwareWatch,
}

// detectVMware reports cheaply, without running any tool, whether this
// looks like a VMware guest, and why: the DMI product name under o.Root
// contains "vmware" (any case), or the envvar transport is set
// (VMX_GUESTINFO, read through o.VMware.Getenv, and one of
// VMX_GUESTINFO_{METADATA,USERDATA,VENDORDATA}). It makes no check that
// can fail: the error is for the shape all detectors share, and is only
// ever ctx's.
func detectVMware(ctx context.Context, o Options) (Detection, error) {
	d := Detection{Candidate: Candidate{Source: SourceVMware}}
	if err := ctx.Err(); err != nil {
		return d, err
	}
	// The envvar transport, as the reader takes it: VMX_GUESTINFO and a
	// value.
	if getenv := o.VMware.getenv(); getenv("VMX_GUESTINFO") != "" {
		for _, k := range guestinfoValueKeys {
			if name := envGuestinfoName(k); getenv(name) != "" {
				d.Found, d.Reason = true, "VMX_GUESTINFO and "+name+" are set"
				return d, nil
			}
		}
	}
	d.Found, d.Reason = vmwarePlatform(sysroot.Root(o.Root))
	return d, nil
}

// vmwarePlatform is cloud-init's is_vmware_platform check.
func vmwarePlatform(root sysroot.Root) (bool, string) {
	name, err := dmi.Read(root, "product_name")
	if err != nil {
		return false, err.Error()
	}
	if !strings.Contains(strings.ToLower(name), "vmware") {
		return false, fmt.Sprintf("DMI product_name %q is not VMware", name)
	}
	return true, fmt.Sprintf("DMI product_name %q", name)
}

// readVMware reads VMware guestinfo into one Metadata, with the options
// in o.VMware, the DMI under o.Root. A cancelled ctx ends a tool that is
// running and the read with it.
//
// The envvar transport is tried first (VMX_GUESTINFO non-empty); then, on
// a VMware platform (DMI product_name), guestinfo through vmware-rpctool,
// or through vmtoolsd when vmware-rpctool is missing or fails on any key
// (the whole query is then read again with vmtoolsd). The result is an
// error wrapping ErrNoSource when this is not VMware, when neither tool is
// installed (also wrapping ErrNoVMwareTools), or when guestinfo.metadata,
// .userdata and .vendordata are all absent, empty or "---". A tool that
// fails is a *vmtools.ToolError; a value that does not decode, or a metadata
// document that does not parse, is an error naming the key. Unlike
// cloud-init, a gzip+base64 value that is not gzip is an error rather than
// silently used as it is. The values are decoded as they are read, in
// the order metadata, userdata, vendordata, within maxGuestinfoTotal
// together: vendordata that no longer fits is dropped with a warning,
// metadata or userdata that does not fit is an error.
//
// The instance ID is the metadata's instance-id (trimmed); when that is
// absent or empty it is the DMI product_uuid, lower-cased, and
// InstanceIDDefaulted is set. MachineID is always the DMI product_uuid.
func readVMware(ctx context.Context, o Options) (*Metadata, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	log, opt, root := o.logger(), o.VMware, sysroot.Root(o.Root)
	raw, err := readGuestinfoEnv(opt.getenv(), log)
	if err != nil {
		return nil, fmt.Errorf("vmware: %w", err)
	}
	if raw == nil {
		ok, why := vmwarePlatform(root)
		if !ok {
			return nil, fmt.Errorf("vmware: %w: %s", ErrNoSource, why)
		}
		log.Debug("vmware platform", "reason", why)
		raw, err = queryGuestinfo(ctx, opt.tools(), log)
		if err == nil && len(raw.data) == 0 {
			err = fmt.Errorf("%w: guestinfo.metadata, guestinfo.userdata and guestinfo.vendordata are all empty", ErrNoSource)
		}
		if errors.Is(err, ErrNoSource) {
			// The third transport: a customization spec VMware Tools
			// left, read when guestinfo has nothing (as cloud-init
			// orders them).
			md, ierr := readIMC(ctx, root, log)
			if errors.Is(ierr, ErrNoSource) {
				md, ierr = waitIMC(ctx, root, opt.IMCWait, log)
			}
			if errors.Is(ierr, ErrNoSource) {
				// Last, the spec an earlier boot applied and kept:
				// the customization holds on every later boot.
				kmd, kerr := readKeptIMC(ctx, root, log)
				if !errors.Is(kerr, ErrNoSource) {
					md, ierr = kmd, kerr
				}
			}
			if ierr == nil {
				log.Info("vmware customization spec read", "kind", md.VMwareIMC.Kind, "files", strings.Join(md.Origin.Items, ","))
				return md, nil
			}
			if !errors.Is(ierr, ErrNoSource) {
				return nil, fmt.Errorf("vmware: %w", ierr)
			}
			return nil, fmt.Errorf("vmware: %w, and there is no customization spec: %s", err, strings.TrimPrefix(ierr.Error(), ErrNoSource.Error()+": "))
		}
		if err != nil {
			return nil, fmt.Errorf("vmware: %w", err)
		}
	}
	log.Info("vmware guestinfo read", "transport", raw.transport, "keys", strings.Join(raw.items, ","))

	md, err := vmwareMetadata(raw, root, log)
	if err != nil {
		return nil, fmt.Errorf("vmware: %w", err)
	}

	asked := vmwareRedactList(md.MetaData, log)
	switch {
	case raw.transport == TransportEnvvar:
	case opt.Redact:
		redactGuestinfo(ctx, guestinfoTool{name: raw.transport, r: opt.tools(), log: log}, raw, asked, log)
	case len(asked) > 0:
		log.Info("metadata asks to redact guestinfo keys; not redacting because redaction is off",
			"keys", strings.Join(asked, ","))
	}
	return md, nil
}

// vmwareMetadata builds the Metadata from the decoded values.
func vmwareMetadata(raw *rawGuestinfo, root sysroot.Root, log *slog.Logger) (*Metadata, error) {
	md := &Metadata{
		Source:     SourceVMware,
		Origin:     Origin{Transport: raw.transport, Items: raw.items},
		UserData:   raw.data["userdata"],
		VendorData: raw.data["vendordata"],
	}
	for _, w := range raw.warnings {
		md.warn(log, w)
	}
	if err := applyVMwareMetaData(md, raw.data["metadata"], log); err != nil {
		return nil, fmt.Errorf("%s: %w", raw.name("metadata"), err)
	}

	uuid, err := dmi.Read(root, "product_uuid")
	if err != nil {
		log.Warn("no machine identity", "err", err)
	}
	md.MachineID = strings.ToLower(uuid)
	if md.InstanceID == "" {
		if md.MachineID == "" {
			return nil, fmt.Errorf("%s has no instance-id and the DMI product_uuid cannot be read: %w", raw.name("metadata"), err)
		}
		if err := CheckInstanceID(md.MachineID); err != nil {
			return nil, fmt.Errorf("%s has no usable instance-id and the DMI product_uuid is no instance ID either: %w", raw.name("metadata"), err)
		}
		md.InstanceID = md.MachineID
		md.InstanceIDDefaulted = true
		log.Info("no instance-id in the metadata; using the DMI product_uuid", "instance_id", md.InstanceID)
	}
	return md, nil
}

// applyVMwareMetaData parses the metadata document (JSON, else YAML) and
// fills md's instance ID, hostname, keys, network and driver allowlist.
func applyVMwareMetaData(md *Metadata, doc []byte, log *slog.Logger) error {
	m, over, err := parseVMwareDoc(doc)
	if err != nil {
		return err
	}
	md.MetaData = m
	for _, w := range over {
		md.warn(log, w)
	}
	for _, w := range boundMetaData("metadata", m) {
		md.warn(log, w)
	}
	if v, ok := m["instance-id"]; ok && v != nil {
		if s, ok := vmwareScalar(v); !ok {
			md.warn(log, fmt.Sprintf("instance-id dropped: want a string, got %s", yamlx.Kind(v)))
		} else {
			md.InstanceID = md.usableInstanceID(log, "instance-id", strings.TrimSpace(s))
		}
	}
	if v, ok := m["local-hostname"]; ok && v != nil {
		if s, ok := vmwareScalar(v); !ok {
			md.warn(log, fmt.Sprintf("local-hostname dropped: want a string, got %s", yamlx.Kind(v)))
		} else {
			md.setHostname(log, "local-hostname", strings.TrimSpace(s))
		}
	}
	for _, k := range []string{"public-keys-data", "public_keys_data", "public-keys", "public_keys"} {
		if v, ok := m[k]; ok {
			keys, where, warnings := vmwarePublicKeys(k, v)
			for _, w := range warnings {
				md.warn(log, w)
			}
			md.setPublicKeys(log, keys, where)
			break
		}
	}
	if md.NetworkConfigRaw, err = vmwareNetworkRaw(m); err != nil {
		md.warn(log, fmt.Sprintf("network dropped, leaving the network alone: %v", err))
		md.NetworkConfigRaw = nil
	}
	if md.NetworkConfigRaw != nil {
		if nm, ok := m["network"].(map[string]any); ok {
			md.Network, err = netcfg.ParseValue(nm)
		} else {
			md.Network, err = netcfg.Parse(md.NetworkConfigRaw)
		}
		switch {
		case errors.Is(err, netcfg.ErrDisabled):
			log.Info("metadata network config is disabled; leaving the network alone")
			md.Network = nil
		case err != nil:
			md.warn(log, fmt.Sprintf("network dropped, leaving the network alone: %v", err))
			md.Network, md.NetworkConfigRaw = nil, nil
		}
		md.networkNotes(log, "network")
	}
	if v, ok := m["network-drivers"]; ok {
		md.NetworkDriversSet = true
		md.NetworkDrivers, err = parseNetworkDrivers(v)
		if err != nil {
			// nil drivers with NetworkDriversSet: the allowlist allows nothing.
			md.NetworkDrivers = nil
			log.Warn("hotplug will allow no driver", "err", err)
		}
	}
	if v, ok := m["wait-on-network"]; ok {
		md.WaitOnNetwork, err = parseWaitOnNetwork(v)
		if err != nil {
			md.warn(log, fmt.Sprintf("%v; waiting for %s", err, md.WaitOnNetwork))
		}
	}
	return nil
}

// parseVMwareDoc parses a metadata document as JSON, else as YAML. An
// absent or null document is an empty mapping; anything else that is not
// a mapping is an error.
func parseVMwareDoc(doc []byte) (_ map[string]any, dropped []string, _ error) {
	var v any
	if len(bytes.TrimSpace(doc)) == 0 {
		return map[string]any{}, nil, nil
	}
	// Counted before either decoder sees it (JSON is YAML's flow style).
	if err := yamlx.Check(doc); err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		v = nil
		// A key whose aliases expand beyond the limits is left out
		// before anything is decoded; the others are kept.
		n, over, err := yamlx.ParseFit(doc)
		if err != nil {
			return nil, nil, fmt.Errorf("not JSON or YAML: %w", yamlx.Describe(err))
		}
		for _, d := range over {
			dropped = append(dropped, fmt.Sprintf("metadata key %s dropped: %v", droppedKeyName(d.Key), d.Err))
		}
		if n.Kind != 0 {
			if err := n.Decode(&v); err != nil {
				return nil, nil, fmt.Errorf("not JSON or YAML: %w", yamlx.Describe(err))
			}
		}
	}
	v = plainValue(v)
	if v == nil {
		return map[string]any{}, dropped, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("document is %s, want a mapping", yamlx.Kind(v))
	}
	return m, dropped, nil
}

// plainValue turns decoded JSON or YAML into plain JSON-like values:
// maps with string keys (a key that is not a string is written as text),
// []any, string, bool, int64/uint64/float64.
func plainValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = plainValue(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = plainValue(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = plainValue(e)
		}
		return t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		if f, err := t.Float64(); err == nil {
			return f
		}
		return t.String()
	case int:
		return int64(t)
	case float64:
		// JSON has no infinity or NaN: keep YAML's spelling as text.
		switch {
		case math.IsInf(t, 1):
			return ".inf"
		case math.IsInf(t, -1):
			return "-.inf"
		case math.IsNaN(t):
			return ".nan"
		}
	case time.Time:
		return t.Format(time.RFC3339Nano)
	}
	return v
}

// vmwareScalar renders a string or number as text.
func vmwareScalar(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case int64:
		return strconv.FormatInt(t, 10), true
	case uint64:
		return strconv.FormatUint(t, 10), true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	}
	return "", false
}

// vmwarePublicKeys reads SSH keys given as a string (one per line), a
// list, or a mapping of lists (or strings), taken in key order. Blank
// entries are dropped, and so, with a warning, are entries of another
// type. key is the metadata key, for where and the warnings.
func vmwarePublicKeys(key string, v any) (keys, where, warnings []string) {
	add := func(at, s string) {
		for i, line := range strings.Split(s, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				keys = append(keys, line)
				where = append(where, fmt.Sprintf("%s%s line %d", key, at, i+1))
			}
		}
	}
	addList := func(at string, l []any) {
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				warnings = append(warnings, fmt.Sprintf("%s%s[%d] dropped: want a string, got %s", key, at, i, yamlx.Kind(e)))
				continue
			}
			add(fmt.Sprintf("%s[%d]", at, i), s)
		}
	}
	switch t := v.(type) {
	case nil:
	case string:
		add("", t)
	case []any:
		addList("", t)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			switch e := t[k].(type) {
			case nil:
			case string:
				add("."+k, e)
			case []any:
				addList("."+k, e)
			default:
				warnings = append(warnings, fmt.Sprintf("%s.%s dropped: want a string or a list, got %s", key, k, yamlx.Kind(e)))
			}
		}
	default:
		warnings = append(warnings, fmt.Sprintf("%s dropped: want a string, a list or a mapping, got %s", key, yamlx.Kind(v)))
	}
	return keys, where, warnings
}

// vmwareNetworkRaw returns the network document of the metadata, nil when
// there is none: a mapping is encoded as JSON; a string is decoded with
// "network.encoding".
func vmwareNetworkRaw(m map[string]any) ([]byte, error) {
	switch t := m["network"].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		if len(t) == 0 {
			return nil, nil
		}
		// Aliases in a YAML document make the mapping as large as all
		// their copies once encoded: measure before encoding.
		if n, ok := yamlx.Size(t, netcfg.MaxExpandedSize); !ok {
			return nil, fmt.Errorf("expands to more than %d bytes (%d counted; YAML aliases?)", netcfg.MaxExpandedSize, n)
		}
		b, err := json.Marshal(t)
		if err != nil { // e.g. a YAML .inf, which JSON cannot hold
			// The YAML encoder costs about 2 KB a value: bounded
			// in values, not in bytes.
			if _, ok := yamlx.Count(t, yamlx.MaxEncodeValues); !ok {
				return nil, fmt.Errorf("not JSON, and more than %d values to encode as YAML", yamlx.MaxEncodeValues)
			}
			b, err = yaml.Marshal(t)
		}
		if err != nil {
			return nil, err
		}
		return b, nil
	case string:
		if _, ok := cleanGuestinfoValue(t); !ok {
			return nil, nil
		}
		var enc string
		if e, ok := m["network.encoding"]; ok && e != nil {
			es, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("network.encoding: want a string, got %s", yamlx.Kind(e))
			}
			enc, _ = cleanGuestinfoValue(es)
		}
		return decodeGuestinfo(enc, []byte(t), yamlx.MaxDocument)
	default:
		return nil, fmt.Errorf("want a mapping or an encoded string, got %s", yamlx.Kind(t))
	}
}

// parseNetworkDrivers reads a network-drivers metadata value: a list of
// driver names, or one string of comma-separated names; each is trimmed
// and duplicates are dropped. An empty list is valid and allows nothing.
// Anything else (another type, a null, a name netcfg.CheckDriverName
// refuses) is an error wrapping ErrBadNetworkDrivers, and must allow
// nothing either: a typo must never open the hotplug gate.
func parseNetworkDrivers(v any) ([]string, error) {
	var names []string
	switch t := v.(type) {
	case []any:
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%w: item %d is %s, want a driver name", ErrBadNetworkDrivers, i, yamlx.Kind(e))
			}
			names = append(names, s)
		}
	case []string:
		names = append(names, t...)
	case string:
		names = strings.Split(t, ",")
	default:
		return nil, fmt.Errorf("%w: %s, want a list of driver names", ErrBadNetworkDrivers, yamlx.Kind(v))
	}
	drivers := make([]string, 0, len(names))
	seen := map[string]bool{}
	for i, n := range names {
		n = strings.TrimSpace(n)
		if err := netcfg.CheckDriverName(n); err != nil {
			return nil, fmt.Errorf("%w: item %d: %v", ErrBadNetworkDrivers, i, err)
		}
		if !seen[n] {
			seen[n] = true
			drivers = append(drivers, n)
		}
	}
	return drivers, nil
}

// NetworkDriversError explains why md's driver allowlist allows nothing
// because the metadata's network-drivers value is malformed; it is nil
// when the value is absent or valid. The error wraps ErrBadNetworkDrivers.
func NetworkDriversError(md *Metadata) error {
	if md == nil || !md.NetworkDriversSet {
		return nil
	}
	v, ok := md.MetaData["network-drivers"]
	if !ok {
		if v, ok = md.MetaData[KeyNetworkDrivers]; !ok {
			return nil
		}
	}
	_, err := parseNetworkDrivers(v)
	return err
}

// vmwareRedactList returns the keys the metadata asks to redact ("redact",
// or the legacy "cleanup-guestinfo"): a list or a single name. Names that
// cannot be keys are logged and left out.
func vmwareRedactList(m map[string]any, log *slog.Logger) []string {
	v, ok := m["redact"]
	if !ok {
		v = m["cleanup-guestinfo"]
	}
	var items []any
	switch t := v.(type) {
	case nil:
		return nil
	case []any:
		items = t
	default:
		items = []any{t}
	}
	var keys []string
	for i, e := range items {
		s, ok := e.(string)
		if !ok || !vmtools.ValidKey(s) {
			// Where and what, never the value: it is the metadata's.
			got := yamlx.Kind(e)
			if ok {
				got = fmt.Sprintf("a string of %d bytes", len(s))
			}
			log.Warn("ignoring a key to redact that is not a guestinfo key name", "item", i+1, "got", got)
			continue
		}
		keys = append(keys, s)
	}
	return keys
}

// redactGuestinfo sets every value key that had content and every key in
// asked to "---", and their encoding keys to one space. Failures are
// logged: the data was read, and a failed clean-up does not change it.
func redactGuestinfo(ctx context.Context, t guestinfoTool, raw *rawGuestinfo, asked []string, log *slog.Logger) {
	var keys []string
	seen := map[string]bool{}
	for _, k := range append(vmwarePresentKeys(raw), asked...) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		log.Info("redacting guestinfo key", "key", "guestinfo."+k, "tool", t.name)
		if err := vmtools.Set(ctx, t.r, t.name, k, guestinfoEmpty); err != nil {
			log.Error("redacting guestinfo key failed", "key", "guestinfo."+k, "err", err)
		}
		if err := vmtools.Set(ctx, t.r, t.name, k+".encoding", ""); err != nil {
			log.Error("redacting guestinfo key failed", "key", "guestinfo."+k+".encoding", "err", err)
		}
	}
}

// vmwarePresentKeys lists the value keys that had content, in read order.
func vmwarePresentKeys(raw *rawGuestinfo) []string {
	var keys []string
	for _, k := range guestinfoValueKeys {
		if _, ok := raw.data[k]; ok {
			keys = append(keys, k)
		}
	}
	return keys
}
