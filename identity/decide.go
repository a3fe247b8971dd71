package identity

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Rule names the rule that made a decision. 1 to 5 are the design's rules;
// 6 to 9 are the cases the design implies (docs/design.md, "Identity
// rules").
type Rule int

// The rules, numbered as in docs/design.md, "Identity rules".
const (
	RuleKeep        Rule = 1 // same machine, derived or unchanged ID: keep the pin
	RuleExplicit    Rule = 2 // an explicit new ID: honour and pin it
	RuleAdopt       Rule = 3 // first run after cloud-init: pin cloud-init's ID
	RuleNewMachine  Rule = 4 // another machine (clone): drop the pin
	RulePassThrough Rule = 5 // no machine identity: pass the reported ID through
	RuleFirstRun    Rule = 6 // first run, cloud-init never ran: pin the reported ID
	RuleReset       Rule = 7 // a reset was requested: new ID on purpose
	RuleBadState    Rule = 8 // state unreadable: keep cloud-init's ID, pin nothing
	RulePlaceholder Rule = 9 // the source reported a placeholder: pass it through, pin nothing
)

var ruleNames = map[Rule]string{
	RuleKeep:        "keep",
	RuleExplicit:    "explicit-id",
	RuleAdopt:       "adopt-cloud-init",
	RuleNewMachine:  "new-machine",
	RulePassThrough: "no-machine-identity",
	RuleFirstRun:    "first-run",
	RuleReset:       "reset",
	RuleBadState:    "state-unreadable",
	RulePlaceholder: "placeholder-reported",
}

// String returns the rule's short name, e.g. "keep".
func (r Rule) String() string {
	if n, ok := ruleNames[r]; ok {
		return n
	}
	return fmt.Sprintf("rule-%d", int(r))
}

// Kind classifies a reported instance ID.
type Kind string

// The kinds of reported IDs.
const (
	// KindExplicit is an ID someone chose: an identity.
	KindExplicit Kind = "explicit"
	// KindDerived is a NoCloud ID equal to SHA-1(user-data ‖
	// network-config): Proxmox's config hash, not an identity.
	KindDerived Kind = "derived"
	// KindDefault is NoCloud's default "nocloud": no ID was given.
	KindDefault Kind = "default"
)

// NoCloudDefaultID is the instance ID cloud-init's NoCloud uses when
// meta-data has none.
const NoCloudDefaultID = "nocloud"

// Input is what a decision is made from.
type Input struct {
	// Root is the directory standing for "/" under which the state file
	// and cloud-init's files are found; "" is the machine's own.
	Root string
	// Source is the metadata source (datasource.Source*).
	Source string
	// ReportedID is the instance ID the source reported. Required.
	ReportedID string
	// Defaulted is true when the source had no ID and used its default.
	Defaulted bool
	// MachineID is the machine identity; empty when none could be read.
	MachineID string
	// UserData and NetworkConfig are the raw bytes the source read, used
	// to recognise a derived NoCloud ID.
	UserData      []byte
	NetworkConfig []byte
	// Now is the time recorded in the state; zero means time.Now().
	Now time.Time
}

// FromMetadata builds the Input for md.
func FromMetadata(root string, md *datasource.Metadata) Input {
	return Input{
		Root:          root,
		Source:        md.Source,
		ReportedID:    md.InstanceID,
		Defaulted:     md.InstanceIDDefaulted,
		MachineID:     md.MachineID,
		UserData:      md.UserData,
		NetworkConfig: md.NetworkConfigRaw,
	}
}

// Decision is the outcome of Decide.
type Decision struct {
	// InstanceID is the ID to hand cloud-init.
	InstanceID string `json:"instance_id"`
	// ReportedID is the ID the source reported, and ReportedKind what
	// kind of ID it is.
	ReportedID   string `json:"reported_id"`
	ReportedKind Kind   `json:"reported_kind"`
	// Rule is the rule that decided, RuleName its name.
	Rule     Rule   `json:"rule"`
	RuleName string `json:"rule_name"`
	// PinnedID is the pin after the decision (empty when nothing is
	// pinned) and PinnedAt when it was made.
	PinnedID string    `json:"pinned_id,omitempty"`
	PinnedAt time.Time `json:"pinned_at,omitzero"`
	// PreviousID is the pin before the decision, if any.
	PreviousID string `json:"previous_id,omitempty"`
	// Changed is true when the pin was made, replaced or dropped.
	Changed bool `json:"changed"`
	// Explanation says in one paragraph why the ID is what it is.
	Explanation string `json:"explanation"`
}

