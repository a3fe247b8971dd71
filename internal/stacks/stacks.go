// Package stacks holds what seedkeeper's own flows need of a network
// stack beyond rendering its files (netcfg.Stack): the places its files
// go in on a root and the rule that tells seedkeeper's files there
// (Place), the one walker of those files (Walk) and the one remover of
// them (Remove), how to ask the running manager to read them (Reload),
// and what image check tells a person to fix, and what netplan renders
// at boot beside it (DetectNetplan). Each stack registers its duties here
// from its own file in netcfg; the agent, image check and seal,
// uninstall and collect-logs look them up by the stack's name.
package stacks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

// Header is the first line of every file seedkeeper renders: a file is
// seedkeeper's only while it still begins with it.
const Header = "# Written by seedkeeper; changes will be overwritten."

// A Place is a directory a stack's files go in, and the rule that tells
// seedkeeper's files there from everyone else's.
type Place struct {
	// Dir is the directory, as a system path.
	Dir string
	// Match reports whether name is one seedkeeper gives its files in
	// the place.
	Match func(name string) bool
}

// Named reports whether name is one seedkeeper gives its files in the
// place, whatever the file holds: a file so named that Ours refuses is
// someone else's, or was changed since. A Place without a rule names
// nothing.
func (p Place) Named(name string) bool { return p.Match != nil && p.Match(name) }

// Ours reports whether the file called name in the place, which begins
// with head, is one seedkeeper wrote: its name is one seedkeeper gives,
// and its content still begins with Header. Only such a file is ever
// replaced or removed.
func (p Place) Ours(name string, head []byte) bool {
	return p.Named(name) && bytes.HasPrefix(head, []byte(Header))
}

// File is a file in a place whose name is one seedkeeper gives.
type File struct {
	// Path is its system path, the place's directory resolved inside
	// the root.
	Path string
	// Name is its name in the directory.
	Name string
	// Ours: a regular file (not a link) that still begins with Header
	// (Place.Ours); only such a file is replaced or removed.
	Ours bool
	// Sum is, for a file that is Ours, the SHA-256 of the content Walk
	// read, in hex: Remove removes the file only while it holds that.
	Sum string
}

// ErrChanged is returned by Remove for a file that no longer holds what
// Walk read (fsutil.ErrChanged).
var ErrChanged = fsutil.ErrChanged

// Remove removes the file f that Walk found to be Ours under root, only
// while it still holds what Walk read: it reads the file again right
// before removing it, and leaves one whose content changed, or that is
// no longer a regular file, with an error wrapping ErrChanged. A file
// that is gone is an error wrapping fs.ErrNotExist. Whatever decided on
// the removal after Walk (a plan, a dry run) is thereby held to the file
// it saw.
func Remove(root string, f File) error {
	if !f.Ours {
		return fmt.Errorf("removing %s: %w (not found to be seedkeeper's)", f.Path, ErrChanged)
	}
	return fsutil.RemoveInIfSum(root, f.Path, f.Sum, fsutil.SmallFile)
}

