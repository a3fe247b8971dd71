package image

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/nocloudline"
	"github.com/seedkeeper/seedkeeper/internal/paths"
)

// Where a ds=nocloud line comes from: the running kernel's command line
// and SMBIOS serial (present under a live root), and the command line the
// image's boot loader will give the kernel.
const (
	procCmdline   = "/proc/cmdline"
	dmiSerial     = "/sys/class/dmi/id/product_serial"
	grubDefault   = "/etc/default/grub"
	grubDefaultsD = "/etc/default/grub.d"
)

// seedSeedfrom is the seedfrom the drop-in sets: seedkeeper's seed
// directory, as cloud-init's local NoCloud reads it.
const seedSeedfrom = "file://" + paths.SeedDir + "/"

// A noCloudLine is a ds=nocloud line found, and where.
type noCloudLine struct {
	where string // "the kernel command line (/proc/cmdline)", ...
	file  string // the system path it was read from
	meta  map[string]any
}

// noCloudLines finds every ds=nocloud line (nocloudline.Parse,
// cloud-init's own rules) the root holds: the kernel command line and the
// SMBIOS serial when they are there (a running system), and the
// GRUB_CMDLINE_LINUX values of /etc/default/grub and grub.d, which image
// builds (Packer, autoinstall) leave behind.
func (in *inspection) noCloudLines() []noCloudLine {
	var out []noCloudLine
	add := func(where, file, line string) {
		if md, ok := nocloudline.Parse(line); ok {
			out = append(out, noCloudLine{where: where, file: file, meta: md})
		}
	}
	if b, err := in.readSmall(dmiSerial); err == nil {
		add("the SMBIOS serial", dmiSerial, strings.TrimSpace(string(b)))
	}
	if b, err := in.readSmall(procCmdline); err == nil {
		add("the kernel command line", procCmdline, strings.TrimSpace(string(b)))
	}
	files := []string{grubDefault}
	if ents, err := fsutil.ReadDirIn(string(in.root), grubDefaultsD); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".cfg") {
				files = append(files, path.Join(grubDefaultsD, e.Name()))
			}
		}
	}
	// One bound for all the files together, beside each file's; the
	// files past it are not read.
	budget := fsutil.ConfigBudget("the boot loader's defaults (" + grubDefault + " and " + grubDefaultsD + " together)")
	for _, f := range files {
		b, err := budget.ReadFileIn(context.Background(), string(in.root), f, fsutil.SmallFile)
		if errors.Is(err, fsutil.ErrOverBudget) {
			break
		}
		if err != nil {
			continue
		}
		for _, v := range grubCmdlines(b) {
			add("the boot loader's kernel command line", f, v)
		}
	}
	return out
}

// grubCmdlines returns the values of the GRUB_CMDLINE_LINUX and
// GRUB_CMDLINE_LINUX_DEFAULT assignments of a /etc/default/grub file,
// quotes removed (a shell file: only plain assignments are read).
func grubCmdlines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(l, "=")
		if !ok || (k != "GRUB_CMDLINE_LINUX" && k != "GRUB_CMDLINE_LINUX_DEFAULT") {
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		// "$GRUB_CMDLINE_LINUX ds=nocloud": the references add nothing.
		out = append(out, strings.ReplaceAll(strings.ReplaceAll(v, "$GRUB_CMDLINE_LINUX_DEFAULT", ""), "$GRUB_CMDLINE_LINUX", ""))
	}
	return out
}