// DerivedID returns the ID Proxmox computes for a NoCloud seed: the hex
// SHA-1 of the user-data bytes followed by the network-config bytes.
func DerivedID(userData, networkConfig []byte) string {
	h := sha1.New()
	h.Write(userData)
	h.Write(networkConfig)
	return hex.EncodeToString(h.Sum(nil))
}

// Classify says what kind of ID in.ReportedID is.
func Classify(in Input) Kind {
	// Only a source whose IDs may be derived or defaulted
	// (datasource.Source.DerivedID) reports anything but an identity.
	if src, _ := datasource.Lookup(in.Source); !src.DerivedID {
		return KindExplicit
	}
	if in.Defaulted || in.ReportedID == NoCloudDefaultID {
		return KindDefault
	}
	if strings.EqualFold(in.ReportedID, DerivedID(in.UserData, in.NetworkConfig)) {
		return KindDerived
	}
	return KindExplicit
}

// Decide decides the instance ID for in and records the decision in the
// state file under in.Root (see the package documentation for the rules).
//
// It always returns a usable Decision when in.ReportedID is set. When the
// state file is unreadable the Decision keeps cloud-init's current ID
// (RuleBadState) and the error wraps ErrBadState; when the new state cannot
// be saved the Decision stands and the error says so. A stored ID that
// cloud-init could not use (the pin, or cloud-init's current ID; see
// datasource.CheckInstanceID) is treated as absent: the Decision is made
// without it, its Explanation says so and the error wraps ErrUnusableID.
// The caller should log the error and go on with d.InstanceID.
func Decide(in Input) (Decision, error) {
	root := sysroot.Root(in.Root)
	if in.ReportedID == "" {
		return Decision{}, errors.New("deciding the instance ID: the source reported no instance ID")
	}
	// A refused ID is neither handed on nor pinned.
	if err := CheckID(in.ReportedID); err != nil {
		return Decision{}, fmt.Errorf("deciding the instance ID: %w", err)
	}
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC().Truncate(time.Second)

	ci, ciErr := ReadCloudInit(root)
	st, err := Load(root)
	if err == nil && ciErr != nil {
		err = ciErr
	}
	// A sealed image: the first boot of a clone, whatever was left.
	seal := ReadSeal(root)
	if seal != nil {
		st, ci, err = nil, CloudInit{}, nil
	}
	dropped := dropUnusable(root, st, &ci.ID)
	if err != nil {
		return ignored(fallback(in, ci.Adoptable(), err), dropped), errors.Join(append([]error{err}, dropped...)...)
	}
	d, next := decide(st, ci, in, now)
	d = ignored(d, dropped)
	if seal != nil {
		d.Explanation += seal.explain()
		next.Last.Explanation = d.Explanation
	}
	// The same decision as last boot leaves the file as it is: a boot
	// where nothing changed rewrites nothing.
	if !repeats(st, next) {
		if _, err := Save(root, next); err != nil {
			return d, errors.Join(append(dropped, fmt.Errorf("saving the identity decision: %w", err))...)
		}
	}
	if seal != nil {
		if err := consumeSeal(root); err != nil {
			dropped = append(dropped, err)
		}
	}
	return d, errors.Join(dropped...)
}

// fallback keeps cloud-init's current ID (or passes the reported one
// through when there is none) and pins nothing.
func fallback(in Input, ciID string, err error) Decision {
	d := Decision{
		InstanceID:   in.ReportedID,
		ReportedID:   in.ReportedID,
		ReportedKind: Classify(in),
		Rule:         RuleBadState,
		RuleName:     RuleBadState.String(),
	}
	if ciID != "" {
		d.InstanceID = ciID
		d.Explanation = fmt.Sprintf("Instance ID %q: the %s source reported %q, but %v. seedkeeper does not start over: it keeps cloud-init's current ID and leaves the state file as it is. Fix or remove the file (removing it re-pins cloud-init's current ID on the next boot) (rule %d, %s).",
			d.InstanceID, sourceName(in), in.ReportedID, err, RuleBadState, RuleBadState)
	} else {
		d.Explanation = fmt.Sprintf("Instance ID %q: %v, and cloud-init has no current ID to keep, so the ID the %s source reported is passed through unchanged and nothing is pinned. Fix or remove the file (rule %d, %s).",
			d.InstanceID, err, sourceName(in), RuleBadState, RuleBadState)
	}
	return d
}

