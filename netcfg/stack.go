package netcfg

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/stacks"
	"github.com/seedkeeper/seedkeeper/internal/unit"
)

// Header is the first line of every file seedkeeper renders (the
// stacks' files and RenderResolvConf's): a file is seedkeeper's only
// while it still begins with it (the rule of internal/stacks, whose
// Header a test pins to this one).
const Header = "# Written by seedkeeper; changes will be overwritten."

// A Stack is a network manager an image can run, for which seedkeeper
// writes the persistent configuration of the NICs it owns, so that the
// manager agrees with what seedkeeper applied live and runs DHCP for it.
// A Stack knows everything seedkeeper does with its manager: how to tell
// that an image runs it, how to render a configuration into its files,
// which files in its directories are seedkeeper's, how to ask it to read
// them, and what image seal removes. Stacks is the one table of them;
// every list of stacks elsewhere derives from it.
type Stack struct {
	// Name is the stack's name in the status and the logs.
	Name string
	// Title is what its users call it.
	Title string
	// Unit is the systemd unit that runs it: it counts when enabled and
	// not masked (see DetectStack).
	Unit string
	// Programs are the manager's programs, one of which must be in the
	// root for the unit to count; none means the unit is enough.
	Programs []string
	// Running is a file that exists only while the manager runs; on a
	// live root it counts as enabled. "" when there is none.
	Running string

	// keys are what its files say of the configuration keys where that
	// is not the table's default (Keys: a key with a Why noted, every
	// other applied); README's key tables and the notes of what its
	// files leave out derive from them (Key.In, UnappliedBy).
	keys keySupport
	// render writes c (the owned interfaces of it) into the stack's
	// files; d is the detection of the image.
	render func(d Detection, c *Config, owned func(*Interface) bool) (*StackFiles, error)
	// ahead renders the files of the configured NICs that are not
	// present, so that the manager configures such a NIC the moment it
	// appears (see RenderAhead); nil when the stack needs none.
	ahead func(c *Config, owned, absent func(*Interface) bool, drivers []string) (*StackFiles, error)
	// dir, for a stack whose directory the image decides, finds it on
	// root ("" when the image gives none: see Detection.Dir); nil when
	// the stack's directory is its own.
	dir func(root string) (string, error)
	// duties are what seedkeeper's flows do with the stack beyond its
	// files: its places, its reload, the wording of image check
	// (internal/stacks, where they are registered under Name).
	duties stacks.Duties
}

// register records s's duties for seedkeeper's flows (internal/stacks),
// and its keys by its name (Key.In).
func register(s *Stack) *Stack {
	stacks.Register(s.Name, s.duties)
	stackKeys[s.Name] = s.keys
	return s
}

// stackKeys are the keys of each stack by its name (see Stack.keys).
var stackKeys = map[string]keySupport{}

func init() { stacks.NewStack = newStack }

// newStack makes the stack sp describes (internal/stacks.NewStack): a
// stack of the tests' own, with its own render, keys and duties.
func newStack(sp stacks.Spec) any {
	s := &Stack{Name: sp.Name, Title: sp.Title, Unit: sp.Unit, Programs: sp.Programs, dir: sp.Dir, keys: except(Noted, sp.Noted...), duties: sp.Duties}
	s.render = func(d Detection, c *Config, owned func(*Interface) bool) (*StackFiles, error) {
		if owned == nil {
			owned = func(*Interface) bool { return true }
		}
		dir, files, err := sp.Render(d.Dir, c, func(i any) bool { return owned(i.(*Interface)) })
		if err != nil {
			return nil, err
		}
		sf := &StackFiles{Dir: dir, Files: files, Mode: 0o644}
		if dir == "" {
			sf.Note = sp.Duties.Dir.None
			return sf, nil
		}
		var links []*Interface
		for i := range c.Interfaces {
			if owned(&c.Interfaces[i]) {
				links = append(links, &c.Interfaces[i])
			}
		}
		sf.Notes = UnappliedBy(s.Name, links)
		return sf, nil
	}
	return register(s)
}

