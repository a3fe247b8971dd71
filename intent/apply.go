package intent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Options are the inputs of one boot's Apply.
type Options struct {
	Root     sysroot.Root
	Metadata *datasource.Metadata
	// InstanceID is the decided instance ID.
	InstanceID string
	// NewInstance is true when cloud-init will run this boot as a new
	// instance (its current ID is not InstanceID): it applies everything
	// itself then, and Apply only records.
	NewInstance bool
	// Redacted is true when the source wipes what it was read from after
	// the first read (VMware with vmware.redact): a later boot reads
	// nothing there, which is no admin's change, so nothing is compared
	// or removed on a kept instance.
	Redacted bool
	// Placeholder is true when the instance ID is a placeholder passed
	// through (identity rule 9), no identity: every clone of the disk
	// boots with the same one, so a clone cannot be told from the kept
	// instance, and nothing is compared or removed.
	Placeholder bool
	// NetworkByCloudInit is true when network.owner is cloud-init.
	NetworkByCloudInit bool
	// Run runs chpasswd and passwd; nil runs them from PATH.
	Run Runner
	// Log gets one line per action; nil discards.
	Log *slog.Logger
}

// Result is what Apply found and did, in the status.
type Result struct {
	// Baseline says why nothing was compared (a new instance, no record
	// of an earlier boot); "" when this boot was compared with the last.
	Baseline string `json:"baseline,omitempty"`
	// Changed lists the settings that changed since the last boot.
	Changed []Change `json:"changed,omitempty"`
	// Applied, Waiting and Failed say for each changed setting what was
	// done, what waits for a new instance and why, and what could not be
	// applied (retried at the next boot).
	Applied []string `json:"applied,omitempty"`
	Waiting []string `json:"waiting,omitempty"`
	Failed  []string `json:"failed,omitempty"`
	// Warnings name the fields of the metadata that were left out.
	Warnings []string `json:"warnings,omitempty"`
	// Wrote lists the files written or removed.
	Wrote []string `json:"wrote,omitempty"`
}

// Apply is the boot step for settings changed on purpose (see the package
// documentation). The error is for the record that could not be saved;
// what could not be applied is in Result.Failed.
func Apply(ctx context.Context, o Options) (*Result, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	res := &Result{}
	prev, err := LoadRecord(o.Root)
	if err != nil {
		msg := err.Error() + "; a new record is started"
		if errors.Is(err, ErrBadRecord) {
			// Kept for a person: it holds the receipt of the keys the
			// metadata put in place, which the new record cannot know.
			if b, rerr := fsutil.ReadFileInNoFollow(ctx, string(o.Root), RecordPath, fsutil.SmallFile); rerr == nil {
				if werr := fsutil.WriteFileIn(string(o.Root), BadRecordPath, b, 0o600); werr == nil {
					msg += ", the old one kept as " + o.Root.Path(BadRecordPath)
					res.Wrote = append(res.Wrote, o.Root.Path(BadRecordPath))
				}
			}
		}
		res.Warnings = append(res.Warnings, msg)
		prev = nil
	}
	salt := NewSalt()
	if prev != nil {
		salt = prev.Salt
	}
	d := Settings(Input{Metadata: o.Metadata, ImageDefaultUser: ImageDefaultUser(o.Root), Salt: salt})
	kept := prev != nil && prev.InstanceID == o.InstanceID
	if d.UserDataBroken && kept && prev.DefaultUser != "" {
		// The user-data cannot say whom the metadata's keys are for:
		// the user it named when it last could.
		d = Settings(Input{Metadata: o.Metadata, ImageDefaultUser: prev.DefaultUser, Salt: salt})
	}
	res.Warnings = append(res.Warnings, d.Warnings...)
	rec := &Record{Version: 1, Salt: salt, InstanceID: o.InstanceID, Source: o.Metadata.Source,
		Settings: maps.Clone(d.Settings), CloudInit: d.CloudInit, Keys: map[string][]string{},
		DefaultUser: d.DefaultUser, UserDataKeys: d.UserDataKeys}
	if d.UserDataBroken && kept {
		rec.UserDataKeys = prev.UserDataKeys
	}

	switch {
	case o.Redacted && !o.NewInstance && prev != nil:
		res.Baseline = "the metadata is redacted after each read (vmware.redact): a kept instance cannot tell a change from the redaction, so nothing is compared"
		return res, nil
	case o.Placeholder && !o.NewInstance:
		res.Baseline = "the instance ID is a placeholder, no identity: a clone of this disk cannot be told from this instance, so nothing is compared"
		return res, nil
	case o.NewInstance:
		res.Baseline = "a new instance: cloud-init applies the metadata itself at this boot; recorded for the next boots"
		// cloud-init's ssh and users_groups modules put these keys in
		// place at this boot: they are the metadata's, but for a key
		// already there (a clone, or a reset of a used disk), which a
		// person put there unless the record of the instance before
		// says the metadata did; cloud-init leaves it as it is.
		for user, keys := range d.Keys {
			had := map[string]bool{}
			if a, err := LookupUser(o.Root, user); err == nil {
				if file, err := AuthorizedKeysFile(o.Root, a); err == nil {
					for _, fp := range KeysPresent(o.Root, a, file, keys) {
						had[fp] = true
					}
				}
			}
			if prev != nil {
				for _, fp := range prev.Keys[user] {
					delete(had, fp)
				}
			}
			var fps []string
			for _, fp := range Fingerprints(keys) {
				if !had[fp] {
					fps = append(fps, fp)
				}
			}
			if len(fps) > 0 {
				rec.Keys[user] = fps
			}
		}
	case prev == nil || prev.InstanceID != o.InstanceID:
		res.Baseline = "no record of an earlier boot of this instance: nothing to compare; recorded for the next boots"
		// The metadata's keys already in place came from it.
		for user, keys := range d.Keys {
			a, err := LookupUser(o.Root, user)
			if err != nil {
				continue
			}
			file, err := AuthorizedKeysFile(o.Root, a)
			if err != nil {
				continue
			}
			if fps := KeysPresent(o.Root, a, file, keys); len(fps) > 0 {
				rec.Keys[user] = fps
			}
		}
	default:
		res.Changed = Compare(prev.Settings, d.Settings)
		for u, fps := range prev.Keys {
			rec.Keys[u] = fps
		}
		apply(ctx, o, log, res, prev, rec, d)
	}

	wrote, err := rec.Save(o.Root)
	if err != nil {
		return res, fmt.Errorf("saving the record of this boot's metadata: %w", err)
	}
	if wrote {
		res.Wrote = append(res.Wrote, o.Root.Path(RecordPath))
	}
	return res, nil
}

