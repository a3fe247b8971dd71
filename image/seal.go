package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/seed"
)

// Op is what a seal step does to its path.
type Op string

// The operations of a seal plan.
const (
	// Remove removes a file, or a link itself (never its target).
	Remove Op = "remove"
	// RemoveTree removes a directory and everything in it (links inside
	// are removed, never followed).
	RemoveTree Op = "remove-tree"
	// Empty truncates a regular file to zero bytes and keeps it.
	Empty Op = "empty"
	// Write writes the sealed marker.
	Write Op = "write"
	// Keep is a path seal looked at and leaves as it is, on purpose.
	Keep Op = "keep"
)

// Action is one step of a seal plan.
type Action struct {
	Op Op `json:"op"`
	// Path is the system path acted on, with every link on the way
	// resolved inside the root.
	Path string `json:"path"`
	// Why says what the path is and why seal acts on it.
	Why string `json:"why"`
}

// SealOptions are the choices of a seal.
type SealOptions struct {
	// KeepSSHHostKeys leaves the SSH host keys in place.
	KeepSSHHostKeys bool
	// Now is the time recorded in the sealed marker; zero means now.
	Now time.Time
}

// Plan is what a seal does: the dry run prints it and Apply carries it
// out, so the preview is exactly what happens.
type Plan struct {
	Root    sysroot.Root `json:"-"`
	Actions []Action     `json:"actions"`
	opts    SealOptions
}

// Changes returns the actions that change something (all but Keep).
func (p *Plan) Changes() []Action {
	return slices.DeleteFunc(slices.Clone(p.Actions), func(a Action) bool { return a.Op == Keep })
}

// PlanSeal reads the image under rootDir (as for Check) and returns what
// sealing it does. It refuses (and plans nothing) when a path it would act
// on leads out of the root through a symbolic link.
func PlanSeal(rootDir string, opts SealOptions) (*Plan, error) {
	root := sysroot.Root(rootDir)
	if fi, err := os.Stat(root.Path("/")); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sealing the image: %s is not a directory", root.Path("/"))
	}
	p := &Plan{Root: root, opts: opts}
	b := planner{p: p, root: root, live: root.IsReal()}
	cc, err := readCloudConfig(root)
	if err != nil {
		return nil, fmt.Errorf("sealing the image: %w", err)
	}

	// cloud-init clean --logs: all of /var/lib/cloud but seed/, and
	// the logs. Of the seed, only seedkeeper's own output goes.
	if dir := b.dir(CloudDir); dir != "" {
		ents, err := os.ReadDir(root.Path(dir))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sealing the image: reading %s: %w", CloudDir, err)
		}
		for _, e := range ents {
			if e.Name() != "seed" {
				b.remove(path.Join(dir, e.Name()), "cloud-init's instance state (as cloud-init clean)")
			}
		}
	}
	owned, err := seed.Owned(string(root))
	if err != nil {
		return nil, fmt.Errorf("sealing the image: %w", err)
	}
	if owned {
		b.remove(seed.Dir, "seedkeeper's seed of this boot (boot writes it again from the clone's metadata)")
	} else if b.exists(seed.Dir) {
		b.keep(seed.Dir, "a seed a person put here: the first boot of every clone imports it")
	}
	if b.exists(seed.ImportDir) {
		b.keep(seed.ImportDir, "a person's seed, imported by an earlier boot")
	}
	for _, l := range cc.logFiles() {
		b.remove(l, "cloud-init's log (as cloud-init clean --logs)")
	}

	// seedkeeper's own state.
	b.remove(identity.StatePath, "seedkeeper's identity pin of this machine")
	b.remove(agent.StatusPath, "seedkeeper's status of this boot")
	b.remove(agent.ReceiptPath, "seedkeeper's network receipt of this machine's NICs")

	// Machine IDs: emptied, not removed, so that systemd treats the
	// clone's first boot as a first boot.
	if real, err := resolve(root, MachineIDPath, true); err != nil {
		b.err = errors.Join(b.err, err)
	} else if fi, err := os.Lstat(root.Path(real)); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		why := "the machine ID (emptied, not removed: systemd makes a new one at first boot)"
		if real != MachineIDPath {
			why = "the machine ID " + MachineIDPath + " links to (emptied, not removed)"
		}
		p.Actions = append(p.Actions, Action{Empty, real, why})
	}
	if real := b.last(DBusMachineIDPath); real != "" {
		if fi, err := os.Lstat(root.Path(real)); err == nil {
			if fi.Mode()&fs.ModeSymlink != 0 {
				b.keep(real, "a link (D-Bus reads the machine ID through it)")
			} else {
				b.remove(real, "D-Bus's copy of the machine ID")
			}
		}
	}

	// SSH host keys.
	if dir := b.dir(SSHDir); dir != "" {
		ents, _ := os.ReadDir(root.Path(dir))
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "ssh_host_") || e.IsDir() {
				continue
			}
			if opts.KeepSSHHostKeys {
				b.keep(path.Join(dir, e.Name()), "an SSH host key (--keep-ssh-host-keys)")
			} else {
				b.remove(path.Join(dir, e.Name()), "an SSH host key of this machine")
			}
		}
	}

	// The network files seedkeeper rendered for this machine's NICs.
	b.stackFiles()

	if real := b.last(identity.SealedPath); real != "" && real != identity.SealedPath {
		b.err = errors.Join(b.err, fmt.Errorf("%s: a symbolic link on the way (to %s): the marker is written only at its own path", identity.SealedPath, real))
	}
	p.Actions = append(p.Actions, Action{Write, identity.SealedPath, "the sealed marker: the first boot of every clone is a new instance"})
	if b.err != nil {
		return nil, fmt.Errorf("sealing the image: nothing was changed: %w", b.err)
	}
	return p, nil
}