// Stacks are the stacks seedkeeper knows, in the order boot prefers them
// when several are enabled: NetworkManager manages every device it is not
// told to leave alone, so it wins over systemd-networkd, and both win
// over ifupdown, which manages only what its interfaces file names.
// Adding a stack is the file that defines its value and one entry here
// (docs/adding.md, "A network stack"). netplan is not one: it renders
// for networkd or NetworkManager, which run it.
var Stacks = []*Stack{NetworkManager, Networkd, Ifupdown}

// stackByName returns the stack called name, nil when there is none.
func stackByName(name string) *Stack {
	for _, s := range Stacks {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (s *Stack) String() string {
	if s == nil {
		return "none"
	}
	return s.Name
}

// Detection says which stack an image runs and why.
type Detection struct {
	// Stack is the stack boot renders for: the first of Stacks that is
	// enabled; nil when none is.
	Stack *Stack
	// Reason says why, in a few words.
	Reason string
	// Enabled are all the stacks enabled on the root, in the order of
	// Stacks (Stack first).
	Enabled []*Stack
	// Notes are what else was found that bears on the decision: a unit
	// that is masked (whatever links are left), or enabled without its
	// programs.
	Notes []string
	// Paths are the unit files of the enabled stacks (system paths).
	Paths []string
	// Dir is, for a stack whose directory the image decides (ifupdown:
	// the one its /etc/network/interfaces sources stanzas from), that
	// directory, "" when the image gives none.
	Dir string
}

// DetectStack looks at a running system under root ("/" or "" is the
// machine itself; another directory stands for a running one) and says
// which network stack it runs. It runs before any of them has started
// (seedkeeper-boot is ordered before network-pre.target), so it goes by
// what systemd will start (see Stack.Unit), and by a Running file. (Not
// /run/NetworkManager: seedkeeper's own keyfiles make it.) An error is
// one reading the file of the image that decides the chosen stack's
// directory; the Detection then names only that stack.
func DetectStack(root string) (Detection, error) { return detect(unit.Root{Dir: root, Live: true}) }

// DetectImageStack is DetectStack for an image at rest (a mounted or
// extracted root that is not running): its /run is not what boots, so
// neither runtime units nor Running files count.
func DetectImageStack(root string) (Detection, error) { return detect(unit.Root{Dir: root}) }

func detect(r unit.Root) (Detection, error) {
	var d Detection
	for _, s := range Stacks {
		on, why, file := s.enabled(r)
		switch {
		case on:
			d.Enabled = append(d.Enabled, s)
			if file != "" {
				d.Paths = append(d.Paths, file)
			}
			if d.Stack == nil {
				d.Stack, d.Reason = s, why
			}
		case why != "":
			d.Notes = append(d.Notes, why)
		}
	}
	if d.Stack == nil {
		var names []string
		for _, s := range Stacks {
			names = append(names, s.Title)
		}
		d.Reason = "no " + orList(names) + " is enabled"
		return d, nil
	}
	if d.Stack.dir != nil {
		dir, err := d.Stack.dir(r.Dir)
		if err != nil {
			return Detection{Stack: d.Stack}, err
		}
		d.Dir = dir
		if dir == "" {
			d.Reason += "; " + d.Stack.duties.Dir.None + ", so nothing can be written for it"
		}
	}
	return d, nil
}

// enabled says whether s runs on r: on, or why not when that is worth a
// note ("" when it is simply not installed or not enabled).
func (s *Stack) enabled(r unit.Root) (on bool, why, file string) {
	if r.Live && s.Running != "" && exists(r.Dir, s.Running) {
		return true, s.Title + " is running", ""
	}
	st := unit.Lookup(r, s.Unit)
	switch {
	case st.Err != nil:
		return false, st.Why, ""
	case st.Masked:
		return false, st.Why + ": " + s.Title + " does not start, whatever links want it", ""
	case !st.Enabled:
		return false, "", ""
	}
	for _, p := range s.Programs {
		if exists(r.Dir, p) {
			return true, st.Why, st.File
		}
	}
	if len(s.Programs) > 0 {
		return false, s.Unit + " is enabled but " + s.Programs[0] + " is not installed", ""
	}
	return true, st.Why, st.File
}

// exists reports whether the system path p is there under root, links
// resolved inside it.
func exists(root, p string) bool {
	_, err := fsutil.StatIn(root, p, true)
	return err == nil
}

func orList(l []string) string {
	if len(l) < 2 {
		return strings.Join(l, "")
	}
	return strings.Join(l[:len(l)-1], ", ") + " or " + l[len(l)-1]
}

// Render renders the owned interfaces of c (all when owned is nil) into
// the stack's files, for the image d detected.
func (s *Stack) Render(d Detection, c *Config, owned func(*Interface) bool) (*StackFiles, error) {
	sf, err := s.render(d, c, owned)
	if err != nil {
		return nil, err
	}
	sf.Stack = s
	return sf, nil
}

// RenderAhead renders, for the configured NICs that are not present
// (absent; apply.Plan.Absent) and not owned, the files the stack's
// manager configures each one from the moment it is hot-added, before
// seedkeeper's watch has applied it, matched so that only a NIC of one of
// drivers (the hotplug allowlist in force) takes them. Its Files are by
// name in the Dir of the stack's render, its Extra outside it, and its
// Notes say what was written ahead and what was not, and why. A stack
// that needs none (ifupdown configures a hot-added NIC only if an
// allow-hotplug stanza names it) returns empty StackFiles.
func (s *Stack) RenderAhead(c *Config, owned, absent func(*Interface) bool, drivers []string) (*StackFiles, error) {
	if s == nil || s.ahead == nil {
		return &StackFiles{Stack: s}, nil
	}
	sf, err := s.ahead(c, owned, absent, drivers)
	if sf != nil {
		sf.Stack = s
	}
	return sf, err
}

// systemBus is the socket of the system D-Bus; it exists once dbus.socket
// has started, which is later than seedkeeper-boot.
const systemBus = "/run/dbus/system_bus_socket"

// ifupdownSourceDir reads root's /etc/network/interfaces (links resolved
// inside root) and returns the directory its first "source DIR/*" or
// "source-directory DIR" line names (as seen inside root), or "" when it
// sources no directory. Relative paths are relative to /etc/network, as
// ifupdown takes them.
func ifupdownSourceDir(root string) (string, error) {
	b, err := fsutil.ReadFileIn(context.Background(), root, ifupdownInterfaces, fsutil.SmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return parseIfupdownSource(b)
}

// ifupdownInterfaces is ifupdown's main configuration file.
const ifupdownInterfaces = "/etc/network/interfaces"

// parseIfupdownSource returns the directory the first "source DIR/*" or
// "source-directory DIR" line of an /etc/network/interfaces file names,
// or "" when it sources none (see ifupdownSourceDir).
func parseIfupdownSource(b []byte) (string, error) {
	const path = ifupdownInterfaces
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		var dir string
		switch f[0] {
		case "source-directory", "source-dir":
			dir = f[1]
		case "source":
			// Only a plain "DIR/*" glob: the stanza file must match it.
			if !strings.HasSuffix(f[1], "/*") || strings.ContainsAny(strings.TrimSuffix(f[1], "/*"), "*?[") {
				continue
			}
			dir = strings.TrimSuffix(f[1], "/*")
		default:
			continue
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join("/etc/network", dir)
		}
		dir = filepath.Clean(dir)
		if !strings.HasPrefix(dir, "/etc/") && !strings.HasPrefix(dir, "/run/") {
			return "", fmt.Errorf("%s line %d: the sourced directory is outside /etc and /run", path, n)
		}
		return dir, nil
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s line %d: %w", path, n+1, err)
	}
	return "", nil
}