// checkNoCloudLine: a ds=nocloud line forces cloud-init's datasource to
// NoCloud and its meta-data comes before every seed directory (cloud-init
// merges NoCloud's meta-data first-wins: the SMBIOS serial, then the
// command line, then the seed directory). What that does beside
// seedkeeper's seed, key by key, read from cloud-init's NoCloud (22.4.2
// and 25.1.4):
//
//   - ds=nocloud alone: nothing; seedkeeper's drop-in names NoCloud anyway.
//   - i= (instance-id): cloud-init's instance ID is that one, whatever
//     seedkeeper decided: a finding; only removing it helps.
//   - h= and other keys: they win over seedkeeper's meta-data; a finding
//     when the image's boot loader line sets them (every clone has them),
//     a note when it is this VM's command line or SMBIOS serial.
//   - s= (seedfrom) of http(s) or ftp(s): cloud-init's local NoCloud
//     refuses the seed and NoCloudNet fetches it again over the network.
//     The drop-in's datasource.NoCloud.seedfrom replaces any seedfrom
//     gathered, so the local stage reads seedkeeper's seed instead and
//     nothing is fetched; a finding only when that setting is lost.
func checkNoCloudLine(in *inspection) Item {
	it := Item{Verdict: OK}
	lines := in.noCloudLines()
	if len(lines) == 0 {
		it.Found = "no ds=nocloud on the kernel command line, in the SMBIOS serial or in the boot loader's configuration"
		it.Clone = "cloud-init reads seedkeeper's seed alone"
		return it
	}
	sf := in.cc.lookup("datasource", "NoCloud", "seedfrom")
	var found, clone, fixes []string
	finding, note := false, true // a line at all forces the datasource: worth saying
	for _, l := range lines {
		it.Paths = appendNew(it.Paths, l.file)
		// The keys are the line's own text: only those cloud-init knows
		// are named, the others counted.
		var keys []string
		other := 0
		for _, k := range slices.Sorted(maps.Keys(l.meta)) {
			switch {
			case k == "dsmode":
			case slices.Contains(noCloudLineKeys, k):
				keys = append(keys, k)
			default:
				other++
			}
		}
		named := slices.Clone(keys)
		if other > 0 {
			named = append(named, fmt.Sprintf("%d other key(s)", other))
		}
		desc := "ds=nocloud"
		if len(named) > 0 {
			desc += " with " + strings.Join(named, ", ")
		}
		found = append(found, fmt.Sprintf("%s in %s (%s)", desc, l.where, l.file))
		if _, ok := l.meta["instance-id"]; ok {
			finding = true
			clone = append(clone, fmt.Sprintf("cloud-init takes its instance ID from the i= of %s, before seedkeeper's seed (its command-line meta-data comes first): every boot and every clone has that ID, whatever seedkeeper decides", l.where))
			fixes = append(fixes, fixFor(l, "i="))
		}
		// The boot loader's line is the image's: every clone boots with
		// it, so what it sets wins over every clone's own metadata. The
		// running system's line and serial are this VM's, the platform's
		// to set.
		baked := l.file != dmiSerial && l.file != procCmdline
		var set []string
		for _, k := range keys {
			if k == "instance-id" || k == "seedfrom" {
				continue
			}
			note = true
			set = append(set, k)
			clone = append(clone, fmt.Sprintf("cloud-init takes %s from %s, before seedkeeper's meta-data", k, l.where))
		}
		if other > 0 {
			set = append(set, "other keys")
			clone = append(clone, fmt.Sprintf("cloud-init takes the other key(s) from %s into its meta-data, before seedkeeper's", l.where))
		}
		if baked && len(set) > 0 {
			finding = true
			clone = append(clone, "every clone boots with that line, so its "+strings.Join(set, ", ")+" win(s) over each clone's own metadata")
			fixes = append(fixes, fixFor(l, "all but ds=nocloud"))
		}
		s, _ := l.meta["seedfrom"].(string)
		switch {
		case s == "":
		case sf.Value == seedSeedfrom:
			note = true
			clone = append(clone, fmt.Sprintf("its seedfrom (%s) is replaced by datasource.NoCloud.seedfrom from %s: cloud-init's local stage reads seedkeeper's seed and fetches nothing", describeSeedfrom(s), sf.File))
		default:
			finding = true
			clone = append(clone, fmt.Sprintf("cloud-init fetches its seed from the seedfrom (%s) and not from seedkeeper's seed: over the network in its network stage, user-data and from 24.3 network-config too", describeSeedfrom(s)))
			if sf.Set() {
				fixes = append(fixes, fmt.Sprintf("remove datasource.NoCloud.seedfrom from %s, which replaces the drop-in's", sf.File))
			} else {
				fixes = append(fixes, "reinstall the package's "+DropIn+" (it sets datasource.NoCloud.seedfrom to seedkeeper's seed), or "+fixFor(l, "s="))
			}
		}
	}
	if len(clone) == 0 {
		clone = append(clone, "cloud-init's datasource is forced to NoCloud, which seedkeeper's drop-in names anyway: harmless")
	}
	it.Found = strings.Join(found, "; ")
	it.Clone = strings.Join(clone, "; ")
	switch {
	case finding:
		it.Verdict = Finding
		it.Fix = strings.Join(fixes, "; ")
	case note:
		it.Verdict = Note
	}
	return it
}

func appendNew(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}

// fixFor says how to take key out of the line where it was found.
func fixFor(l noCloudLine, key string) string {
	switch l.file {
	case dmiSerial:
		return "remove " + key + " from the VM's SMBIOS serial (the platform's VM settings)"
	case procCmdline:
		return "remove " + key + " from the kernel command line (" + grubDefault + ", then update-grub)"
	}
	return "remove " + key + " from GRUB_CMDLINE_LINUX in " + l.file + ", then run update-grub"
}

// noCloudLineKeys are the meta-data keys a ds=nocloud line sets that
// are named in the item (their long names); any other key of the line is
// only counted.
var noCloudLineKeys = []string{"instance-id", "local-hostname", "seedfrom", "network-config"}

// describeSeedfrom names the kind of a seedfrom, never its text: the
// whole of it, host included, comes from the kernel command line or the
// SMBIOS serial, and its path and query may hold a token.
func describeSeedfrom(s string) string {
	scheme, _, ok := strings.Cut(s, "://")
	switch {
	case !ok:
		return "a local path"
	case strings.EqualFold(scheme, "http"), strings.EqualFold(scheme, "https"):
		return "an http(s) URL"
	case strings.EqualFold(scheme, "ftp"), strings.EqualFold(scheme, "ftps"):
		return "an ftp(s) URL"
	case strings.EqualFold(scheme, "file"):
		return "a file URL"
	}
	return "a URL of another scheme"
}
