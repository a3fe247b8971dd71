package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

// ErrPlanChanged is wrapped by Seal when SealOptions.Expect is set and
// the plan made right before acting is not the one that was read.
var ErrPlanChanged = errors.New("the plan is no longer the one that was read")

// Digest is a digest of exactly what the plan does: its options, and
// each action with the state of its path when the plan was made. Two
// plans with one digest do the same to the same files.
func (p *Plan) Digest() string {
	h := sha256.New()
	json.NewEncoder(h).Encode(struct {
		KeepSSHHostKeys bool     `json:"keep_ssh_host_keys"`
		Actions         []Action `json:"actions"`
	}{p.opts.KeepSSHHostKeys, p.Actions})
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// DiffPlans says, one line each, what differs between the actions of an
// earlier plan and a new one: an action only in one, or the same action
// on a path whose state changed.
func DiffPlans(was, now []Action) []string {
	key := func(a Action) string { return string(a.Op) + " " + a.Path }
	index := func(l []Action) map[string]Action {
		m := make(map[string]Action, len(l))
		for _, a := range l {
			m[key(a)] = a
		}
		return m
	}
	before, after := index(was), index(now)
	var out []string
	for _, a := range was {
		switch b, ok := after[key(a)]; {
		case !ok:
			out = append(out, fmt.Sprintf("no longer planned: %s %s", a.Op, a.Path))
		case b.State != a.State:
			out = append(out, fmt.Sprintf("changed since the plan: %s %s (%s, was %s)", a.Op, a.Path, b.State, a.State))
		case b.Why != a.Why:
			out = append(out, fmt.Sprintf("planned for another reason: %s %s", a.Op, a.Path))
		}
	}
	for _, b := range now {
		if _, ok := before[key(b)]; !ok {
			out = append(out, fmt.Sprintf("newly planned: %s %s", b.Op, b.Path))
		}
	}
	if len(out) == 0 && !slices.EqualFunc(was, now, func(a, b Action) bool { return key(a) == key(b) }) {
		out = append(out, "the same actions in another order")
	}
	return out
}

// stateAll records the state of every action's path.
func (p *Plan) stateAll() {
	for i := range p.Actions {
		p.Actions[i].State = fsutil.StateIn(string(p.Root), p.Actions[i].Path)
	}
}

// expectDigest is the check of SealOptions.Expect.
func (p *Plan) expectDigest(want string) error {
	if want == "" || strings.EqualFold(p.Digest(), want) {
		return nil
	}
	return fmt.Errorf("%w: its digest is %s, not %s; nothing was changed", ErrPlanChanged, p.Digest(), want)
}
