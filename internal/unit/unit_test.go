package unit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

const unitText = "[Unit]\nDescription=test\n[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"

// A case is a root made of files and links, and what systemd makes of a
// unit in it.
type unitCase struct {
	name  string
	files map[string]string // system path -> content
	links map[string]string // system path -> target
	unit  string
	live  bool
	want  string // not-found, masked, enabled, disabled
	// noOracle says why systemctl --root is not asked: it answers "is
	// the unit enabled by its [Install] section", while boot starts
	// whatever a link wants.
	noOracle string
}

const (
	lib   = "/lib/systemd/system/"
	etc   = "/etc/systemd/system/"
	wants = "/etc/systemd/system/multi-user.target.wants/"
)

var unitCases = []unitCase{
	{name: "not installed", unit: "a.service", want: "not-found"},
	{name: "installed, no link", files: map[string]string{lib + "a.service": unitText}, unit: "a.service", want: "disabled"},
	{name: "enabled", files: map[string]string{lib + "a.service": unitText}, links: map[string]string{wants + "a.service": lib + "a.service"}, unit: "a.service", want: "enabled"},
	{
		// Boot used to detect NetworkManager on such a root while
		// image check said networkd: masked wins over the leftover link.
		name:  "masked with a leftover .wants link",
		files: map[string]string{lib + "a.service": unitText},
		links: map[string]string{wants + "a.service": lib + "a.service", etc + "a.service": "/dev/null"},
		unit:  "a.service", want: "masked",
	},
	{
		// systemctl mask writes /dev/null; an image builder's own
		// relative link masks the same, even with no /dev in the image.
		name:  "masked by a relative link to /dev/null",
		files: map[string]string{lib + "a.service": unitText},
		links: map[string]string{wants + "a.service": lib + "a.service", etc + "a.service": "../../../dev/null"},
		unit:  "a.service", want: "masked",
	},
	{name: "masked by a link to a link to /dev/null", files: map[string]string{lib + "a.service": unitText}, links: map[string]string{wants + "a.service": lib + "a.service", etc + "a.service": "/etc/masked", "/etc/masked": "/dev/null"}, unit: "a.service", want: "masked"},
	{name: "a .wants link to /dev/null by a relative path", files: map[string]string{lib + "a.service": unitText}, links: map[string]string{wants + "a.service": "../../../../dev/null"}, unit: "a.service", want: "disabled", noOracle: "systemctl counts the link; PID 1 ignores a dependency masked by /dev/null"},
	{name: "masked by an empty file", files: map[string]string{lib + "a.service": unitText, etc + "a.service": ""}, links: map[string]string{wants + "a.service": lib + "a.service"}, unit: "a.service", want: "masked"},
	{name: "a .wants link whose target is elsewhere", files: map[string]string{lib + "a.service": unitText}, links: map[string]string{wants + "a.service": "/usr/lib/systemd/system/a.service"}, unit: "a.service", want: "enabled"},
	{name: "a .wants link to /dev/null", files: map[string]string{lib + "a.service": unitText}, links: map[string]string{wants + "a.service": "/dev/null"}, unit: "a.service", want: "disabled", noOracle: "systemctl counts the link; PID 1 ignores a dependency masked by /dev/null"},
	{name: "a regular file in .wants", files: map[string]string{lib + "a.service": unitText, wants + "a.service": unitText}, unit: "a.service", want: "disabled"},
	{name: "a .requires link", files: map[string]string{lib + "a.service": unitText}, links: map[string]string{"/etc/systemd/system/sysinit.target.requires/a.service": lib + "a.service"}, unit: "a.service", want: "enabled"},
	{
		name:  "wanted under an alias",
		files: map[string]string{lib + "a.service": unitText + "Alias=b.service\n"},
		links: map[string]string{etc + "b.service": lib + "a.service", wants + "b.service": etc + "b.service"},
		unit:  "a.service", want: "enabled",
	},
	{
		// systemctl edit --full leaves the copy in /etc; the alias
		// link made by enable still leads to the vendor's file.
		name:  "wanted under an alias that leads to the file a copy in /etc overrides",
		files: map[string]string{lib + "a.service": unitText + "Alias=b.service\n", etc + "a.service": unitText + "Alias=b.service\n"},
		links: map[string]string{etc + "b.service": lib + "a.service", wants + "b.service": etc + "b.service"},
		unit:  "a.service", want: "enabled",
	},
	{name: "a copy in /etc overrides /lib", files: map[string]string{lib + "a.service": unitText, etc + "a.service": unitText}, links: map[string]string{wants + "a.service": etc + "a.service"}, unit: "a.service", want: "enabled"},
	{name: "a mask in /lib loses to a file in /etc", files: map[string]string{etc + "a.service": unitText}, links: map[string]string{lib + "a.service": "/dev/null", wants + "a.service": etc + "a.service"}, unit: "a.service", want: "enabled"},
	{name: "a runtime mask on a live root", files: map[string]string{lib + "a.service": unitText}, links: map[string]string{wants + "a.service": lib + "a.service", "/run/systemd/system/a.service": "/dev/null"}, unit: "a.service", live: true, want: "masked"},
	{name: "a runtime mask in an image", files: map[string]string{lib + "a.service": unitText}, links: map[string]string{wants + "a.service": lib + "a.service", "/run/systemd/system/a.service": "/dev/null"}, unit: "a.service", want: "enabled", noOracle: "systemctl --root reads the image's /run"},
	{name: "wanted by a generator on a live root", files: map[string]string{lib + "a.service": unitText}, links: map[string]string{"/run/systemd/generator/multi-user.target.wants/a.service": lib + "a.service"}, unit: "a.service", live: true, want: "enabled", noOracle: "systemctl --root does not read generator output"},
	{name: "merged /usr", files: map[string]string{"/usr/lib/systemd/system/a.service": unitText}, links: map[string]string{"/lib": "usr/lib", wants + "a.service": lib + "a.service"}, unit: "a.service", want: "enabled"},
	{name: "a split /usr: a unit in /lib outranks a mask in /usr/lib", files: map[string]string{lib + "a.service": unitText, "/usr/lib/systemd/system/a.service": ""}, links: map[string]string{wants + "a.service": lib + "a.service"}, unit: "a.service", want: "enabled"},
	{name: "a split /usr: a mask in /lib outranks a unit in /usr/lib", files: map[string]string{lib + "a.service": "", "/usr/lib/systemd/system/a.service": unitText}, links: map[string]string{wants + "a.service": "/usr/lib/systemd/system/a.service"}, unit: "a.service", want: "masked"},
	{name: "a vendor .wants link", files: map[string]string{lib + "a.service": unitText}, links: map[string]string{lib + "multi-user.target.wants/a.service": "../a.service"}, unit: "a.service", want: "enabled", noOracle: "systemctl says disabled; PID 1 starts it"},
	{name: "a template instance", files: map[string]string{lib + "t@.service": unitText}, links: map[string]string{wants + "t@x.service": lib + "t@.service"}, unit: "t@x.service", want: "enabled"},
	{name: "another instance of the template is not an alias", files: map[string]string{lib + "t@.service": unitText}, links: map[string]string{etc + "t@y.service": lib + "t@.service", wants + "t@y.service": lib + "t@.service"}, unit: "t@x.service", want: "disabled"},
	{name: "an instance wanted under its template's alias", files: map[string]string{lib + "t@.service": unitText + "Alias=u@.service\n"}, links: map[string]string{etc + "u@.service": lib + "t@.service", wants + "u@x.service": lib + "t@.service"}, unit: "t@x.service", want: "enabled", noOracle: "systemctl is-enabled looks for the links of the [Install] section only; PID 1 loads u@x.service as t@x.service"},
	{name: "a link that leads nowhere hides the unit in /lib", files: map[string]string{lib + "a.service": unitText}, links: map[string]string{etc + "a.service": "/nowhere/a.service", wants + "a.service": lib + "a.service"}, unit: "a.service", want: "not-found"},
	{name: "a link that leads nowhere is no unit", links: map[string]string{etc + "a.service": "/nowhere/a.service", wants + "a.service": etc + "a.service"}, unit: "a.service", want: "not-found"},
}