// apply carries each change of a kept instance to the machine.
func apply(ctx context.Context, o Options, log *slog.Logger, res *Result, prev, rec *Record, d Desired) {
	keep := func(setting string) { // not applied: try again at the next boot
		if v, ok := prev.Settings[setting]; ok {
			rec.Settings[setting] = v
		} else {
			delete(rec.Settings, setting)
		}
	}
	fail := func(setting string, err error) {
		keep(setting)
		res.Failed = append(res.Failed, setting+": "+err.Error())
		log.Error("changed setting not applied", "setting", setting, "err", err)
	}
	byCloudInit := false
	held := false
	if d.UserDataBroken {
		// Said loudly: a limit or a typo must not pass for "nothing
		// changed" when the document may change a password or a key.
		msg := "user-data: a #cloud-config that cannot be read (see the warnings): nothing it grants is applied, and a change it makes to passwords, users or their keys is held until it can be read; keys removed from the meta-data are still removed"
		res.Warnings = append(res.Warnings, msg)
		log.Warn("user-data cannot be read: its changes to passwords, users and keys are held", "warnings", d.Warnings)
	}
	for _, c := range res.Changed {
		r := Lookup(c.Setting)
		switch {
		case d.UserDataBroken && strings.HasPrefix(c.Setting, "keys:") && c.Kind != "removed":
			// What the user-data grants is unknown, and withheld; what
			// the meta-data no longer grants is revoked all the same.
			keep(c.Setting)
			revokeHeld(o, log, res, prev, rec, d, c.Setting)
		case d.UserDataBroken && (strings.HasPrefix(c.Setting, "keys:") || strings.HasPrefix(c.Setting, "password:") || strings.HasPrefix(c.Setting, "user-data")):
			// A typo in the user-data is no removal of what it names:
			// compared again with the last good one once it decodes.
			keep(c.Setting)
			if !held {
				held = true
				res.Waiting = append(res.Waiting, "user-data: a #cloud-config that does not decode (see the warnings); its users, keys, passwords and settings are left as they are until it does")
			}
		case strings.HasPrefix(c.Setting, "keys:") && c.Kind == "removed":
			// The metadata names the user no more (ciuser renamed): its
			// keys stay, or the rename would lock the admin out before
			// the new user exists.
			res.Applied = append(res.Applied, c.Setting+": the metadata names this user no more; its keys are left as they are")
		case strings.HasPrefix(c.Setting, "keys:"):
			applyKeys(o, log, res, prev, rec, d, c.Setting, fail)
		case strings.HasPrefix(c.Setting, "password:"):
			applyPassword(ctx, o, log, res, d, c.Setting, fail)
		case c.Setting == "network" && o.NetworkByCloudInit:
			res.Waiting = append(res.Waiting, "network: network.owner is cloud-init, which applies a network config at a new instance only (its default update events)")
		case r.Applier == ByCloudInit:
			byCloudInit = true
			res.Applied = append(res.Applied, c.Setting+": by cloud-init at this boot ("+r.How+")")
		case r.Applier == BySeedkeeper:
			res.Applied = append(res.Applied, c.Setting+": by seedkeeper ("+r.How+")")
		default:
			res.Waiting = append(res.Waiting, c.Setting+": "+r.How)
		}
	}
	if prev.CloudInit == d.CloudInit {
		return
	}
	// The seed cloud-init reads changed: have it read it again.
	dropped, err := DropCache(o.Root, o.InstanceID)
	if err != nil {
		rec.CloudInit = prev.CloudInit
		res.Failed = append(res.Failed, "cloud-init's cache: "+err.Error())
		log.Error("cloud-init will not read the new seed", "err", err)
		return
	}
	if dropped {
		res.Wrote = append(res.Wrote, o.Root.Path(CachePath(o.InstanceID)))
		msg := "the seed cloud-init reads changed: its cached datasource was removed, so it reads the seed again for the same instance"
		if !byCloudInit {
			msg += " (no setting it applies on a kept instance changed)"
		}
		res.Applied = append(res.Applied, msg)
		log.Info("cloud-init's cached datasource removed: it reads the new seed at this boot", "instance_id", o.InstanceID)
	}
}