// planner adds actions to a plan, resolving paths inside the root.
type planner struct {
	p    *Plan
	root sysroot.Root
	// live: the root is the running system, whose /run is sealed too.
	live bool
	err  error
}

// last resolves the directories of sys (not its last component); "" when
// that fails (the error is kept).
func (b *planner) last(sys string) string {
	real, err := resolve(b.root, sys, false)
	if err != nil {
		b.err = errors.Join(b.err, err)
		return ""
	}
	return real
}

// dir resolves a directory entirely; "" when it is missing or refused.
func (b *planner) dir(sys string) string {
	real, err := resolve(b.root, sys, true)
	if err != nil {
		b.err = errors.Join(b.err, err)
		return ""
	}
	if fi, err := os.Stat(b.root.Path(real)); err != nil || !fi.IsDir() {
		return ""
	}
	return real
}

func (b *planner) exists(sys string) bool {
	real := b.last(sys)
	if real == "" {
		return false
	}
	_, err := os.Lstat(b.root.Path(real))
	return err == nil
}

// remove plans the removal of sys when it exists: RemoveTree for a
// directory, Remove for anything else (a link is removed, not followed).
func (b *planner) remove(sys, why string) {
	real := b.last(sys)
	if real == "" {
		return
	}
	fi, err := os.Lstat(b.root.Path(real))
	if err != nil {
		return
	}
	op := Remove
	if fi.IsDir() {
		op = RemoveTree
	}
	for _, a := range b.p.Actions {
		if a.Path == real {
			return
		}
	}
	b.p.Actions = append(b.p.Actions, Action{op, real, why})
}

// stackFiles plans the removal of the files seedkeeper rendered for
// any network stack (netcfg.Stacks), in every place a stack's files go
// and by the rule that tells seedkeeper's files there (its name, and its
// header still in place): they name this machine's NICs, and boot writes
// them again from the clone's metadata. Under another root than the
// running system /run is not the image's, and is not looked at.
func (b *planner) stackFiles() {
	for _, s := range netcfg.Stacks {
		// An interfaces file that names no usable directory holds no
		// stanzas of ours: nothing to remove there.
		places, _ := s.Places(b.root.Path("/"))
		for _, pl := range places {
			if !b.live && strings.HasPrefix(pl.Dir, "/run/") {
				continue
			}
			dir := b.dir(pl.Dir)
			if dir == "" {
				continue
			}
			ents, _ := os.ReadDir(b.root.Path(dir))
			for _, e := range ents {
				p := path.Join(dir, e.Name())
				if !e.Type().IsRegular() {
					continue
				}
				head, err := fsutil.ReadFileNoFollow(context.Background(), b.root.Path(p), fsutil.SmallFile)
				if err != nil || !pl.Ours(e.Name(), head) {
					continue
				}
				b.remove(p, "seedkeeper's "+s.Title+" configuration of this machine's NICs (boot writes it again from the clone's metadata)")
			}
		}
	}
}

func (b *planner) keep(sys, why string) {
	if real := b.last(sys); real != "" {
		b.p.Actions = append(b.p.Actions, Action{Keep, real, why})
	}
}

// Apply carries out the plan: exactly its actions, nothing else. Before
// each step it checks that the path still resolves to itself inside the
// root and is still what the plan saw; a step that fails is reported and
// the others go on. The sealed marker is written last, even after a
// failure, so the clone's first boot is a new instance whatever was left.
func (p *Plan) Apply() error {
	var errs []error
	for _, a := range p.Actions {
		if err := p.apply(a); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", a.Op, a.Path, err))
		}
	}
	return errors.Join(errs...)
}

func (p *Plan) apply(a Action) error {
	if a.Op == Keep {
		return nil
	}
	if a.Op == Write {
		return identity.MarkSealed(p.Root, p.opts.Now)
	}
	if real, err := resolve(p.Root, a.Path, false); err != nil {
		return err
	} else if real != a.Path {
		return errors.New("a symbolic link appeared on the way since the plan was made; not touched")
	}
	host := p.Root.Path(a.Path)
	fi, err := os.Lstat(host)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch a.Op {
	case Remove:
		if fi.IsDir() {
			return errors.New("became a directory since the plan was made; not touched")
		}
		return os.Remove(host)
	case RemoveTree:
		if !fi.IsDir() {
			return errors.New("is no longer a directory; not touched")
		}
		return os.RemoveAll(host)
	case Empty:
		if !fi.Mode().IsRegular() {
			return errors.New("is no longer a regular file; not touched")
		}
		f, err := os.OpenFile(host, os.O_WRONLY|os.O_TRUNC|oNoFollow, 0)
		if err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return fmt.Errorf("unknown operation %q", a.Op)
}
