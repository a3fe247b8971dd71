package image

import (
	"fmt"
	"strings"
	"testing"
)

// dpkgEntry is a dpkg status paragraph.
func dpkgEntry(pkg, status, version string) string {
	return "Package: " + pkg + "\nStatus: " + status + "\nPriority: optional\nVersion: " + version +
		"\nDescription: a package\n long description: with a colon\n .\n Version: 99.0 in a continuation line\n\n"
}

// VMware Tools before 12.4 reads disable_vmware_customization only in
// cloud.cfg: with the drop-in's line alone, a traditional spec is not
// handed over, which is a finding saying what and the fix; 12.4 and later
// read the drop-in; a later file setting it to true wins there; a package
// removed but not purged, or no dpkg database, is no Tools at all.
func TestCheckVMwareTools(t *testing.T) {
	const sibling = "Package: libvmtools0\nStatus: install ok installed\nVersion: 2:11.0.0-1\n\n"
	for _, tc := range []struct {
		name, dpkg string
		files      map[string]string
		v          Verdict
		want       []string
	}{
		{"no dpkg", "", nil, OK, []string{"open-vm-tools is not installed"}},
		{"12.2, the drop-in only", sibling + dpkgEntry("open-vm-tools", "install ok installed", "2:12.2.0-1+deb12u1"), nil, Finding, []string{
			"open-vm-tools 12.2 reads disable_vmware_customization in /etc/cloud/cloud.cfg alone", "only /etc/cloud/cloud.cfg.d sets it to false",
			"VMware Tools runs its own customization for a traditional spec",
			`add the line "disable_vmware_customization: false" to /etc/cloud/cloud.cfg`, "or install open-vm-tools 12.4 or later",
		}},
		{"12.2, cloud.cfg too", dpkgEntry("open-vm-tools", "install ok installed", "2:12.2.0-1+deb12u1"),
			map[string]string{CloudCfg: "users: [default]\ndisable_vmware_customization: false   # seedkeeper\n"}, OK,
			[]string{"open-vm-tools 12.2 reads disable_vmware_customization: false from /etc/cloud/cloud.cfg", "hands every customization spec to seedkeeper"}},
		{"12.2, cloud.cfg in YAML's other spelling", dpkgEntry("open-vm-tools", "hold ok installed", "2:12.2.0-1"),
			map[string]string{CloudCfg: "disable_vmware_customization: False\n"}, Finding, []string{"only /etc/cloud/cloud.cfg.d sets it to false"}},
		{"12.4, the drop-in", dpkgEntry("open-vm-tools", "install ok installed", "2:12.4.0-1ubuntu1"), nil, OK,
			[]string{"open-vm-tools 12.4 reads disable_vmware_customization: false from " + DropIn}},
		{"13.0, a later file sets true", dpkgEntry("open-vm-tools", "install ok installed", "13.0.0-1"),
			map[string]string{"/etc/cloud/cloud.cfg.d/99-local.cfg": "disable_vmware_customization: true\n"}, Finding, []string{
				"open-vm-tools 13.0 reads disable_vmware_customization: true from /etc/cloud/cloud.cfg.d/99-local.cfg",
				"set disable_vmware_customization: false in /etc/cloud/cloud.cfg.d/99-local.cfg, or remove the line",
			}},
		{"removed, not purged", dpkgEntry("open-vm-tools", "deinstall ok config-files", "2:12.2.0-1"), nil, OK, []string{"open-vm-tools is not installed"}},
		{"a version that does not read", dpkgEntry("open-vm-tools", "install ok installed", "snapshot~1"), nil, Note, []string{"does not read as MAJOR.MINOR"}},
	} {
		m := freshImage(t)
		if tc.dpkg != "" {
			m.write(dpkgStatus, tc.dpkg)
		}
		for p, s := range tc.files {
			m.write(p, s)
		}
		t.Run(tc.name, func(t *testing.T) { expectItem(t, check(t, m), "vmware-tools", tc.v, tc.want...) })
	}
}

// dpkg's database past its bounds, or with a line past its own, is an
// error of the item naming the file, not a guess.
func TestCheckVMwareToolsBadDatabase(t *testing.T) {
	m := freshImage(t)
	m.write(dpkgStatus, "Package: x\nDescription: "+strings.Repeat("a", maxDpkgLine)+"\n\n"+dpkgEntry("open-vm-tools", "install ok installed", "2:12.2.0-1"))
	it := expectItem(t, check(t, m), "vmware-tools", Error, dpkgStatus+": line 2: ")
	if strings.Contains(it.Found, "aaaa") {
		t.Errorf("the error quotes the file: %.80s", it.Found)
	}
}