// decide applies the rules to the loaded state. It returns the decision and
// the state to save. It reads as its steps: the facts the rules look at,
// then the rules that pin nothing, the rules of a machine with no pin yet,
// the rules of a pinned one, and the record of what was decided.
//
// Nothing that means "unknown" is pinned or adopted (see unknown.go): a
// machine identity from unknownMachineIDs is no machine identity (rule
// 5); a placeholder reported ID passes through unpinned (rule 9); a
// placeholder cloud-init ran with (DataSourceNone) is not adopted, so the
// first boot with a real source is a first run (rule 6); and a placeholder
// pinned by an earlier version is dropped the same way.
func decide(st *State, ci CloudInit, in Input, now time.Time) (Decision, *State) {
	r := newRun(st, ci, in, now)
	switch {
	case r.passThrough():
	case !r.hasPin:
		r.firstPin()
	default:
		r.pinned()
	}
	return r.record()
}

// run is one application of the rules: the facts they read, the decision
// d and the state next to save.
type run struct {
	st           *State
	in           Input // with MachineID as MachineIdentity reads it
	rawMachineID string
	kind         Kind
	ciID         string // cloud-init's current ID, when it may be adopted
	hasPin       bool
	// notAdopted explains, in front of a first run, why cloud-init's ID
	// or an old pin was not kept.
	notAdopted []string
	src        string
	now        time.Time
	d          Decision
	next       State
}

// newRun gathers the facts, and drops a pin that is a placeholder.
func newRun(st *State, ci CloudInit, in Input, now time.Time) *run {
	r := &run{st: st, in: in, rawMachineID: in.MachineID, kind: Classify(in), ciID: ci.Adoptable(), src: sourceName(in), now: now}
	r.d = Decision{ReportedID: in.ReportedID, ReportedKind: r.kind}
	if st != nil {
		r.next = *st
		r.d.PreviousID = st.InstanceID
	}
	r.in.MachineID = MachineIdentity(in.MachineID)
	if ci.Placeholder != "" && ci.ID != "" {
		r.notAdopted = append(r.notAdopted, fmt.Sprintf("cloud-init ran before with %q, but that is not an identity: %s, so it is not adopted and this boot is the first with a real source: a new instance for cloud-init, with new SSH host keys", ci.ID, ci.Placeholder))
	} else if ci.Placeholder != "" {
		r.notAdopted = append(r.notAdopted, ci.Placeholder+", which is no instance ID to adopt")
	}
	r.hasPin = st != nil && st.InstanceID != ""
	if why, ok := PlaceholderID(r.next.InstanceID); r.hasPin && ok {
		r.notAdopted = append(r.notAdopted, fmt.Sprintf("the pin %q (pinned at %s) is %s, not an identity, so it is dropped", st.InstanceID, stamp(st.PinnedAt), why))
		r.hasPin = false
		r.next.InstanceID, r.next.MachineID, r.next.Rule, r.next.RuleName = "", "", 0, ""
	}
	return r
}

// pin decides id by rule and pins it for this machine.
func (r *run) pin(id string, rule Rule) {
	r.d.InstanceID, r.d.Rule = id, rule
	r.d.Changed = !r.hasPin || id != r.st.InstanceID || r.in.MachineID != r.st.MachineID
	r.next.InstanceID, r.next.MachineID = id, r.in.MachineID
	r.next.Rule, r.next.RuleName = rule, rule.String()
	r.next.PinnedAt, r.next.ConfirmedAt = r.now, r.now
	r.next.Reset = nil
}

// passThrough applies the rules that pin nothing: a placeholder reported
// ID, and no machine identity. It reports whether one applied.
func (r *run) passThrough() bool {
	d, in, st := &r.d, r.in, r.st
	if reportedPlaceholder, ok := PlaceholderID(in.ReportedID); ok {
		d.InstanceID, d.Rule = in.ReportedID, RulePlaceholder
		d.Explanation = fmt.Sprintf("Instance ID %q: the %s source reported %s, which names no instance, so it is passed through unchanged, as cloud-init itself would use it, and nothing is pinned or changed",
			d.InstanceID, r.src, reportedPlaceholder)
		return true
	}
	if in.MachineID != "" {
		return false
	}
	d.InstanceID, d.Rule = in.ReportedID, RulePassThrough
	what := "no machine identity could be read"
	if r.rawMachineID != "" {
		machineUnknown, _ := unknownMachineID(r.rawMachineID)
		what = fmt.Sprintf("no machine identity (the value read, %q, is %s)", strings.TrimSpace(r.rawMachineID), machineUnknown)
	}
	d.Explanation = fmt.Sprintf("Instance ID %q: %s, so seedkeeper cannot tell this machine from a clone and passes the ID the %s source reported through unchanged, as cloud-init itself would; nothing is pinned",
		d.InstanceID, what, r.src)
	if r.hasPin {
		d.Explanation += fmt.Sprintf(" and the existing pin %q is left as it is", st.InstanceID)
	}
	if st != nil && st.Reset != nil {
		d.Explanation += "; the pending reset stays pending"
	}
	if len(r.notAdopted) > 0 {
		d.Explanation += "; " + strings.Join(r.notAdopted, "; ")
	}
	return true
}

