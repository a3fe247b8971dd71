package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

// sources stands for the source table's names (datasource.Names, which
// the datasource tests pin to Load).
var sources = []string{"smartos", "vmware", "nocloud"}

func write(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMissingFileGivesDefaults(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), sources)
	if err != nil {
		t.Fatal(err)
	}
	if c.Network.Owner != "seedkeeper" || !c.EventEnabled("boot") || !c.EventEnabled("hotplug") ||
		c.Sources != nil || c.HotplugDriversSet() ||
		time.Duration(c.Boot.DeviceWait) != 60*time.Second || time.Duration(c.VMware.NetworkWait) != 60*time.Second || c.VMware.IMCWait.Or(0) != 15*time.Second {
		t.Errorf("defaults = %+v", c)
	}
}

func TestLoad(t *testing.T) {
	c, err := Load(write(t, `
sources: [nocloud]
mdata: {transport: "serial:/dev/ttyS2"}
boot: {wait: 90s}
network: {owner: cloud-init}
events: {network: [boot]}
hotplug: {drivers: [virtio_net, e1000]}
vmware: {redact: true, network_wait: 5s, imc_wait: 40s}
`), sources)
	if err != nil {
		t.Fatal(err)
	}
	if c.Mdata.Transport != "serial:/dev/ttyS2" || time.Duration(c.Boot.Wait) != 90*time.Second ||
		c.Network.Owner != "cloud-init" || c.EventEnabled("hotplug") || !c.EventEnabled("boot-new-instance") ||
		!c.VMware.Redact || time.Duration(c.VMware.NetworkWait) != 5*time.Second || c.VMware.IMCWait.Or(0) != 40*time.Second || !c.HotplugDriversSet() {
		t.Errorf("loaded = %+v", c)
	}
	v, err := c.HotplugDriversValue()
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := v.([]any); !ok || len(l) != 2 || l[0] != "virtio_net" {
		t.Errorf("drivers = %#v", v)
	}
	c, err = Load(write(t, "boot: {wait: 30}\n"), sources)
	if err != nil || time.Duration(c.Boot.Wait) != 30*time.Second || time.Duration(c.Boot.DeviceWait) != 60*time.Second {
		t.Errorf("wait as seconds: %v %v %v", c.Boot.Wait, c.Boot.DeviceWait, err)
	}
	for in, want := range map[string]time.Duration{"boot: {device_wait: 0}\n": 0, "boot: {device_wait: 2.5s}\n": 2500 * time.Millisecond} {
		c, err = Load(write(t, in), sources)
		if err != nil || time.Duration(c.Boot.DeviceWait) != want {
			t.Errorf("%q: device_wait %v, %v; want %v", in, c.Boot.DeviceWait, err, want)
		}
	}
}

func TestLoadErrorsNameTheProblem(t *testing.T) {
	for in, want := range map[string]string{
		"hotplug: {driver: [e1000]}\n":       `:1:11: hotplug: unknown key "driver" (the keys in hotplug are drivers)`,
		"network: {owner: me}\n":             "network.owner: not one of",
		"events: {network: [reboot]}\n":      "events.network[0]: unknown event",
		"sources: [smartos, ec2]\n":          "sources[1]: unknown source",
		"boot: {wait: soon}\n":               ":1:14: boot.wait: not a duration",
		"boot: {device_wait: 1h}\n":          "boot.device_wait: out of range (want between 0s and 10m0s)",
		"metrics: {textfile_dir: var/lib}\n": "metrics.textfile_dir: not an absolute, clean path",
		"metrics: {textfile_dir: /a/../b}\n": "metrics.textfile_dir: not an absolute, clean path",
		"metrics: {textfile_dir: /}\n":       "metrics.textfile_dir: not an absolute, clean path",
		"network: [\n":                       "yaml:",
		"network: {owner: seedkeeper}\n\t":   "yaml:",
	} {
		p := write(t, in)
		c, err := Load(p, sources)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("Load(%q) err = %v, want it to name %s and %q", in, err, p, want)
		}
		if c == nil || c.Path != "" || c.HotplugDriversSet() {
			t.Errorf("Load(%q) on error returned %+v, want the defaults", in, c)
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add("hotplug: {drivers: [virtio_net]}\n")
	f.Add("boot: {wait: 1e400}\n")
	f.Add("events: {network: [boot, hotplug]}\n")
	f.Fuzz(func(t *testing.T, s string) {
		p := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(p, []byte(s), 0o644)
		c, err := Load(p, sources)
		if c == nil {
			t.Fatal("nil config")
		}
		if err == nil {
			c.HotplugDriversValue()
		}
	})
}

// --config /dev/zero once read without bound; a FIFO hung.
func TestLoadReadsOnlyRegularFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/zero", fifo} {
		c, err := Load(p, sources)
		if !errors.Is(err, fsutil.ErrNotRegular) {
			t.Errorf("Load(%s) = %v, want ErrNotRegular", p, err)
		}
		if c == nil || c.Path != "" {
			t.Errorf("Load(%s) did not give the defaults", p)
		}
	}
	big := write(t, "# "+strings.Repeat("x", MaxSize)+"\n")
	if _, err := Load(big, sources); !errors.Is(err, fsutil.ErrTooLarge) {
		t.Errorf("Load(a file over %d bytes) = %v, want ErrTooLarge", MaxSize, err)
	}
}