// dpkgStatusOf is a dpkg status file of exactly n bytes, its lines
// ending in eol, that installs open-vm-tools 2:12.2.0-1 in its last
// paragraph, whose last line ends in eol only when terminated.
func dpkgStatusOf(t *testing.T, n int, eol string, terminated bool) string {
	t.Helper()
	head := "Package: filler" + eol + "Description: lines to fill the file" + eol
	tail := eol + "Package: open-vm-tools" + eol + "Status: install ok installed" + eol + "Version: 2:12.2.0-1"
	if terminated {
		tail += eol
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(head)
	line := func(size int) { b.WriteString(" " + strings.Repeat("a", size-1-len(eol)) + eol) }
	const chunk = 64 << 10
	left := n - len(head) - len(tail)
	for left > 2*chunk {
		line(chunk)
		left -= chunk
	}
	line(left / 2)
	line(left - left/2)
	b.WriteString(tail)
	if b.Len() != n {
		t.Fatalf("built %d bytes, want %d", b.Len(), n)
	}
	return b.String()
}

// The status file's bound is read as fsutil's are: a file of exactly
// the bound's bytes is read, one byte more is refused, whatever its line
// ends (CRLF counted as two bytes, a last line without its newline as
// what it is). The cases run at a bound of 1 MiB, and once at the real
// one (maxDpkgStatus) without -short.
func TestReadDpkgVersionBound(t *testing.T) {
	type bcase struct {
		name       string
		n          int
		eol        string
		terminated bool
		ok         bool
	}
	check := func(bound int, cases []bcase) {
		t.Helper()
		for _, tc := range cases {
			v, err := readDpkgVersionMax(strings.NewReader(dpkgStatusOf(t, tc.n, tc.eol, tc.terminated)), "open-vm-tools", bound)
			switch {
			case tc.ok && (err != nil || v != "2:12.2.0-1"):
				t.Errorf("%s (bound %d): %q, %v; want the version read", tc.name, bound, v, err)
			case !tc.ok && (err == nil || err.Error() != fmt.Sprintf("%s: more than %d bytes", dpkgStatus, bound)):
				t.Errorf("%s (bound %d): %q, %v; want it refused as more than %d bytes", tc.name, bound, v, err, bound)
			}
		}
	}
	const small = 1 << 20
	check(small, []bcase{
		{"exactly the bound, last line unterminated", small, "\n", false, true},
		{"exactly the bound", small, "\n", true, true},
		{"exactly the bound, CRLF", small, "\r\n", false, true},
		{"one byte over", small + 1, "\n", true, false},
		{"one byte over, last line unterminated", small + 1, "\n", false, false},
		{"one byte over, CRLF", small + 1, "\r\n", true, false},
	})
	if testing.Short() {
		t.Log("the cases at the real 64 MiB bound run without -short")
		return
	}
	check(maxDpkgStatus, []bcase{
		{"exactly the bound, CRLF", maxDpkgStatus, "\r\n", false, true},
		{"one byte over", maxDpkgStatus + 1, "\n", true, false},
	})
	if _, err := readDpkgVersion(strings.NewReader(dpkgStatusOf(t, maxDpkgStatus+1, "\n", false)), "open-vm-tools"); err == nil {
		t.Error("readDpkgVersion read a status file one byte over maxDpkgStatus")
	}
}

func FuzzReadDpkgVersion(f *testing.F) {
	f.Add(dpkgEntry("open-vm-tools", "install ok installed", "2:12.2.0-1"))
	f.Add("Package: open-vm-tools\nStatus: install ok installed\nVersion: 12.4\n")
	f.Add("Package:open-vm-tools\n Status: x\n\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := readDpkgVersion(strings.NewReader(s), "open-vm-tools")
		if err == nil && v != "" && !strings.Contains(s, v) {
			t.Fatalf("version %q is not in the file", v)
		}
		if v != "" && !strings.Contains(s, "open-vm-tools") {
			t.Fatalf("a version %q without the package", v)
		}
		major, minor, ok := debianUpstream(v)
		if ok && (major < 0 || minor < 0) {
			t.Fatalf("%q reads as %d.%d", v, major, minor)
		}
	})
}
