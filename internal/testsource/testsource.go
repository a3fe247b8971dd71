// Package testsource is a metadata source that only tests add to
// datasource's table (Add), to drive seedkeeper's flows through every
// duty a source can have. Its seed is a directory under the root,
// /testsrc: instance-id, network-config (cloud-init network config),
// drivers (the allowlist its metadata sets) and redact (present: the
// metadata counts as redacted once read). Each duty says what it did in
// the status (sourceduty.Extra.Duties) and in a file under DutyDir: the
// after-read, after-seed, after-network and end duties of a boot, and the
// watcher's run and links.
package testsource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/seed"
)

// The source's name, the platform it claims and its driver default.
const (
	Name     = "testsrc"
	Platform = "testplat"
	Driver   = "test_net"
	// SeedDir is its seed under the root, DutyDir where its duties
	// write what they did.
	SeedDir = "/testsrc"
	DutyDir = "/run/testsrc"
)

// Add adds the source to the end of datasource's table for the rest of
// the test.
func Add(t testing.TB) {
	t.Helper()
	t.Cleanup(sourceduty.Add(sourceduty.Spec{
		Name: Name, Platforms: []string{Platform}, Drivers: []string{Driver},
		DriversKey: "testsrc:network-drivers", RawNetwork: true,
		Detect: detect, Read: read, Duties: duties, Watcher: watcher,
	}))
}

func file(ctx context.Context, root, name string) ([]byte, error) {
	return fsutil.ReadFileIn(ctx, root, path.Join(SeedDir, name), fsutil.SmallFile)
}

func detect(ctx context.Context, root string) (bool, string, error) {
	if _, err := file(ctx, root, "instance-id"); err != nil {
		return false, "no " + SeedDir + "/instance-id", nil
	}
	return true, SeedDir + "/instance-id", nil
}

func read(ctx context.Context, root string) (any, error) {
	id, err := file(ctx, root, "instance-id")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", Name, datasource.ErrNoSource)
	}
	if err != nil {
		return nil, err
	}
	md := &datasource.Metadata{Source: Name, InstanceID: strings.TrimSpace(string(id)),
		Origin: datasource.Origin{Transport: "dir:" + SeedDir, Items: []string{"instance-id"}}}
	if b, err := file(ctx, root, "network-config"); err == nil {
		if md.Network, err = netcfg.Parse(b); err != nil {
			return nil, fmt.Errorf("%s: network-config: %w", Name, err)
		}
		md.NetworkConfigRaw = b
	}
	if b, err := file(ctx, root, "drivers"); err == nil {
		md.NetworkDriversSet = true
		md.NetworkDrivers = strings.Fields(strings.ReplaceAll(string(b), ",", " "))
	}
	return md, nil
}

// did records one duty: a line in the status and the file DutyDir/name.
func did(h *sourceduty.Host, x *sourceduty.Extra, name, line string) {
	if x != nil {
		x.Duties = append(x.Duties, name+": "+line)
	}
	if err := fsutil.WriteFileIn(string(h.Root), path.Join(DutyDir, name), []byte(line+"\n"), 0o644); err != nil {
		h.Log.Error(Name+": "+name, "err", err)
	}
}

func duties(m any, h *sourceduty.Host) sourceduty.Duties {
	md := m.(*datasource.Metadata)
	_, err := file(context.Background(), string(h.Root), "redact")
	return sourceduty.Duties{
		AfterRead: func(_ context.Context, x *sourceduty.Extra) {
			did(h, x, "after-read", fmt.Sprintf("instance %s, live %t", md.InstanceID, h.Live))
		},
		AfterSeed: func(ctx context.Context, x *sourceduty.Extra) {
			_, err := fsutil.ReadFileIn(ctx, string(h.Root), path.Join(seed.Dir, "meta-data"), fsutil.SmallFile)
			did(h, x, "after-seed", fmt.Sprintf("seed written: %t", err == nil))
		},
		AfterNetwork: func(_ context.Context, net *sourceduty.Net, x *sourceduty.Extra) {
			line := "not handled"
			if net != nil {
				line = fmt.Sprintf("%s (%s) owned %v links %v", net.Action, net.Reason, net.Owned, net.Links)
			}
			did(h, x, "after-network", line)
		},
		End: func(_ context.Context, outcome string, x *sourceduty.Extra) {
			did(h, x, "end", "outcome "+outcome)
		},
		Redacted: err == nil,
	}
}

// watcher runs beside every watch that follows a boot of the source.
func watcher(h *sourceduty.Host, b sourceduty.Boot, rec sourceduty.Recorder) sourceduty.Watcher {
	return &watch{h: h, boot: b}
}

type watch struct {
	h    *sourceduty.Host
	boot sourceduty.Boot
	mu   sync.Mutex
}

func (w *watch) Run(ctx context.Context) {
	did(w.h, nil, "watch-run", fmt.Sprintf("following the boot of %s (%s), duties %q", w.boot.Source, w.boot.Net.Action, w.boot.Extra.Duties))
	<-ctx.Done()
}

func (w *watch) SetLinks(names []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	did(w.h, nil, "watch-links", strings.Join(names, " "))
}
