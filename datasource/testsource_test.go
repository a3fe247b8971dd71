package datasource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// testSource is a source that only tests register: what adding a source
// takes is this one value, its detect and read functions, and its entry
// in the table (RegisterTestSource). Its seed is a directory, /testsrc
// under the root: instance-id, network-config (cloud-init network config)
// and drivers (the allowlist its metadata sets).
var testSource = Source{
	Name:       "testsrc",
	Platforms:  []string{"testplat"},
	Drivers:    []string{"test_net"},
	DriversKey: "testsrc:network-drivers",
	RawNetwork: true,
	detect: func(ctx context.Context, o *Options) (Detection, error) {
		d := Detection{Candidate: Candidate{Source: "testsrc"}}
		if err := ctx.Err(); err != nil {
			return d, err
		}
		if _, err := testSourceFile(ctx, o, "instance-id"); err != nil {
			d.Reason = "no /testsrc/instance-id"
			return d, nil
		}
		d.Found, d.Reason = true, "/testsrc/instance-id"
		return d, nil
	},
	read: func(ctx context.Context, _ Detection, o *Options) (*Metadata, error) {
		id, err := testSourceFile(ctx, o, "instance-id")
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("testsrc: %w", ErrNoSource)
		}
		if err != nil {
			return nil, err
		}
		md := &Metadata{Source: "testsrc", Origin: Origin{Transport: "dir:/testsrc", Items: []string{"instance-id"}}}
		md.InstanceID = md.usableInstanceID(o.logger(), "instance-id", strings.TrimSpace(string(id)))
		if net, err := testSourceFile(ctx, o, "network-config"); err == nil {
			md.NetworkConfigRaw = net
			if md.Network, err = netcfg.Parse(net); err != nil {
				md.warn(o.logger(), fmt.Sprintf("network-config dropped: %v", err))
				md.Network, md.NetworkConfigRaw = nil, nil
			}
		}
		if v, err := testSourceFile(ctx, o, "drivers"); err == nil {
			md.NetworkDriversSet = true
			md.NetworkDrivers, _ = parseNetworkDrivers(strings.TrimSpace(string(v)))
		}
		return md, nil
	},
}

func testSourceFile(ctx context.Context, o *Options, name string) ([]byte, error) {
	return fsutil.ReadFile(ctx, sysroot.Root(o.Root).Path("/testsrc/"+name), fsutil.SmallFile)
}

// RegisterTestSource adds testSource, changed by edit when not nil, to
// the end of the table for the rest of the test (the external tests reach
// it from here), and returns its name and the platform it claims.
func RegisterTestSource(t testing.TB, edit func(*Source)) (name, platform string) {
	t.Helper()
	saved := sources
	s := testSource
	if edit != nil {
		edit(&s)
	}
	sources = append(slices.Clone(sources), s)
	t.Cleanup(func() { sources = saved })
	return testSource.Name, testSource.Platforms[0]
}
