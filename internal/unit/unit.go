// Package unit tells whether a systemd unit is installed, masked or
// enabled in a root directory, the way systemd itself decides it at boot:
// on the machine itself, or in an image that has never booted. Every part
// of seedkeeper that asks "does this unit start at boot" asks here.
package unit

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

// searchPath is where systemd loads system units from, most important
// first (systemd.unit(5), "System Unit Search Path"): a file or a mask in
// /etc overrides one of the same name in /run, which overrides /lib and
// then /usr/lib. Where /lib is not a link to /usr/lib (a Debian image
// from before the /usr merge), systemd puts its own unit directory,
// /lib/systemd/system, ahead of /usr/lib/systemd/system.
// The directories under /run count only on a live root.
// The generators' directories hold what they made for this boot (netplan's
// .wants links for networkd, for one).
var searchPath = []string{
	"/etc/systemd/system.control",
	"/run/systemd/system.control",
	"/run/systemd/transient",
	"/run/systemd/generator.early",
	"/etc/systemd/system",
	"/run/systemd/system",
	"/run/systemd/generator",
	"/usr/local/lib/systemd/system",
	"/lib/systemd/system",
	"/usr/lib/systemd/system",
	"/run/systemd/generator.late",
}

// State is what systemd makes of a unit in a root.
type State struct {
	// Name is the unit asked about.
	Name string
	// File is the entry of the search path that defines the unit (or
	// masks it), as a system path; "" when the unit is not installed.
	File string
	// Masked: the first entry for the name is a link to /dev/null or an
	// empty file. A masked unit never starts, whatever links want it.
	Masked bool
	// Enabled: not masked, installed, and wanted or required by some
	// unit through a link in a .wants or .requires directory of the
	// search path (under its own name or an alias).
	Enabled bool
	// Why says in a few words what decided: the mask, or the link that
	// enables it.
	Why string
	// Err is set when the search path could not be read within its
	// bounds (ErrTooManyEntries): the unit is then not said to be
	// enabled, and Why says which bound.
	Err error
}

// maxLookupEntries bounds the listings of one Lookup together: each
// directory of the search path is listed once, and all of them may hold
// no more than this many entries in all (a real system holds a few
// thousand). A variable so that a test can lower it.
var maxLookupEntries = 65536

// lister lists the directories of the search path for one Lookup: each
// once, against one budget of entries.
type lister struct {
	r     Root
	left  int
	cache map[string][]fs.DirEntry
	err   error
}

func newLister(r Root) *lister {
	return &lister{r: r, left: maxLookupEntries, cache: map[string][]fs.DirEntry{}}
}

// list returns the entries of d (none when it cannot be read, as systemd
// ignores it); past the budget it returns none and keeps the error.
func (l *lister) list(d dir) []fs.DirEntry {
	if ents, ok := l.cache[d.sys]; ok || l.err != nil {
		return ents
	}
	ents, err := fsutil.ReadDirInMax(l.r.Dir, d.sys, l.left)
	if errors.Is(err, fsutil.ErrTooManyEntries) {
		l.err = fmt.Errorf("the unit directories hold more than %d entries in all (%s and those before it in the search path; remove what does not belong there): %w", maxLookupEntries, d.sys, fsutil.ErrTooManyEntries)
		return nil
	}
	l.left -= len(ents)
	l.cache[d.sys] = ents
	return ents
}

// Root is a directory systemd's paths are read under.
type Root struct {
	// Dir stands for "/"; "" is the machine itself.
	Dir string
	// Live: the root is a running system (the machine, or a scratch
	// directory standing for one), so its /run counts. An image at rest
	// has no /run of its own: what is there is not what boots.
	Live bool
}

// dir is one directory of the search path, as found in the root.
type dir struct {
	sys  string // the system path (/lib/systemd/system)
	host string // where it is, every link resolved inside the root
}

func (r Root) dirs() []dir {
	var out []dir
	seen := map[string]bool{}
	for _, d := range searchPath {
		if strings.HasPrefix(d, "/run/") && !r.Live {
			continue
		}
		host, err := fsutil.Resolve(r.Dir, d)
		if err != nil || seen[host] {
			continue // missing, or the same directory (/lib -> usr/lib)
		}
		if fi, err := fsutil.StatIn(r.Dir, d, true); err != nil || !fi.IsDir() {
			continue
		}
		seen[host] = true
		out = append(out, dir{d, host})
	}
	return out
}

// Lookup says whether the unit name is installed, masked or enabled in r.
// A template instance (ifup@eth0.service) is defined by its template
// (ifup@.service). Entries that cannot be read count as missing, as
// systemd ignores them.
func Lookup(r Root, name string) State {
	st := State{Name: name}
	dirs := r.dirs()
	file, real, masked := find(r, dirs, name)
	if file == "" {
		if t := template(name); t != "" {
			file, real, masked = find(r, dirs, t)
		}
	}
	switch {
	case file == "":
		st.Why = name + " is not installed"
		return st
	case masked:
		st.File, st.Masked, st.Why = file, true, name+" is masked by "+file
		return st
	}
	st.File = file
	l := newLister(r)
	names := aliases(r, l, dirs, name, real)
	if l.err != nil {
		st.Err, st.Why = l.err, name+" could not be judged: "+l.err.Error()
		return st
	}
	for _, d := range dirs {
		ents := l.list(d)
		for _, e := range ents {
			target, ok := strings.CutSuffix(e.Name(), ".wants")
			if !ok {
				target, ok = strings.CutSuffix(e.Name(), ".requires")
			}
			if !ok || !e.IsDir() {
				continue
			}
			for _, n := range names {
				if addsDependency(r, path.Join(d.sys, e.Name(), n)) {
					st.Enabled = true
					st.Why = name + " is enabled: " + target + " wants it (" + path.Join(d.sys, e.Name(), n) + ")"
					return st
				}
			}
		}
	}
	if l.err != nil {
		st.Err, st.Why = l.err, name+" could not be judged: "+l.err.Error()
		return st
	}
	st.Why = name + " is not enabled (no .wants or .requires link)"
	return st
}

