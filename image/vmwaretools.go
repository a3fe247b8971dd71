package image

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/vmtools"
)

// What VMware Tools' deployPkg plugin reads to decide whether it hands a
// traditional customization spec to the guest's agent (seedkeeper) or
// runs its own customization beside it (open-vm-tools
// libDeployPkg/linuxDeploymentUtilities.c, IsCloudInitCustomizationEnabled;
// docs/cloud-init.md, "VMware guest customization").

// dpkgStatus is dpkg's database of installed packages.
const dpkgStatus = "/var/lib/dpkg/status"

// maxDpkgStatus bounds the read of dpkgStatus (a full system's is a few
// MiB), read a line at a time: as fsutil's bounds, a file of exactly
// maxDpkgStatus bytes is read and a longer one refused. maxDpkgLine
// bounds a line.
const (
	maxDpkgStatus = 64 << 20
	maxDpkgLine   = 1 << 20
)

// toolsFlag is the key's value in one file as Tools reads it: "true",
// "false", or "" when unset or the file cannot be read (Tools skips it).
func (in *inspection) toolsFlag(sys string) string {
	b, err := in.readSmall(sys)
	if err != nil {
		return ""
	}
	return vmtools.CustomizationFlag(b)
}

// toolsFlagFile is the file whose value Tools takes, and the value
// ("", "" when no file sets it): with cfgD (open-vm-tools 12.4 and
// later), the regular *.cfg files of cloud.cfg.d from the last in name
// order to the first (a link is skipped: scandir's type), then
// cloud.cfg; before 12.4 cloud.cfg alone.
func (in *inspection) toolsFlagFile(cfgD bool) (file, value string) {
	if cfgD {
		ents, _ := fsutil.ReadDirIn(string(in.root), CloudCfgD)
		var names []string
		for _, e := range ents {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".cfg") && e.Name() != ".cfg" {
				names = append(names, e.Name())
			}
		}
		slices.Sort(names)
		for i := len(names) - 1; i >= 0; i-- {
			p := path.Join(CloudCfgD, names[i])
			if v := in.toolsFlag(p); v != "" {
				return p, v
			}
		}
	}
	if v := in.toolsFlag(CloudCfg); v != "" {
		return CloudCfg, v
	}
	return "", ""
}

// dpkgVersion is the version of pkg installed in the image, read from
// dpkg's status file a paragraph at a time: "" when the package is not
// installed or there is no dpkg database (an rpm image: not read).
func (in *inspection) dpkgVersion(pkg string) (string, error) {
	f, err := fsutil.OpenIn(string(in.root), dpkgStatus, fsutil.Regular)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	return readDpkgVersion(f, pkg)
}

// readDpkgVersion reads a dpkg status file for the version of pkg whose
// Status says it is installed ("" when none). An error says where the
// file is past its bounds, never quoting it.
func readDpkgVersion(r io.Reader, pkg string) (string, error) {
	return readDpkgVersionMax(r, pkg, maxDpkgStatus)
}

// readDpkgVersionMax is readDpkgVersion with the file's bound as given.
func readDpkgVersionMax(r io.Reader, pkg string, max int) (string, error) {
	sc := bufio.NewScanner(io.LimitReader(r, int64(max)+1))
	sc.Buffer(make([]byte, 0, 64<<10), maxDpkgLine)
	// read counts the bytes of the lines scanned as they are in the
	// file: a CRLF is two, a last line without its newline has none.
	read, line := 0, 0
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		n, tok, err := bufio.ScanLines(data, atEOF)
		read += n
		return n, tok, err
	})
	var name, status, version string
	end := func() string {
		defer func() { name, status, version = "", "", "" }()
		f := strings.Fields(status)
		if name == pkg && len(f) == 3 && f[2] == "installed" {
			return version
		}
		return ""
	}
	for sc.Scan() {
		line++
		if read > max {
			return "", fmt.Errorf("%s: more than %d bytes", dpkgStatus, max)
		}
		l := sc.Text()
		if strings.TrimSpace(l) == "" {
			if v := end(); v != "" {
				return v, nil
			}
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
			continue // a continuation line
		}
		switch v = strings.TrimSpace(v); k {
		case "Package":
			name = v
		case "Status":
			status = v
		case "Version":
			version = v
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s: line %d: %w", dpkgStatus, line+1, err)
	}
	return end(), nil
}

