package datasource_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/seed"
)

// A source added to the table is a source everywhere: detected in order,
// read by name, accepted and defaulted by the configuration, given its
// platform's default allowlist and its own allowlist key, and its
// network-config handed to cloud-init as its table entry says. Nothing
// but the table entry (RegisterTestSource) tells the rest of seedkeeper
// about it.
func TestAddedSourceIsEverywhere(t *testing.T) {
	name, platform := datasource.RegisterTestSource(t, nil)
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const netDoc = "version: 2\nethernets:\n  lan:\n    match: {macaddress: \"52:54:00:12:34:56\"}\n    dhcp4: true\n"
	write("testsrc/instance-id", "iid-testsrc\n")
	write("testsrc/network-config", netDoc)
	write("testsrc/drivers", "test_net,virtio_net\n")

	// The detection order and the names.
	if names := datasource.Names(); names[len(names)-1] != name || !datasource.ValidSource(name) {
		t.Fatalf("Names() = %v, want %q last", names, name)
	}
	found, cands, err := datasource.Detect(context.Background(), datasource.Options{Root: root})
	if err != nil || found.Source != name || !found.Found || len(cands) != len(datasource.Names()) {
		t.Fatalf("Detect = %+v, %+v, %v; want %s found after every other source was tried", found, cands, err, name)
	}
	md, err := datasource.Read(context.Background(), name, datasource.Options{Root: root})
	if err != nil || md.InstanceID != "iid-testsrc" || md.Network == nil {
		t.Fatalf("Read = %+v, %v", md, err)
	}

	// The configuration's sources key.
	if d := config.Default().Sources; d != nil {
		t.Errorf("config default sources %v, want nil: every source, in the table's order", d)
	}
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfgPath, []byte("sources: ["+name+"]\nnetwork: {owner: cloud-init}\n"), 0o644)
	cfg, err := config.Load(cfgPath, datasource.Names())
	if err != nil || !slices.Equal(cfg.Sources, []string{name}) {
		t.Fatalf("config with sources [%s]: %v, %v", name, cfg.Sources, err)
	}

	// The allowlist: the platform's default, the metadata's key.
	if a := hotplug.ResolveAllowlist(hotplug.Setting{}, hotplug.Setting{}, platform); a.String() != "test_net (from default for "+platform+")" {
		t.Errorf("default allowlist on %s: %v", platform, a)
	}
	e := agent.Env{Root: sysroot.Root(root), Config: cfg}
	if a := e.Allowlist(md); a.String() != "test_net,virtio_net (from metadata testsrc:network-drivers)" {
		t.Errorf("allowlist from the metadata: %v", a)
	}

	// Boot: the source is read, and with network.owner cloud-init its
	// network-config goes into the seed as it is (RawNetwork).
	st, err := agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkOff})
	if err != nil || st.Source != name {
		t.Fatalf("Boot = %+v, %v", st, err)
	}
	got, err := os.ReadFile(filepath.Join(root, seed.Dir, seed.NetworkConfigFile))
	if err != nil || string(got) != netDoc {
		t.Errorf("seed network-config = %q, %v; want the source's document as it is", got, err)
	}
}

// A source whose network document is not cloud-init's (RawNetwork false)
// has cloud-init handed the parsed configuration as version 1 instead.
func TestAddedSourceNotRawNetwork(t *testing.T) {
	name, _ := datasource.RegisterTestSource(t, func(s *datasource.Source) { s.RawNetwork = false })
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "testsrc"), 0o755)
	os.WriteFile(filepath.Join(root, "testsrc/instance-id"), []byte("iid-testsrc\n"), 0o644)
	os.WriteFile(filepath.Join(root, "testsrc/network-config"),
		[]byte("version: 2\nethernets:\n  lan:\n    match: {macaddress: \"52:54:00:12:34:56\"}\n    dhcp4: true\n"), 0o644)
	cfg := config.Default()
	cfg.Sources, cfg.Network.Owner = []string{name}, "cloud-init"
	if _, err := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root), Config: cfg}, agent.BootOptions{Network: agent.NetworkOff}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, seed.Dir, seed.NetworkConfigFile))
	if err != nil || !strings.HasPrefix(string(got), "version: 1\n") || !strings.Contains(string(got), "52:54:00:12:34:56") {
		t.Errorf("seed network-config = %q, %v; want the configuration as version 1", got, err)
	}
}

// Every name a person can give (the configuration's sources, fetch
// --source) is a name of the table, and the other way round.
func TestConfigAcceptsExactlyTheTable(t *testing.T) {
	dir := t.TempDir()
	for _, name := range append(datasource.Names(), "ec2", "SmartOS", "") {
		p := filepath.Join(dir, "config.yaml")
		os.WriteFile(p, []byte("sources: [\""+name+"\"]\n"), 0o644)
		_, err := config.Load(p, datasource.Names())
		if valid := datasource.ValidSource(name); (err == nil) != valid {
			t.Errorf("sources: [%q]: err %v, but ValidSource = %v", name, err, valid)
		}
		if err != nil && !strings.Contains(err.Error(), strings.Join(datasource.Names(), ", ")) {
			t.Errorf("sources: [%q]: %v does not list the table's names", name, err)
		}
	}
}
