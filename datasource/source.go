package datasource

import (
	"context"
	"fmt"
	"slices"

	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
)

// A Source is one metadata source, described once. Everything else that
// must agree with the set of sources derives from this table: the names
// the configuration's sources key and --source accept (Names), the
// detection order (Names again), the default hotplug driver allowlist of
// each platform (PlatformSource), which metadata key sets the allowlist
// (DriversKey) and what cloud-init is handed as network-config
// (RawNetwork), what kind of instance ID it reports (DerivedID), and
// what the flows do for it beyond its read (its duties). Adding a source
// is one file that defines its Source and its detect and read functions,
// and one entry in sources.
type Source struct {
	// Name names the source in the configuration, on the command line,
	// in logs and status, and in Metadata.Source.
	Name string
	// Platforms are the hypervisor families (as Platform names them)
	// whose guests get their metadata from this source, and Drivers the
	// default hotplug driver allowlist on them. A platform is claimed by
	// one source; a source whose guests run on a platform another one
	// claims (a config drive on KVM) has none, and its NICs get that
	// platform's default.
	Platforms []string
	Drivers   []string
	// DriversKey is the metadata key through which the metadata sets
	// the driver allowlist (Metadata.NetworkDrivers).
	DriversKey string
	// RawNetwork says that the source's network document
	// (Metadata.NetworkConfigRaw) is cloud-init network config, handed
	// to cloud-init as it is when cloud-init owns the network. When it
	// is false, the document is in the platform's own format and
	// cloud-init is handed Metadata.Network as version 1 instead.
	RawNetwork bool
	// DerivedID says that the instance ID the source reports may not be
	// an identity: derived from the seed's content (the SHA-1 of
	// user-data and network-config, as Proxmox makes it) or cloud-init's
	// default for a seed that gives none. The instance ID of a source
	// without it is always one someone chose.
	DerivedID bool
	// Seeds says that the source is read from seeds (directories, disks)
	// that Metadata.Origin.Transport lists, comma-separated, so that a
	// seed that appears later is told from the ones read before.
	Seeds bool

	// detect makes the source's cheap checks (see Detect): a source that
	// is not here is a Detection with Found false and the reason; the
	// error is for checks that could not be made.
	detect func(ctx context.Context, o *Options) (Detection, error)
	// read reads the source, going on from what detect found in d (a
	// zero d: look again).
	read func(ctx context.Context, d Detection, o *Options) (*Metadata, error)

	// What the source does in seedkeeper's flows beyond its read
	// (internal/sourceduty): duties binds its duties in a boot to the
	// metadata read, watcher makes what runs beside the watch that
	// follows a boot that read it. nil: nothing.
	duties  func(md *Metadata, h *sourceduty.Host) sourceduty.Duties
	watcher func(h *sourceduty.Host, b sourceduty.Boot, rec sourceduty.Recorder) sourceduty.Watcher
}

func init() {
	sourceduty.Set(func(md any, h *sourceduty.Host) sourceduty.Duties {
		m, _ := md.(*Metadata)
		if m == nil {
			return sourceduty.Duties{}
		}
		if s, ok := Lookup(m.Source); ok && s.duties != nil {
			return s.duties(m, h)
		}
		return sourceduty.Duties{}
	}, func(h *sourceduty.Host, b sourceduty.Boot, rec sourceduty.Recorder) sourceduty.Watcher {
		if s, ok := Lookup(b.Source); ok && s.watcher != nil {
			return s.watcher(h, b, rec)
		}
		return nil
	}, addSpec)
}

// addSpec adds a source defined outside the package (only tests do) at
// the end of the table, until remove is called.
func addSpec(sp sourceduty.Spec) (remove func()) {
	s := Source{Name: sp.Name, Platforms: sp.Platforms, Drivers: sp.Drivers, DriversKey: sp.DriversKey,
		RawNetwork: sp.RawNetwork, DerivedID: sp.DerivedID, Seeds: sp.Seeds, watcher: sp.Watcher,
		detect: func(ctx context.Context, o *Options) (Detection, error) {
			found, reason, err := sp.Detect(ctx, o.Root)
			return Detection{Candidate: Candidate{Source: sp.Name, Found: found, Reason: reason}}, err
		},
		read: func(ctx context.Context, _ Detection, o *Options) (*Metadata, error) {
			md, err := sp.Read(ctx, o.Root)
			m, _ := md.(*Metadata)
			if err == nil && m == nil {
				err = fmt.Errorf("%s: read returned no metadata", sp.Name)
			}
			return m, err
		},
	}
	if sp.Duties != nil {
		s.duties = func(md *Metadata, h *sourceduty.Host) sourceduty.Duties { return sp.Duties(md, h) }
	}
	saved := sources
	sources = append(slices.Clone(sources), s)
	return func() { sources = saved }
}

// sources is the table, in detection order: cheap, positive checks first.
// SmartOS is first because its checks (a zone socket, the DMI product
// name) are the most specific; VMware's is the DMI product name; NoCloud's
// look at the command line, the SMBIOS serial, seed directories and disk
// labels, and its disk labels are the most likely to be found elsewhere.
var sources = []Source{smartOS, vmware, noCloud}

// Names returns the source names in detection order: what the
// configuration's sources key and --source accept, and the default order.
func Names() []string {
	names := make([]string, len(sources))
	for i, s := range sources {
		names[i] = s.Name
	}
	return names
}

// Lookup returns the source named name. Its lists are copies: changing
// them does not change the table.
func Lookup(name string) (Source, bool) {
	i := slices.IndexFunc(sources, func(s Source) bool { return s.Name == name })
	if i < 0 {
		return Source{}, false
	}
	s := sources[i]
	s.Platforms, s.Drivers = slices.Clone(s.Platforms), slices.Clone(s.Drivers)
	return s, true
}

// ValidSource reports whether s names a source.
func ValidSource(s string) bool {
	_, ok := Lookup(s)
	return ok
}

// lookup is Lookup with an error that lists the names.
func lookup(name string) (Source, error) {
	s, ok := Lookup(name)
	if !ok {
		return Source{}, fmt.Errorf("unknown source %q (want one of %v)", name, Names())
	}
	return s, nil
}

// PlatformSource returns the source whose guests run on platform (a name
// Platform returns): its Drivers are the platform's default hotplug
// driver allowlist, its DriversKey the metadata key that sets it there.
// False when no source claims the platform. Its lists are copies.
func PlatformSource(platform string) (Source, bool) {
	s, ok := platformSource(platform)
	if !ok {
		return Source{}, false
	}
	return Lookup(s.Name)
}

// platformDrivers is the default hotplug driver allowlist on platform.
func platformDrivers(platform string) ([]string, bool) {
	s, ok := PlatformSource(platform)
	return s.Drivers, ok
}

func platformSource(platform string) (Source, bool) {
	if platform == "" {
		return Source{}, false
	}
	for _, s := range sources {
		if slices.Contains(s.Platforms, platform) {
			return s, true
		}
	}
	return Source{}, false
}
