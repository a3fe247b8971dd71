package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/stacks"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/nosource"
	"github.com/seedkeeper/seedkeeper/seed"
)

// Uninstalled says what Uninstall did and left. Paths are system paths.
type Uninstalled struct {
	Removed  []string `json:"removed"`
	Restored []string `json:"restored"`
	// Left names, with the reason, every file of seedkeeper's kind that
	// was left in place.
	Left []string `json:"left"`
	// Plan is the plan that was carried out (or, refused by an expected
	// digest, the plan made instead).
	Plan *UninstallPlan `json:"-"`
}

// UninstallAction is one step of an uninstall plan.
type UninstallAction struct {
	// Op is what the step does: "remove", "remove-tree",
	// "remove-if-empty", "give-back" (a person's seed written back),
	// "given-back" (already there: nothing is done).
	Op string `json:"op"`
	// Path is the system path acted on.
	Path string `json:"path"`
	// Why says what the path is and why uninstall acts on it.
	Why string `json:"why"`
	// State is what the path was when the plan was made (its kind, size
	// and modification time, or "absent"; for a file whose content
	// decides the step, its hash too): part of the plan's Digest.
	State string `json:"state"`
}

// UninstallPlan is what Uninstall does under Root: the dry run prints
// it, and Apply carries out exactly it.
type UninstallPlan struct {
	Root sysroot.Root `json:"-"`
	// Actions are the steps, in the order they are taken.
	Actions []UninstallAction `json:"actions"`
	// Left names, with the reason, every file of seedkeeper's kind that
	// the plan leaves in place.
	Left []string `json:"left"`

	seed     *seed.RemovalPlan
	rendered []stacks.File // network files of ours, removed after the seed
	gate     bool          // the no-source gate is there, removed last
}

