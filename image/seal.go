package image

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/stacks"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/seed"
)

// Op is what a seal step does to its path.
type Op string

// The operations of a seal plan. Every removal states the kind it
// removes: a file is unlinked, never a directory; a tree is removed only
// where the plan names a directory of state it clears.
const (
	// Remove unlinks a file, a link itself (never its target) or a
	// special file; never a directory.
	Remove Op = "remove"
	// RemoveTree removes a directory and everything in it (links inside
	// are removed, never followed; mounts inside are not entered).
	RemoveTree Op = "remove-tree"
	// Empty truncates a regular file to zero bytes and keeps it.
	Empty Op = "empty"
	// Write writes the sealed marker.
	Write Op = "write"
	// Keep is a path seal looked at and leaves as it is, on purpose.
	Keep Op = "keep"
	// Skip is a path seal would act on but leaves, because it is not of
	// the kind seal removes there (a directory where a log file is
	// named, a mount point); Why says which.
	Skip Op = "skip"
)

// Action is one step of a seal plan.
type Action struct {
	Op Op `json:"op"`
	// Path is the system path acted on, with every link on the way
	// resolved inside the root.
	Path string `json:"path"`
	// Why says what the path is and why seal acts on it.
	Why string `json:"why"`
	// State is what the path was when the plan was made (its kind,
	// size and modification time, or "absent"): part of the plan's
	// Digest.
	State string `json:"state"`
}

// SealOptions are the choices of a seal.
type SealOptions struct {
	// KeepSSHHostKeys leaves the SSH host keys in place.
	KeepSSHHostKeys bool
	// DryRun makes Seal plan only: nothing is changed.
	DryRun bool
	// Now is the time recorded in the sealed marker; zero means now.
	Now time.Time
	// Expect, when set, is the Digest of the plan that was read (a dry
	// run's): Seal plans again right before acting and, if the plan is
	// no longer that one, changes nothing and returns the new plan with
	// an error wrapping ErrPlanChanged.
	Expect string
}

// Plan is what a seal does: the dry run prints it and Apply carries it
// out, so the preview is exactly what happens.
type Plan struct {
	Root    sysroot.Root `json:"-"`
	Actions []Action     `json:"actions"`
	opts    SealOptions
	// walked are the network files of seedkeeper's the plan removes, by
	// path, as stacks.Walk read them: Apply removes each only while it
	// still holds that (stacks.Remove).
	walked map[string]stacks.File
}

// Changes returns the actions that change something (all but Keep and
// Skip).
func (p *Plan) Changes() []Action {
	return slices.DeleteFunc(slices.Clone(p.Actions), func(a Action) bool { return a.Op == Keep || a.Op == Skip })
}

// Sealing is what Seal did.
type Sealing struct {
	// Plan is what the seal does (or, on a dry run, would do).
	Plan *Plan
	// Err is what failed while applying the plan; the steps that could
	// run ran, and the sealed marker was written.
	Err error
	// Report is the check of the image after the seal; nil on a dry run.
	Report *Report
}

// Seal seals the image under rootDir: it plans (PlanSeal), applies exactly
// that plan unless opts.DryRun, then checks the image (Check) so that the
// caller can say whether a clone will behave. It fails, changing nothing,
// only when no plan can be made; a failed step is in Sealing.Err and the
// check still runs.
func Seal(rootDir string, opts SealOptions) (*Sealing, error) {
	p, err := PlanSeal(rootDir, opts)
	if err != nil {
		return nil, err
	}
	s := &Sealing{Plan: p}
	if opts.DryRun {
		return s, nil
	}
	if err := p.expectDigest(opts.Expect); err != nil {
		return s, err
	}
	s.Err = p.Apply()
	if s.Report, err = Check(rootDir); err != nil {
		return s, fmt.Errorf("checking the image after the seal: %w", err)
	}
	return s, nil
}