// revokeHeld applies, for a keys setting while the user-data cannot be
// read, the removals alone: a key of the receipt that the meta-data no
// longer names and that the last readable user-data did not name is
// removed; nothing is added, and the keys the user-data named stay (it may
// name them still). The setting's digest is kept, so that the whole set is
// compared again once the user-data can be read.
func revokeHeld(o Options, log *slog.Logger, res *Result, prev, rec *Record, d Desired, setting string) {
	user := strings.TrimPrefix(setting, "keys:")
	wait := func(why string) {
		res.Waiting = append(res.Waiting, setting+": held while the user-data cannot be read; "+why)
	}
	if d.KeysPartial[user] {
		wait("a key of the meta-data was dropped as unusable, so none is removed")
		return
	}
	now, named := Fingerprints(d.Keys[user]), prev.UserDataKeys[user]
	var revoke, stay []string
	for _, fp := range prev.Keys[user] {
		if slices.Contains(now, fp) || slices.Contains(named, fp) {
			stay = append(stay, fp)
		} else {
			revoke = append(revoke, fp)
		}
	}
	if len(revoke) == 0 {
		wait("no key the meta-data put in place was removed from it")
		return
	}
	a, err := LookupUser(o.Root, user)
	if err != nil {
		wait("the user cannot be looked up: " + err.Error())
		return
	}
	if a.UID == 0 {
		wait("a uid 0 account, whose keys cloud-init's disable_root governs")
		return
	}
	file, err := AuthorizedKeysFile(o.Root, a)
	if err == nil {
		var out KeysOutcome
		out, err = ApplyKeys(o.Root, a, file, nil, revoke)
		if err == nil {
			if len(stay) > 0 {
				rec.Keys[user] = stay
			} else {
				delete(rec.Keys, user)
			}
			if out.Wrote {
				res.Wrote = append(res.Wrote, out.File)
			}
			res.Applied = append(res.Applied, fmt.Sprintf("%s: %d removed from %s, the keys the meta-data no longer names (seedkeeper); nothing added while the user-data cannot be read", setting, out.Removed, out.File))
			log.Warn("keys removed from the meta-data revoked; the user-data's are held", "user", user, "removed", out.Removed, "file", out.File)
			return
		}
	}
	res.Failed = append(res.Failed, setting+": "+err.Error())
	log.Error("a key removed from the meta-data could not be revoked", "user", user, "err", err)
}