// debianUpstream reads major and minor from a Debian version
// ([EPOCH:]UPSTREAM[-REVISION]): ok is false when UPSTREAM does not
// begin with two dot-separated numbers.
func debianUpstream(v string) (major, minor int, ok bool) {
	if _, rest, found := strings.Cut(v, ":"); found {
		v = rest
	}
	f := strings.SplitN(v, ".", 3)
	if len(f) < 2 {
		return 0, 0, false
	}
	num := func(s string) (int, bool) {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		n, err := strconv.Atoi(s[:i])
		return n, err == nil && i > 0 && i < 10
	}
	major, ok1 := num(f[0])
	minor, ok2 := num(f[1])
	return major, minor, ok1 && ok2 && len(f[0]) == len(strconv.Itoa(major))
}

// checkVMwareTools says whether VMware Tools in the image hands a
// traditional customization spec to seedkeeper: open-vm-tools before
// 12.4 reads disable_vmware_customization in /etc/cloud/cloud.cfg alone,
// so the drop-in's line in cloud.cfg.d does not count, and Tools runs
// its own customization beside seedkeeper (network files of its own and
// a reboot in the middle of the first boot); 12.4 and later read the
// last file of cloud.cfg.d that sets it first. Only dpkg's database is
// read: on an rpm image Tools' version is not known here.
func checkVMwareTools(in *inspection) Item {
	it := Item{Verdict: OK}
	v, err := in.dpkgVersion("open-vm-tools")
	switch {
	case err != nil:
		it.Verdict, it.Found, it.Paths = Error, err.Error(), []string{dpkgStatus}
		return it
	case v == "":
		it.Found = "open-vm-tools is not installed (dpkg's database; an rpm image is not read)"
		it.Clone = "no VMware customization spec reaches the image through VMware Tools"
		return it
	}
	it.Paths = []string{dpkgStatus}
	major, minor, ok := debianUpstream(v)
	if !ok {
		it.Verdict = Note
		it.Found = "open-vm-tools is installed, in a version that does not read as MAJOR.MINOR"
		it.Clone = "whether VMware Tools reads disable_vmware_customization in " + CloudCfgD + " (12.4 and later) or in " + CloudCfg + " alone is not known"
		return it
	}
	newer := major > 12 || major == 12 && minor >= 4
	ver := fmt.Sprintf("open-vm-tools %d.%d", major, minor)
	file, val := in.toolsFlagFile(newer)
	if file != "" {
		it.Paths = append(it.Paths, file)
	}
	if val == "false" {
		it.Found = fmt.Sprintf("%s reads disable_vmware_customization: false from %s", ver, file)
		it.Clone = "VMware Tools hands every customization spec to seedkeeper and runs no customization of its own"
		return it
	}
	it.Verdict = Finding
	it.Clone = "VMware Tools runs its own customization for a traditional spec (vCenter's usual kind): it writes the distribution's network files for the spec's NICs beside seedkeeper's and reboots the VM in the middle of the first boot; a spec of the cloud-init kind is still handed to seedkeeper"
	_, dropIn := in.toolsFlagFile(true)
	switch {
	case !newer && dropIn == "false":
		it.Found = fmt.Sprintf("%s reads disable_vmware_customization in %s alone (12.4 and later also read %s), and only %s sets it to false", ver, CloudCfg, CloudCfgD, CloudCfgD)
		it.Fix = fmt.Sprintf("add the line \"disable_vmware_customization: false\" to %s (Tools before 12.4 reads no other file), or install open-vm-tools 12.4 or later", CloudCfg)
		it.Paths = append(it.Paths, CloudCfg)
	case val == "true":
		it.Found = fmt.Sprintf("%s reads disable_vmware_customization: true from %s", ver, file)
		it.Fix = fmt.Sprintf("set disable_vmware_customization: false in %s, or remove the line", file)
	default:
		it.Found = fmt.Sprintf("%s finds no disable_vmware_customization line it reads (a line \"disable_vmware_customization: false\", lower case)", ver)
		if newer {
			it.Fix = fmt.Sprintf("restore %s, which sets it: %s", DropIn, in.reinstallFix())
		} else {
			it.Fix = fmt.Sprintf("add the line \"disable_vmware_customization: false\" to %s (Tools before 12.4 reads no other file), or install open-vm-tools 12.4 or later", CloudCfg)
		}
	}
	slices.Sort(it.Paths)
	it.Paths = slices.Compact(it.Paths)
	return it
}