// PlanSeal reads the image under rootDir and returns what sealing it does.
// Every path is resolved as the image sees it (see the package doc); a
// path seal would act on that cannot be resolved makes it refuse, and
// plan nothing.
func PlanSeal(rootDir string, opts SealOptions) (*Plan, error) {
	root := sysroot.Root(rootDir)
	if err := isRoot(root); err != nil {
		return nil, fmt.Errorf("sealing the image: %w", err)
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
		for _, e := range b.list(dir) {
			if e.Name() != "seed" {
				b.remove(path.Join(dir, e.Name()), entry, "cloud-init's instance state (as cloud-init clean)")
			}
		}
	}
	owned, err := seed.Owned(string(root))
	if err != nil {
		return nil, fmt.Errorf("sealing the image: %w", err)
	}
	if owned {
		b.remove(seed.Dir, entry, "seedkeeper's seed of this boot (boot writes it again from the clone's metadata)")
	} else if b.exists(seed.Dir) {
		b.keep(seed.Dir, "a seed a person put here: the first boot of every clone imports it")
	}
	if b.exists(seed.ImportDir) {
		b.keep(seed.ImportDir, "a person's seed, imported by an earlier boot")
	}
	for _, l := range cc.logFiles() {
		b.remove(l, file, "cloud-init's log (as cloud-init clean --logs)")
	}

	// seedkeeper's own state.
	b.remove(paths.Identity, file, "seedkeeper's identity pin of this machine")
	b.remove(paths.Status, file, "seedkeeper's status of this boot")
	b.remove(paths.Receipt, file, "seedkeeper's network receipt of this machine's NICs")
	b.remove(paths.Changes, file, "seedkeeper's record of this machine's last metadata and its SSH key receipt")
	b.remove(paths.VMwareIMCMarker, file, "seedkeeper's marker of the last VMware customization applied to this machine")
	b.remove(paths.VMwareIMCSpec, file, "seedkeeper's copy of the last VMware customization spec applied to this machine (a clone must not take this machine's network)")
	b.remove(paths.ChangesBad, file, "seedkeeper's record of this machine's metadata that could not be read, kept aside")

	// Machine IDs: emptied, not removed, so that systemd treats the
	// clone's first boot as a first boot.
	if real := b.resolve(MachineIDPath, true); real != "" {
		fi, err := fsutil.StatIn(string(root), real, false)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			b.skip(real, err)
		case !fi.Mode().IsRegular():
			b.skipKind(real, fi, "the machine ID is a regular file")
		case fi.Size() > 0:
			why := "the machine ID (emptied, not removed: systemd makes a new one at first boot)"
			if real != MachineIDPath {
				why = "the machine ID " + MachineIDPath + " links to (emptied, not removed)"
			}
			p.Actions = append(p.Actions, Action{Op: Empty, Path: real, Why: why})
		}
	}
	if real := b.resolve(DBusMachineIDPath, false); real != "" {
		if fi, err := fsutil.StatIn(string(root), real, false); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			b.keep(real, "a link (D-Bus reads the machine ID through it)")
		} else {
			b.remove(real, file, "D-Bus's copy of the machine ID")
		}
	}

	// SSH host keys.
	if dir := b.dir(SSHDir); dir != "" {
		for _, e := range b.list(dir) {
			if !strings.HasPrefix(e.Name(), "ssh_host_") || e.IsDir() {
				continue
			}
			if opts.KeepSSHHostKeys {
				b.keep(path.Join(dir, e.Name()), "an SSH host key (--keep-ssh-host-keys)")
			} else {
				b.remove(path.Join(dir, e.Name()), file, "an SSH host key of this machine")
			}
		}
	}

	// The network files seedkeeper rendered for this machine's NICs.
	b.stackFiles()

	// The marker is written at its own path only: no link and no mount on
	// the way.
	b.markerDir()
	p.Actions = append(p.Actions, Action{Op: Write, Path: identity.SealedPath, Why: "the sealed marker: the first boot of every clone is a new instance"})
	if b.err != nil {
		return nil, fmt.Errorf("sealing the image: nothing was changed: %w", b.err)
	}
	p.stateAll()
	return p, nil
}

// markerDir refuses a plan whose marker would not land at its own path:
// a link or a mount on the way to the state directory.
func (b *planner) markerDir() {
	for d := paths.StateDir; d != "/"; d = path.Dir(d) {
		fi, err := fsutil.StatIn(string(b.root), d, false)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			b.err = errors.Join(b.err, fmt.Errorf("%s: %w: the marker is written only in the image's own directory", identity.SealedPath, err))
		case fi.Mode()&fs.ModeSymlink != 0:
			b.err = errors.Join(b.err, fmt.Errorf("%s: a symbolic link on the way (%s): the marker is written only at its own path", identity.SealedPath, d))
		}
	}
}

// kind is what a planned removal expects to find.
type kind int

const (
	// file: a file, a link or a special file; a directory is skipped.
	file kind = iota
	// entry: an entry of a directory whose whole content the plan
	// clears: a directory there is removed as a tree.
	entry
)

// planner adds actions to a plan, resolving paths inside the root.
type planner struct {
	p    *Plan
	root sysroot.Root
	// live: the root is the running system, whose /run is sealed too.
	live bool
	err  error
}

// resolve resolves sys inside the root (its last component only with
// followLast); "" when it is absent or cannot be resolved (the error is
// kept: the plan is refused).
func (b *planner) resolve(sys string, followLast bool) string {
	real, err := fsutil.ResolveIn(string(b.root), sys, followLast)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		b.err = errors.Join(b.err, err)
		return ""
	}
	return real
}