func (c unitCase) root(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range c.files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range c.links {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func summary(st State) string {
	switch {
	case st.File == "":
		return "not-found"
	case st.Masked:
		return "masked"
	case st.Enabled:
		return "enabled"
	}
	return "disabled"
}

func TestLookup(t *testing.T) {
	for _, c := range unitCases {
		t.Run(c.name, func(t *testing.T) {
			st := Lookup(Root{Dir: c.root(t), Live: c.live}, c.unit)
			if got := summary(st); got != c.want {
				t.Errorf("%s is %s (%s), want %s", c.unit, got, st.Why, c.want)
			}
			if st.Name != c.unit || !strings.HasPrefix(st.Why, c.unit+" ") {
				t.Errorf("state %+v does not name the unit", st)
			}
		})
	}
}

// TestIntegrationLookupAgreesWithSystemctl asks systemd's own offline
// view (systemctl --root is-enabled) about every case where it answers
// the question boot asks.
func TestIntegrationLookupAgreesWithSystemctl(t *testing.T) {
	testenv.Integration(t)
	if _, err := exec.LookPath("systemctl"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and systemctl: run `sudo make test` (scripts/test-deps.sh installs systemd)")
	}
	for _, c := range unitCases {
		if c.noOracle != "" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			dir := c.root(t)
			cmd := exec.Command("systemctl", "--root="+dir, "is-enabled", c.unit)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, _ := cmd.Output()
			s := strings.TrimSpace(string(out))
			if s == "" && !strings.Contains(stderr.String(), "No such file or directory") {
				// Not an answer: systemctl failed for another reason.
				t.Fatalf("systemctl says nothing: %s", strings.TrimSpace(stderr.String()))
			}
			var oracle string
			switch s {
			case "enabled", "enabled-runtime":
				oracle = "enabled"
			case "masked", "masked-runtime":
				oracle = "masked"
			case "disabled":
				oracle = "disabled"
			case "", "not-found":
				oracle = "not-found"
			default:
				t.Fatalf("systemctl says %q", s)
			}
			if got := summary(Lookup(Root{Dir: dir, Live: c.live}, c.unit)); got != oracle {
				t.Errorf("Lookup says %s, systemctl %s", got, oracle)
			}
		})
	}
}