// firstPin applies the rules of a machine with no pin: a reset asked for
// before, an explicit ID cloud-init did not run with, cloud-init's ID
// adopted, or the reported ID pinned on a first run.
func (r *run) firstPin() {
	d, in, st, ciID := &r.d, r.in, r.st, r.ciID
	switch {
	case st != nil && st.Reset != nil:
		id := resetID(in.ReportedID, st.Reset.Suffix, ciID)
		req := st.Reset
		r.pin(id, RuleReset)
		d.Explanation = fmt.Sprintf("Instance ID %q: a reset was requested at %s, so this boot is a new instance on purpose: the new ID is the ID the %s source reported (%q) with the reset's random suffix",
			id, stamp(req.RequestedAt), r.src, in.ReportedID)
		if ciID != "" {
			d.Explanation += fmt.Sprintf(", unlike cloud-init's current ID %q", ciID)
		}
		d.Explanation += fmt.Sprintf(". It is pinned for this machine (%s)", in.MachineID)

	case ciID != "" && r.kind == KindExplicit && in.ReportedID != ciID:
		// cloud-init compares an explicit ID with its own and would make
		// this boot a new instance itself: adopting its old ID here would
		// let a clone of a template that ran cloud-init keep the
		// template's identity.
		r.pin(in.ReportedID, RuleExplicit)
		d.Explanation = fmt.Sprintf("Instance ID %q: seedkeeper runs here for the first time; cloud-init ran before with %q, but the %s source now reports a different explicit ID, so this boot is a new instance (as cloud-init alone would decide) and the new ID is pinned for this machine (%s)",
			in.ReportedID, ciID, r.src, in.MachineID)

	case ciID != "":
		r.pin(ciID, RuleAdopt)
		d.Explanation = fmt.Sprintf("Instance ID %q: seedkeeper runs here for the first time and cloud-init already ran with this ID, so it is pinned for this machine (%s) and installing seedkeeper changes nothing. The %s source reported %q, %s",
			ciID, in.MachineID, r.src, in.ReportedID, kindPhrase(r.kind))

	case len(r.notAdopted) > 0:
		r.pin(in.ReportedID, RuleFirstRun)
		d.Explanation = fmt.Sprintf("Instance ID %q: %s; so the ID the %s source reported (%s) is pinned for this machine (%s)",
			in.ReportedID, strings.Join(r.notAdopted, "; "), r.src, kindPhrase(r.kind), in.MachineID)

	default:
		r.pin(in.ReportedID, RuleFirstRun)
		d.Explanation = fmt.Sprintf("Instance ID %q: seedkeeper runs here for the first time and cloud-init has never run, so the ID the %s source reported (%s) is pinned for this machine (%s)",
			in.ReportedID, r.src, kindPhrase(r.kind), in.MachineID)
	}
}