// find returns the first entry of the search path for name: its system
// path, the file it resolves to on the host, and whether it is a mask.
// What is neither a file nor a link (a directory, a FIFO) is skipped; a
// link that leads to no unit file is the unit's entry all the same, so
// the unit is not installed (systemd finds the link first and fails to
// load it, whatever lower directories hold).
func find(r Root, dirs []dir, name string) (file, real string, masked bool) {
	null := filepath.Join(orRoot(r.Dir), "dev/null")
	for _, d := range dirs {
		sys := path.Join(d.sys, name)
		fi, err := fsutil.StatIn(r.Dir, sys, false)
		if err != nil {
			continue
		}
		link := fi.Mode()&fs.ModeSymlink != 0
		if link && linksToNull(r.Dir, sys) {
			return sys, "", true
		}
		real, err := fsutil.Resolve(r.Dir, sys)
		if err == nil {
			fi, err = fsutil.StatIn(r.Dir, sys, true)
		}
		switch {
		case err == nil && real == null, err == nil && fi.Mode()&fs.ModeCharDevice != 0:
			return sys, "", true
		case err != nil || !fi.Mode().IsRegular():
			if link {
				return "", "", false
			}
			continue
		case fi.Size() == 0:
			return sys, "", true
		}
		return sys, real, false
	}
	return "", "", false
}

// aliases returns the names the unit is known by: the name asked, the
// name of the file it resolves to, and every link in the search path that
// leads to the same file (Alias= of its [Install] section). An instance
// defined by its template is known by the template's names with its own
// instance (u@.service -> t@.service makes t@x.service u@x.service), never
// by another instance's.
func aliases(r Root, l *lister, dirs []dir, name, real string) []string {
	names := []string{name}
	add := func(n string) {
		if template(name) != "" {
			if !isTemplate(n) {
				return // the name asked, or another instance
			}
			at := strings.IndexByte(n, '@')
			n = n[:at+1] + name[strings.IndexByte(name, '@')+1:strings.LastIndexByte(name, '.')] + n[at+1:]
		}
		for _, x := range names {
			if x == n {
				return
			}
		}
		names = append(names, n)
	}
	add(filepath.Base(real))
	// A link to a file of the unit's name in the search path makes an
	// alias even when that file is not the one that defines the unit (a
	// copy in /etc overrides the vendor's file the alias leads to).
	inPath := func(p string) bool {
		return slices.ContainsFunc(dirs, func(d dir) bool { return filepath.Dir(p) == d.host })
	}
	for _, d := range dirs {
		for _, e := range l.list(d) {
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			p, err := fsutil.Resolve(r.Dir, path.Join(d.sys, e.Name()))
			if err == nil && (p == real || filepath.Base(p) == filepath.Base(real) && inPath(p)) {
				add(e.Name())
			}
		}
	}
	return names
}

// linksToNull reports whether the link at the system path sys leads to
// /dev/null, link by link, inside the root: systemd takes a relative
// target from the link's directory and by its text, so
// ../../../dev/null masks too, and so does a link to a link to
// /dev/null, also in an image whose /dev is missing.
func linksToNull(root, sys string) bool {
	for range maxLinks {
		t, err := fsutil.ReadlinkIn(root, sys)
		if err != nil {
			return false // not a link: the end of the chain
		}
		if !path.IsAbs(t) {
			t = path.Join(path.Dir(sys), t)
		}
		if sys = path.Clean(t); sys == "/dev/null" {
			return true
		}
	}
	return false
}

// maxLinks is how many links linksToNull follows, as the kernel does.
const maxLinks = 40

// addsDependency reports whether sys, an entry of a .wants or .requires
// directory, adds a dependency: systemd takes the name of a link there
// whether or not its target exists, ignores anything but a link, and a
// link to /dev/null masks the dependency.
func addsDependency(r Root, sys string) bool {
	fi, err := fsutil.StatIn(r.Dir, sys, false)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return false
	}
	return !linksToNull(r.Dir, sys)
}

// template returns the template of an instance name (a@b.service ->
// a@.service), "" for any other name.
func template(name string) string {
	at := strings.IndexByte(name, '@')
	dot := strings.LastIndexByte(name, '.')
	if at < 0 || dot < at+2 {
		return ""
	}
	return name[:at+1] + name[dot:]
}

// isTemplate reports whether name is a template (a@.service).
func isTemplate(name string) bool {
	at := strings.IndexByte(name, '@')
	return at >= 0 && strings.LastIndexByte(name, '.') == at+1
}

func orRoot(d string) string {
	if d == "" {
		return "/"
	}
	return d
}