// Walk returns the files of seedkeeper's names in the place under root,
// sorted by name, each with whether it is still seedkeeper's. Every path
// is reached through the in-root functions of fsutil: the place's
// directory is resolved inside root (a link there is followed only inside
// it), a place that is missing or not a directory holds none, and a file
// is read without following a link, never across a mount. An error is
// one that keeps the place from being listed (a mount point, say).
func Walk(root string, pl Place) ([]File, error) {
	dir, err := fsutil.ResolveIn(root, pl.Dir, true)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if fi, err := fsutil.StatIn(root, dir, false); err != nil || !fi.IsDir() {
		return nil, nil
	}
	ents, err := fsutil.ReadDirIn(root, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []File
	for _, e := range ents {
		if !pl.Named(e.Name()) {
			continue
		}
		f := File{Path: path.Join(dir, e.Name()), Name: e.Name()}
		if e.Type().IsRegular() {
			b, err := fsutil.ReadFileInNoFollow(context.Background(), root, f.Path, fsutil.SmallFile)
			if f.Ours = err == nil && pl.Ours(e.Name(), b); f.Ours {
				f.Sum = fsutil.Sum(b)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// Reload is how to ask a running stack to read the files just written:
// the steps, in order, or none when it is not running yet (it reads the
// files when it starts), and then Note says why.
type Reload struct {
	Steps []ReloadStep
	Note  string
}

// A ReloadStep is one request to the running stack: a command, or a
// D-Bus method call when Command is nil.
type ReloadStep struct {
	// Command is a program and its arguments, run without a shell.
	Command []string
	// Bus is a method call on the system bus.
	Bus *BusCall
}

// BusCall is a D-Bus method call without arguments.
type BusCall struct {
	Dest, Path, Method string
}

func (st ReloadStep) String() string {
	if st.Bus != nil {
		return "D-Bus " + st.Bus.Method
	}
	return strings.Join(st.Command, " ")
}

// Duties are what a stack does beyond rendering its files.
type Duties struct {
	// Places returns the directories its files go in on root, whether
	// or not it runs there (seal and uninstall remove seedkeeper's files
	// from every one).
	Places func(root string) ([]Place, error)
	// Reload says how to ask the stack running on root to read files,
	// the files just written into its directory by name (what the
	// steps do is the caller's; this only reads).
	Reload func(root string, files map[string][]byte) Reload
	// Dir is, for a stack whose directory the image decides, what
	// image check says of it.
	Dir DirWording
	// Netplan says what becomes of a NIC seedkeeper owns that a netplan
	// entry rendered for renderer (netplan's backend, "networkd" or
	// "NetworkManager") also matches: why seedkeeper's configuration
	// wins (ok), or why it does not and the fix. nil: the stack says
	// nothing of netplan.
	Netplan func(renderer string) (why, fix string, ok bool)
}

// DirWording is what image check says of the directory of a stack whose
// directory the image decides (netcfg.Detection.Dir).
type DirWording struct {
	// Config is the file of the image that decides it.
	Config string
	// Found says where the files go, %s standing for the directory.
	Found string
	// None, Clone and Fix are what was found when the image gives none,
	// what that means for a clone, and how to fix it.
	None, Clone, Fix string
}

var (
	mu     sync.RWMutex
	duties = map[string]Duties{}
)

// Register records the duties of the stack called name; a second
// registration of a name replaces the first and returns a function that
// restores it (tests register a stack of their own and take it away).
func Register(name string, d Duties) (restore func()) {
	mu.Lock()
	defer mu.Unlock()
	old, had := duties[name]
	duties[name] = d
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if had {
			duties[name] = old
		} else {
			delete(duties, name)
		}
	}
}

// Of returns the duties of the stack called name. A stack that registered
// none has no places and nothing to reload.
func Of(name string) Duties {
	mu.RLock()
	d, ok := duties[name]
	mu.RUnlock()
	if !ok {
		d = Duties{Reload: func(string, map[string][]byte) Reload {
			return Reload{Note: fmt.Sprintf("%s has no reload", name)}
		}}
	}
	if d.Places == nil {
		d.Places = func(string) ([]Place, error) { return nil, nil }
	}
	return d
}

// Spec is a stack made outside netcfg, by a test: what a stack of
// netcfg's table holds, its render given in terms netcfg's types stand
// behind (see NewStack).
type Spec struct {
	Name, Title, Unit string
	// Programs, as netcfg.Stack's.
	Programs []string
	// Render renders c, a *netcfg.Config, for the interfaces owned
	// (called with a *netcfg.Interface) accepts: the directory and the
	// files in it by name. dir is the directory the image decides (Dir
	// below), "" for a stack whose directory is its own.
	Render func(dir string, c any, owned func(any) bool) (string, map[string][]byte, error)
	// Dir, when not nil, finds on root the directory the image decides
	// for the stack's files ("" when it gives none).
	Dir func(root string) (string, error)
	// Noted are the keys its files do not say, as netcfg's stacks
	// declare them ("v2 dhcp4-overrides: use-ntp use-mtu").
	Noted []string
	Duties
}

// NewStack makes a *netcfg.Stack of sp and registers its duties and keys;
// the caller adds it to netcfg.Stacks (and takes it away again). netcfg
// sets it: only tests call it (internal/stacks/stackstest), to prove that
// a stack is its own value and no flow names one. The duties and keys stay
// registered under sp.Name for the rest of the process.
var NewStack func(sp Spec) any