// pinned applies the rules of a machine with a pin: another machine (a
// clone), a reset asked for, a new explicit ID, or the pin kept.
func (r *run) pinned() {
	d, in, old, kind := &r.d, r.in, *r.st, r.kind
	switch {
	case old.MachineID != in.MachineID:
		id := in.ReportedID
		if id == old.InstanceID || id == r.ciID {
			id = withSuffix(id, "-m"+DerivedID([]byte(in.MachineID), nil)[:8])
		}
		r.pin(id, RuleNewMachine)
		d.Explanation = fmt.Sprintf("Instance ID %q: this machine (%s) is not the one the pin %q belongs to (%s, pinned at %s): it is a clone or a copied disk, so the pin is dropped and this boot is a new instance, with new SSH host keys. The %s source reported %q",
			id, in.MachineID, old.InstanceID, old.MachineID, stamp(old.PinnedAt), r.src, in.ReportedID)
		if id != in.ReportedID {
			d.Explanation += ", which equals the old instance's ID, so 8 hex digits of the machine identity's SHA-1 were appended"
		}
		if old.Reset != nil {
			d.Explanation += "; the pending reset is satisfied by this"
		}

	case old.Reset != nil:
		id := resetID(in.ReportedID, old.Reset.Suffix, old.InstanceID, r.ciID)
		r.pin(id, RuleReset)
		d.Explanation = fmt.Sprintf("Instance ID %q: a reset was requested at %s, so this boot is a new instance on purpose: the new ID is the ID the %s source reported (%q) with the reset's random suffix, replacing the pin %q (pinned at %s)",
			id, stamp(old.Reset.RequestedAt), r.src, in.ReportedID, old.InstanceID, stamp(old.PinnedAt))

	case kind == KindExplicit && in.ReportedID != old.InstanceID && in.ReportedID != old.ReportedID:
		r.pin(in.ReportedID, RuleExplicit)
		d.Explanation = fmt.Sprintf("Instance ID %q: the %s source reported this explicit ID, which differs from the pin %q (pinned at %s) and from the ID it reported before (%q): someone set a new ID, so this boot is a new instance and the new ID is pinned",
			in.ReportedID, r.src, old.InstanceID, stamp(old.PinnedAt), old.ReportedID)

	default:
		d.InstanceID, d.Rule = old.InstanceID, RuleKeep
		r.next.ConfirmedAt = r.now
		why := kindPhrase(kind)
		if kind == KindExplicit {
			why = "an explicit ID that has not changed"
			if in.ReportedID == old.InstanceID {
				why = "the pinned ID itself"
			}
		}
		d.Explanation = fmt.Sprintf("Instance ID %q: the %s source reported %q, %s; this is the machine the pin belongs to (%s), so the pin made at %s by rule %d (%s) is kept",
			old.InstanceID, r.src, in.ReportedID, why, in.MachineID, stamp(old.PinnedAt), old.Rule, old.Rule)
	}
}

// record completes the decision with its rule, and the state to save with
// what was pinned and this boot's decision.
func (r *run) record() (Decision, *State) {
	d, next, in := r.d, r.next, r.in
	d.RuleName = d.Rule.String()
	d.Explanation += fmt.Sprintf(" (rule %d, %s).", d.Rule, d.Rule)
	if next.InstanceID != "" && in.MachineID != "" && d.Rule != RulePlaceholder {
		d.PinnedID, d.PinnedAt = next.InstanceID, next.PinnedAt
		next.ReportedID = in.ReportedID
		next.Source = in.Source
	}
	next.Last = &LastDecision{
		At:          r.now,
		ReportedID:  in.ReportedID,
		InstanceID:  d.InstanceID,
		Rule:        d.Rule,
		RuleName:    d.RuleName,
		Explanation: d.Explanation,
	}
	return d, &next
}

// resetID derives the post-reset ID from the reported one and the reset's
// suffix, making sure it differs from every ID in avoid.
func resetID(reported, suffix string, avoid ...string) string {
	tail := "-r" + suffix
	id := withSuffix(reported, tail)
	// Bounded: a reported ID cut short to fit could repeat an avoided one.
	for i := 0; i <= len(avoid) && slices.Contains(avoid, id); i++ {
		tail += "-r" + suffix
		id = withSuffix(reported, tail)
	}
	return id
}

func kindPhrase(k Kind) string {
	switch k {
	case KindDerived:
		return "which is the SHA-1 of its user-data and network-config (derived from config, as Proxmox makes it), not an identity"
	case KindDefault:
		return "which is NoCloud's default (no ID was given), not an identity"
	default:
		return "an explicit ID"
	}
}

func sourceName(in Input) string {
	if in.Source == "" {
		return "metadata"
	}
	return in.Source
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}

// repeats reports whether next records the same decision as st, the state
// it was made from, apart from the times of the decision.
func repeats(st, next *State) bool {
	if st == nil || next == nil || st.Last == nil || next.Last == nil {
		return false
	}
	a, b := *st, *next
	la, lb := *a.Last, *b.Last
	a.ConfirmedAt, b.ConfirmedAt = time.Time{}, time.Time{}
	la.At, lb.At = time.Time{}, time.Time{}
	a.Last, b.Last = &la, &lb
	a.Version, b.Version = StateVersion, StateVersion
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