// Lines are the status lines of the result: what changed, what was
// applied, what waits for a new instance, each one line; "" for none.
func (r *Result) Lines() (changed, applied, waiting string) {
	var ch []string
	for _, c := range r.Changed {
		ch = append(ch, c.Setting+" "+c.Kind)
	}
	j := func(s []string) string { return strings.Join(slices.Clip(s), "; ") }
	return j(ch), j(append(slices.Clip(r.Applied), prefix("FAILED ", r.Failed)...)), j(r.Waiting)
}

func prefix(p string, s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = p + v
	}
	return out
}

// applyKeys writes the authorized keys of a changed "keys:USER" setting
// the metadata grants, and records what it put there.
func applyKeys(o Options, log *slog.Logger, res *Result, prev, rec *Record, d Desired, setting string, fail func(string, error)) {
	user := strings.TrimPrefix(setting, "keys:")
	a, err := LookupUser(o.Root, user)
	if errors.Is(err, ErrNoUser) {
		res.Waiting = append(res.Waiting, setting+": the user does not exist; cloud-init creates users at the first boot of an instance")
		return
	} else if err != nil {
		fail(setting, err)
		return
	}
	if a.UID == 0 {
		// cloud-init's disable_root decides what a key of root
		// may do (by default only print whom to log in as);
		// seedkeeper writing it plain would bypass that.
		res.Waiting = append(res.Waiting, setting+": a uid 0 account, whose keys cloud-init's disable_root governs at the first boot of an instance; not written")
		return
	}
	file, err := AuthorizedKeysFile(o.Root, a)
	if err != nil {
		fail(setting, err)
		return
	}
	receipt, held := prev.Keys[user], []string(nil)
	if d.KeysPartial[user] {
		// A key was dropped as unusable: the set is not all the
		// metadata means, so only additions are made, and the
		// keys it put there stay its own.
		wanted := Fingerprints(d.Keys[user])
		receipt, held = nil, nil
		for _, fp := range prev.Keys[user] {
			if slices.Contains(wanted, fp) {
				receipt = append(receipt, fp)
			} else {
				held = append(held, fp)
			}
		}
	}
	out, err := ApplyKeys(o.Root, a, file, d.Keys[user], receipt)
	if err != nil {
		fail(setting, err)
		return
	}
	if len(held) > 0 {
		out.Receipt = slices.Compact(slices.Sorted(slices.Values(append(out.Receipt, held...))))
	}
	if len(out.Receipt) > 0 {
		rec.Keys[user] = out.Receipt
	} else {
		delete(rec.Keys, user)
	}
	if out.Wrote {
		res.Wrote = append(res.Wrote, out.File)
	}
	note := ""
	if d.KeysPartial[user] {
		note = "; a key of the metadata was dropped as unusable (see the warnings), so none was removed"
	}
	res.Applied = append(res.Applied, fmt.Sprintf("%s: %d added, %d removed in %s (seedkeeper)%s", setting, out.Added, out.Removed, out.File, note))
	log.Info("authorized keys applied", "user", user, "added", out.Added, "removed", out.Removed, "file", out.File)
}

// applyPassword sets the password of a changed "password:USER" setting.
func applyPassword(ctx context.Context, o Options, log *slog.Logger, res *Result, d Desired, setting string, fail func(string, error)) {
	user := strings.TrimPrefix(setting, "password:")
	p, ok := d.Passwords[user]
	switch {
	case !ok:
		res.Applied = append(res.Applied, setting+": no longer in the metadata; the password stays as it is, as cloud-init leaves it")
		return
	case p.Random:
		res.Waiting = append(res.Waiting, setting+": a random password is made once, at the first boot of an instance")
		return
	}
	if _, err := LookupUser(o.Root, user); errors.Is(err, ErrNoUser) {
		res.Waiting = append(res.Waiting, setting+": the user does not exist; cloud-init creates users at the first boot of an instance")
		return
	}
	if err := SetPassword(ctx, o.Run, o.Root, p, d.Expire); err != nil {
		fail(setting, err)
		return
	}
	how := "set"
	if d.Expire {
		how = "set, and expired (chpasswd.expire)"
	}
	res.Applied = append(res.Applied, setting+": "+how+" (seedkeeper)")
	log.Info("password applied", "user", user, "hashed", p.Hashed, "expire", d.Expire)
}
