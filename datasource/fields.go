package datasource

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/seedkeeper/seedkeeper/internal/pubkey"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// One bad field degrades that field, not the boot: the readers drop (or
// normalise) a value that cannot be used, say so in Metadata.Warnings and
// the log, and go on with the rest.

// Limits on what a source may hand over (a document's once YAML aliases
// are expanded).
const (
	// MaxMetaDataExpanded bounds one meta-data document (NoCloud
	// meta-data, VMware guestinfo metadata): a key whose value would
	// take the total beyond it is dropped.
	MaxMetaDataExpanded = 1 << 20
	// MaxPublicKey bounds one SSH public key line (sshd's own limit on a
	// key blob is 16 KiB).
	MaxPublicKey = 16 << 10
	// MaxPublicKeys bounds all of them together.
	MaxPublicKeys = 256 << 10
	// MaxInstanceID is the longest instance ID: cloud-init makes a
	// directory of that name.
	MaxInstanceID = 255
	// MaxSmartOSTotal bounds the values of one SmartOS read taken
	// together (every key seedkeeper reads, as received). The mdata
	// client bounds each value; without a total a hostile host could make
	// boot hold fifteen of the largest values at once. It is the bound of
	// one NoCloud seed file.
	MaxSmartOSTotal = 16 << 20
)

// CheckInstanceID reports why id cannot be handed to cloud-init as an
// instance ID, or nil when it can. cloud-init keeps the ID in a one-line
// file and makes /var/lib/cloud/instances/<id>, so the ID must be a
// single file name: not empty, not "." or "..", no "/", at most
// MaxInstanceID bytes, valid UTF-8 with no control or line-separator
// character (netcfg.CheckLine), and printable (unicode.IsPrint: no
// format character such as a bidirectional override, no space other than
// U+0020). The error describes the problem without quoting the ID.
// (Python's splitlines, which cloud-init's readers use, also ends a line
// at U+0085, U+2028 and the C0 separators.)
func CheckInstanceID(id string) error {
	switch {
	case id == "":
		return errors.New("instance ID is empty")
	case id == "." || id == "..":
		return errors.New("instance ID is \".\" or \"..\", not a directory name")
	case len(id) > MaxInstanceID:
		return fmt.Errorf("instance ID is %d bytes long, more than %d", len(id), MaxInstanceID)
	case strings.Contains(id, "/"):
		return fmt.Errorf("instance ID has a \"/\" at byte %d", strings.Index(id, "/"))
	}
	if err := netcfg.CheckLine(id); err != nil {
		return fmt.Errorf("instance ID: %w", err)
	}
	// status and identity show print the ID to a terminal: no
	// bidirectional override, zero-width or other non-printing character.
	for i, r := range id {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("instance ID: non-printing character %U at byte %d", r, i)
		}
	}
	return nil
}

// warn records a dropped or normalised field.
func (md *Metadata) warn(log *slog.Logger, msg string) {
	md.Warnings = append(md.Warnings, msg)
	if log != nil {
		log.Warn(msg)
	}
}

// networkNotes records what the network config parser left out (one bad
// field degrades that field; the rest of the config is used), each under
// the name of the document it came from ("" when the note names it).
func (md *Metadata) networkNotes(log *slog.Logger, doc string) {
	if md.Network == nil {
		return
	}
	for _, n := range md.Network.Notes {
		if doc != "" {
			n = doc + ": " + n
		}
		md.warn(log, n)
	}
}

// usableInstanceID returns the reported ID when cloud-init can use it; an
// unusable one is recorded as dropped and "" returned, so that the caller
// treats it as absent (the platform default applies).
func (md *Metadata) usableInstanceID(log *slog.Logger, field, id string) string {
	if id == "" {
		return ""
	}
	if err := CheckInstanceID(id); err != nil {
		md.warn(log, fmt.Sprintf("%s dropped: %v", field, err))
		return ""
	}
	return id
}

// setHostname keeps a hostname that can be written on one line; another
// is dropped (cloud-init then keeps its own default).
func (md *Metadata) setHostname(log *slog.Logger, field, name string) {
	if err := netcfg.CheckLine(name); err != nil {
		md.warn(log, fmt.Sprintf("%s dropped: %v", field, err))
		return
	}
	md.Hostname = name
}

// setPublicKeys keeps the keys FilterPublicKeys keeps, after turning a
// TAB between the fields of a key (sshd accepts it) into a space. where[i]
// names key i for the warnings.
func (md *Metadata) setPublicKeys(log *slog.Logger, keys []string, where []string) {
	name := func(i int) string {
		if i < len(where) {
			return where[i]
		}
		return fmt.Sprintf("public key %d", i)
	}
	keys = slices.Clone(keys)
	for i, k := range keys {
		if strings.Contains(k, "\t") {
			keys[i] = strings.ReplaceAll(k, "\t", " ")
			md.warn(log, name(i)+": a TAB between fields was replaced by a space")
		}
	}
	var dropped []pubkey.Dropped
	md.PublicKeys, dropped = pubkey.Filter(keys)
	md.PublicKeysDropped = len(dropped)
	for _, d := range dropped {
		md.warn(log, fmt.Sprintf("%s dropped: %v", name(d.Index), d.Err))
	}
}

// boundMetaData drops, in key order, every key of a meta-data document
// whose value, YAML aliases expanded, would take the document beyond
// MaxMetaDataExpanded, so that whatever re-encodes it (the JSON of fetch,
// the seed written for cloud-init) stays small. It returns a warning per
// dropped key; doc names the document.
func boundMetaData(doc string, m map[string]any) []string {
	var warnings []string
	left := MaxMetaDataExpanded
	for _, k := range slices.Sorted(maps.Keys(m)) {
		n, ok := yamlx.Size(m[k], left-len(k))
		if !ok {
			delete(m, k)
			warnings = append(warnings, fmt.Sprintf("%s key %s dropped: expands to more than %d bytes (YAML aliases?)", doc, safeName(k), MaxMetaDataExpanded))
			continue
		}
		left -= n + len(k)
	}
	return warnings
}

// checkUsable reports the first field of md that a writer would refuse:
// what the readers hand on must be writable as it is. For the fuzz
// targets.
func checkUsable(md *Metadata) error {
	if md.InstanceID != "" {
		if err := CheckInstanceID(md.InstanceID); err != nil {
			return err
		}
	}
	if err := netcfg.CheckLine(md.Hostname); err != nil {
		return fmt.Errorf("hostname: %w", err)
	}
	kept, dropped := pubkey.Filter(md.PublicKeys)
	if len(dropped) > 0 {
		d := dropped[0]
		return fmt.Errorf("public key %d: %w (%d bytes)", d.Index, d.Err, len(md.PublicKeys[d.Index]))
	}
	if !slices.Equal(kept, md.PublicKeys) {
		return fmt.Errorf("public keys: %d kept of %d: a blank key or one with space around it", len(kept), len(md.PublicKeys))
	}
	if n, ok := yamlx.Size(md.MetaData, 2*MaxMetaDataExpanded); !ok {
		return fmt.Errorf("meta-data expands to %d bytes", n)
	}
	if _, err := json.Marshal(md.MetaData); err != nil {
		return fmt.Errorf("meta-data is not JSON: %w", err)
	}
	return nil
}