// Digest is a digest of exactly what the plan does: each action with the
// state of its path when the plan was made, in order. Two plans with one
// digest do the same to the same files.
func (p *UninstallPlan) Digest() string {
	h := sha256.New()
	json.NewEncoder(h).Encode(p.Actions)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ErrPlanChanged is wrapped by UninstallExpecting when the plan made
// right before acting is not the one that was read.
var ErrPlanChanged = errors.New("the plan is no longer the one that was read")

// Uninstall takes away what seedkeeper wrote outside its own state
// directory, for a package removal: the seed, its marker and the SmartOS
// files (seed.Remove, which also gives a person's imported seed back), the
// network files rendered for any stack, including persistent ifupdown
// stanzas, and the no-source gate. A file is removed only when it is still
// what seedkeeper wrote: for the seed the marker's hashes say so, for a
// rendered network file its name and its first line (netcfg.Header),
// and then only while it holds what the plan read. /etc/resolv.conf is
// left, named: removing it would end name resolution now, and the
// metadata's resolvers are still the right ones until the next boot. The
// live network and the state in StateDir are not touched (a purge
// removes the state, all but an import not given back). Every path is
// reached under root through fsutil's in-root functions. It is
// PlanUninstall then Apply.
func Uninstall(root sysroot.Root) (*Uninstalled, error) {
	return UninstallExpecting(root, "")
}

// UninstallExpecting is Uninstall when expect is empty; otherwise expect
// is the Digest of the plan that was read (a dry run's), and when the
// plan made right before acting has another digest nothing is changed:
// it returns that plan and an error wrapping ErrPlanChanged.
func UninstallExpecting(root sysroot.Root, expect string) (*Uninstalled, error) {
	p, err := PlanUninstall(root)
	if err != nil {
		return &Uninstalled{Left: p.Left}, err
	}
	if expect != "" && !strings.EqualFold(p.Digest(), expect) {
		return &Uninstalled{Plan: p}, fmt.Errorf("%w: its digest is %s, not %s; nothing was changed (run uninstall --dry-run again, read the plan, and pass its digest to --expect)", ErrPlanChanged, p.Digest(), expect)
	}
	return p.Apply()
}

// PlanUninstall plans Uninstall under root: it reads, and changes
// nothing.
func PlanUninstall(root sysroot.Root) (*UninstallPlan, error) {
	p := &UninstallPlan{Root: root, Actions: []UninstallAction{}}
	sp, err := seed.PlanRemove(root)
	p.seed = sp
	for _, s := range sp.Steps {
		p.Actions = append(p.Actions, UninstallAction{Op: s.Op, Path: s.Path, Why: s.Why, State: s.State})
	}
	p.Left = append(p.Left, sp.Left...)
	if err != nil {
		return p, err
	}
	if err := planRendered(root, p); err != nil {
		return p, err
	}
	if _, err := fsutil.StatIn(string(root), nosource.MarkerPath, false); err == nil {
		p.gate = true
		p.add(seed.RemoveFile, nosource.MarkerPath, "the no-source gate", "")
	}
	if writtenByUs(root, "/etc/resolv.conf") {
		p.Left = append(p.Left, "/etc/resolv.conf: written by seedkeeper from the metadata's resolvers; left in place so that names still resolve (cloud-init or the network stack manages it after the next boot)")
	}
	return p, nil
}

// add appends a step with the state of its path and, for a file whose
// content decides the step, the hash of that content (as seed's steps).
func (p *UninstallPlan) add(op, sys, why, sum string) {
	state := fsutil.StateIn(string(p.Root), sys)
	if sum != "" {
		state += " sha256=" + sum
	}
	p.Actions = append(p.Actions, UninstallAction{Op: op, Path: sys, Why: why, State: state})
}

// Apply carries out the plan in its order: the seed's steps, the network
// files, the no-source gate. A network file is removed only while it
// holds what the plan read (stacks.Remove); one changed since is left
// and named.
func (p *UninstallPlan) Apply() (*Uninstalled, error) {
	u := &Uninstalled{Plan: p}
	sr, err := p.seed.Apply()
	u.Removed, u.Restored, u.Left = sr.Removed, sr.Restored, append(sr.Left, p.Left[len(p.seed.Left):]...)
	if err != nil {
		return u, err
	}
	for _, f := range p.rendered {
		switch err := stacks.Remove(string(p.Root), f); {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, stacks.ErrChanged):
			u.Left = append(u.Left, f.Path+": changed since the plan was made; left in place")
			continue
		case err != nil:
			return u, fmt.Errorf("network files: %w", err)
		}
		u.Removed = append(u.Removed, f.Path)
	}
	if p.gate {
		if err := fsutil.RemoveIn(string(p.Root), nosource.MarkerPath, false); err != nil {
			return u, err
		}
		u.Removed = append(u.Removed, nosource.MarkerPath)
	}
	return u, nil
}

// planRendered plans the removal of the network files of ours in every
// place of every stack (netcfg.Stacks), by the rule the renderers and
// seal use (stacks.Walk: a name seedkeeper gives, its header in place),
// each with the hash of what it holds, which apply checks again; a file
// of such a name that is not ours is left and named.
func planRendered(root sysroot.Root, p *UninstallPlan) error {
	for _, s := range netcfg.Stacks {
		places, err := stacks.Of(s.Name).Places(root.Path("/"))
		if err != nil {
			return fmt.Errorf("network files: %w", err)
		}
		for _, pl := range places {
			if err := fsutil.NotLinkedIn(string(root), pl.Dir); err != nil {
				return fmt.Errorf("network files: %w", err)
			}
			found, err := stacks.Walk(string(root), pl)
			if err != nil {
				return fmt.Errorf("network files: %w", err)
			}
			for _, f := range found {
				if !f.Ours {
					p.Left = append(p.Left, f.Path+": not written by seedkeeper (or changed since); left in place")
					continue
				}
				p.rendered = append(p.rendered, f)
				p.add(seed.RemoveFile, f.Path, "a network file seedkeeper rendered (its name and header)", f.Sum)
			}
		}
	}
	return nil
}

// writtenByUs reports whether the system path p under root is a regular
// file (not a link) that starts with the header every network file
// seedkeeper writes starts with.
func writtenByUs(root sysroot.Root, p string) bool {
	b, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), p, fsutil.SmallFile)
	return err == nil && bytes.HasPrefix(b, []byte(netcfg.Header))
}