// dir resolves a directory entirely; "" when it is missing or refused.
func (b *planner) dir(sys string) string {
	real := b.resolve(sys, true)
	if real == "" {
		return ""
	}
	if fi, err := fsutil.StatIn(string(b.root), real, false); err != nil || !fi.IsDir() {
		return ""
	}
	return real
}

// list lists a directory of the image; one that cannot be listed (a mount
// point, say) is planned as skipped with why.
func (b *planner) list(dir string) []fs.DirEntry {
	ents, err := fsutil.ReadDirIn(string(b.root), dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		b.skip(dir, err)
	}
	return ents
}

func (b *planner) exists(sys string) bool {
	real := b.resolve(sys, false)
	if real == "" {
		return false
	}
	_, err := fsutil.StatIn(string(b.root), real, false)
	return err == nil
}

// remove plans the removal of sys when it exists, as k says: a file (or a
// link, never followed) is removed; a directory only as an entry of a
// directory the plan clears, else it is skipped, and so is anything that
// lies across a mount point.
func (b *planner) remove(sys string, k kind, why string) {
	real := b.resolve(sys, false)
	if real == "" {
		return
	}
	for _, a := range b.p.Actions {
		if a.Path == real {
			return
		}
	}
	fi, err := fsutil.StatIn(string(b.root), real, false)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		b.skip(real, err)
		return
	case real == "/":
		b.p.Actions = append(b.p.Actions, Action{Op: Skip, Path: real, Why: "the root itself, named as " + why + ": not removed"})
		return
	case fi.IsDir() && k == file:
		b.skipKind(real, fi, why+": seal removes a file here, never a directory")
		return
	}
	op := Remove
	if fi.IsDir() {
		op = RemoveTree
	}
	b.p.Actions = append(b.p.Actions, Action{Op: op, Path: real, Why: why})
}

// skip plans sys as skipped because err keeps seal from acting on it.
func (b *planner) skip(sys string, err error) {
	why := "cannot be checked: not touched"
	if errors.Is(err, fsutil.ErrCrossesMount) {
		why = "a mount point inside the root, or beyond one: seal never crosses a mount"
	}
	b.p.Actions = append(b.p.Actions, Action{Op: Skip, Path: sys, Why: why})
}

// skipKind plans sys as skipped because it is a fi where why wants another
// kind.
func (b *planner) skipKind(sys string, fi fs.FileInfo, why string) {
	b.p.Actions = append(b.p.Actions, Action{Op: Skip, Path: sys, Why: fmt.Sprintf("a %s, not removed: %s", fsutil.Kind(fi.Mode()), why)})
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
		places, _ := stacks.Of(s.Name).Places(b.root.Path("/"))
		for _, pl := range places {
			if !b.live && strings.HasPrefix(pl.Dir, "/run/") {
				continue
			}
			found, err := stacks.Walk(string(b.root), pl)
			if err != nil {
				b.skip(pl.Dir, err)
			}
			for _, f := range found {
				if f.Ours {
					b.remove(f.Path, file, "seedkeeper's "+s.Title+" configuration of this machine's NICs (boot writes it again from the clone's metadata)")
					if b.p.walked == nil {
						b.p.walked = map[string]stacks.File{}
					}
					b.p.walked[f.Path] = f
				}
			}
		}
	}
}

func (b *planner) keep(sys, why string) {
	if real := b.resolve(sys, false); real != "" {
		b.p.Actions = append(b.p.Actions, Action{Op: Keep, Path: real, Why: why})
	}
}

// Apply carries out the plan: exactly its actions, nothing else. Each step
// acts on its path only if it still has no link on the way, crosses no
// mount and is still of the kind the plan saw, and a network file of
// seedkeeper's only while it holds what the plan read; a step that fails
// is reported and the others go on. The sealed marker is written last, even
// after a failure, so the clone's first boot is a new instance whatever
// was left.
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
	root := string(p.Root)
	var err error
	switch a.Op {
	case Keep, Skip:
		return nil
	case Write:
		return identity.MarkSealed(p.Root, p.opts.Now)
	case Remove:
		if f, ok := p.walked[a.Path]; ok {
			err = stacks.Remove(root, f)
			break
		}
		err = fsutil.RemoveIn(root, a.Path, false)
	case RemoveTree:
		err = fsutil.RemoveIn(root, a.Path, true)
	case Empty:
		err = fsutil.TruncateIn(root, a.Path)
	default:
		return fmt.Errorf("unknown operation %q", a.Op)
	}
	switch {
	case errors.Is(err, fsutil.ErrSymlink):
		return errors.New("a symbolic link appeared on the way since the plan was made; not touched")
	case errors.Is(err, fsutil.ErrIsDir):
		return errors.New("became a directory since the plan was made; not touched")
	case errors.Is(err, stacks.ErrChanged):
		return errors.New("changed since the plan was made (it no longer holds what seedkeeper wrote); not touched")
	}
	return err
}