// The listings of one lookup share one budget: unit directories that
// each stay under the bound of one listing but pass it together are
// refused with an error that names the bound, and the unit is not said
// to be enabled; so is one directory over it. Under the budget the same
// root is judged as before.
func TestLookupBoundsAllListingsTogether(t *testing.T) {
	old := maxLookupEntries
	t.Cleanup(func() { maxLookupEntries = old })
	maxLookupEntries = 100

	root := t.TempDir()
	mk := func(sys, content string) {
		p := filepath.Join(root, sys)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk(lib+"a.service", unitText)
	os.MkdirAll(filepath.Join(root, wants), 0o755)
	if err := os.Symlink(lib+"a.service", filepath.Join(root, wants, "a.service")); err != nil {
		t.Fatal(err)
	}
	r := Root{Dir: root}
	if st := Lookup(r, "a.service"); !st.Enabled || st.Err != nil {
		t.Fatalf("under the budget: %+v; want enabled", st)
	}

	// 60 entries in each of two directories: each under 100, 120 in all.
	for i := range 60 {
		mk(fmt.Sprintf("%sfiller%02d.service", etc, i), unitText)
		mk(fmt.Sprintf("%sfiller%02d.service", lib, i), unitText)
	}
	st := Lookup(r, "a.service")
	if st.Err == nil || !errors.Is(st.Err, fsutil.ErrTooManyEntries) || st.Enabled ||
		!strings.Contains(st.Why, "the unit directories hold more than 100 entries in all (/lib/systemd/system") {
		t.Errorf("over the budget in all: %+v; want an error naming the bound, not enabled", st)
	}

	// One directory over the budget alone.
	maxLookupEntries = 50
	if st := Lookup(r, "a.service"); st.Err == nil || st.Enabled || !strings.Contains(st.Why, "more than 50 entries in all (/etc/systemd/system") {
		t.Errorf("one directory over the budget: %+v; want an error naming it", st)
	}
}