// Errors name the key, never the value.
func TestLoadErrorsDoNotQuote(t *testing.T) {
	for _, in := range []string{
		"network: {owner: SECRETMARKER}\n",
		"events: {network: [SECRETMARKER]}\n",
		"sources: [SECRETMARKER]\n",
		"boot: {wait: SECRETMARKER}\n",
		"sources: SECRETMARKER\n",
		"events: {network: SECRETMARKER}\n",
		"hotplug: SECRETMARKER\n",
	} {
		if _, err := Load(write(t, in), sources); err == nil || strings.Contains(err.Error(), "SECRETM") {
			t.Errorf("Load(%q) err = %v", in, err)
		}
	}
}

// The configuration part of the hostile-input corpus (testdata/hostile):
// every file gives the defaults or a configuration, never a crash, and no
// error quotes a secret.
func TestLoadHostileCorpus(t *testing.T) {
	files, err := filepath.Glob("../../testdata/hostile/config/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, p := range files {
		c, err := Load(p, sources)
		if c == nil {
			t.Errorf("Load(%s) = nil", p)
		}
		if err != nil && strings.Contains(err.Error(), "SECRETMARKER") {
			t.Errorf("Load(%s): error quotes the file: %v", p, err)
		}
	}
}

// Every duration key at its edges, through the one range check: the
// message names the key and the range, never the value.
func TestLoadDurationEdges(t *testing.T) {
	for in, want := range map[string]string{
		"boot: {wait: -1s}\n":              "boot.wait: out of range (want 0 (off) or between 1ms and 24h0m0s)",
		"boot: {wait: -1}\n":               "boot.wait: out of range",
		"boot: {wait: 999us}\n":            "boot.wait: out of range",
		"boot: {wait: 1e-10}\n":            "boot.wait: out of range",
		"boot: {wait: 24h0m0.001s}\n":      "boot.wait: out of range",
		"boot: {wait: 86401}\n":            "boot.wait: out of range",
		"boot: {wait: 1e300}\n":            "boot.wait: not a duration",
		"boot: {wait: .nan}\n":             "boot.wait: not a duration",
		"boot: {wait: [1s]}\n":             "boot.wait: want a duration such as 90s, not a list",
		"boot: {device_wait: -1ns}\n":      "boot.device_wait: out of range (want between 0s and 10m0s)",
		"boot: {device_wait: 10m0.1s}\n":   "boot.device_wait: out of range",
		"boot: {device_wait: 601}\n":       "boot.device_wait: out of range",
		"vmware: {network_wait: -1s}\n":    "vmware.network_wait: out of range (want between 0s and 10m0s)",
		"vmware: {network_wait: 11m}\n":    "vmware.network_wait: out of range",
		"vmware: {imc_wait: -1s}\n":        "vmware.imc_wait: out of range (want between 0s and 2m0s)",
		"vmware: {imc_wait: 121s}\n":       "vmware.imc_wait: out of range (want between 0s and 2m0s)",
		"boot: {wait: SECRETMARKER99}\n":   "boot.wait: not a duration",
		"boot: {wait: 2562048h}\n":         "boot.wait: not a duration",
		"boot: {device_wait: -1e400}\n":    "boot.device_wait: not a duration",
		"boot: {wait: \"-9223372036s\"}\n": "boot.wait: out of range",
	} {
		_, err := Load(write(t, in), sources)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "SECRETMARKER") {
			t.Errorf("Load(%q) = %v, want %q", in, err, want)
		}
	}
	for in, want := range map[string][2]time.Duration{
		"boot: {wait: 0}\n":                       {0, 60 * time.Second},
		"boot: {wait: 1ms, device_wait: 0}\n":     {time.Millisecond, 0},
		"boot: {wait: 24h, device_wait: 10m}\n":   {24 * time.Hour, 10 * time.Minute},
		"boot: {wait: 86400, device_wait: 600}\n": {24 * time.Hour, 10 * time.Minute},
	} {
		c, err := Load(write(t, in), sources)
		if err != nil || time.Duration(c.Boot.Wait) != want[0] || time.Duration(c.Boot.DeviceWait) != want[1] {
			t.Errorf("Load(%q) = %v, %v, %v; want %v", in, c.Boot.Wait, c.Boot.DeviceWait, err, want)
		}
	}
}

// The file's errors read as its author wrote it: every one, each at its
// line and column, in the file's keys and kinds, not the Go types that
// hold them (once "field driver not found in type struct { Drivers
// yaml.Node ... }", and only the first).
func TestLoadSaysEveryProblemInTheFilesWords(t *testing.T) {
	p := write(t, `sources: [smartos, ec2]
network:
  owner: me
hotplug:
  driver: [e1000]
vmware:
  redact: maybe
  network_wait: 11m
boot: [1s]
events: {network: boot}
bogus: 1
`)
	_, err := Load(p, sources)
	want := []string{
		p + ":1:20: sources[1]: unknown source (want one of smartos, vmware, nocloud)",
		p + ":3:10: network.owner: not one of seedkeeper, cloud-init",
		p + `:5:3: hotplug: unknown key "driver" (the keys in hotplug are drivers)`,
		p + ":7:11: vmware.redact: want true or false, not a string of 5 bytes",
		p + ":8:17: vmware.network_wait: out of range (want between 0s and 10m0s)",
		p + ":9:7: boot: want a mapping of wait, device_wait, not a list",
		p + ":10:19: events.network: want a list of names, not a string of 4 bytes",
		p + `:11:1: unknown key "bogus" (the keys at the top are sources, mdata, boot, network, events, hotplug, vmware, metrics)`,
	}
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("Load = %v, want a *FileError", err)
	}
	var got []string
	for _, pr := range fe.Problems {
		got = append(got, fmt.Sprintf("%s:%d:%d: %s", p, pr.Line, pr.Column, pr.Msg))
	}
	// The kinds are checked first, the values of a file of the right
	// kinds after: sort both sides to compare the sets.
	slices.Sort(got)
	slices.Sort(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range []string{"struct", "yaml.Node", "[]string", "!!"} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("the error speaks Go or YAML tags (%q): %v", bad, err)
		}
	}
	if _, ps := Read([]byte("network: {owner: cloud-init}\nboot: {wait: 90s}\n"), sources); ps != nil {
		t.Errorf("a good file: %+v", ps)
	}
}

// metrics.textfile_dir is read as given; nothing is written by default.
func TestMetricsTextfileDir(t *testing.T) {
	c, err := Load(write(t, "metrics: {textfile_dir: /var/lib/prometheus/node-exporter}\n"), sources)
	if err != nil || c.Metrics.TextfileDir != "/var/lib/prometheus/node-exporter" {
		t.Errorf("metrics.textfile_dir: %q, %v", c.Metrics.TextfileDir, err)
	}
	if Default().Metrics.TextfileDir != "" {
		t.Errorf("the default writes a textfile")
	}
}
