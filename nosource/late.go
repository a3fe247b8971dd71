package nosource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/seed"
)

// LatePath holds, for `seedkeeper status`, the last sentence Late returned
// to a reader that found a late source in this boot (tmpfs).
const LatePath = "/run/seedkeeper/late-source"

// Boot is what seedkeeper boot recorded about the source it decided on
// (its status.json).
type Boot struct {
	// Ran is false when boot has left no record.
	Ran bool
	// At is when boot decided; Outcome is its outcome ("ok", "partial",
	// "no-source", "error").
	At      time.Time
	Outcome string
	// Source and Transport are the source boot read (empty when it read
	// none), as datasource.Metadata names them.
	Source    string
	Transport string
}

// Found is what a later reader (watch, status) finds now.
type Found struct {
	// Source is the detected source, "" when there is none.
	Source string
	// Transport is the read metadata's Origin.Transport; "" when the
	// reader only detected.
	Transport string
}

// Late reports whether found is a source boot did not decide on: one that
// first appeared after boot decided (a late CD-ROM, a seed written later).
// Nothing may be applied from such a source in this boot: its identity,
// user-data and network all take effect together on the next boot, never
// its network alone now. The sentence says so plainly.
//
// A source is the one boot decided on when its kind is the same and, for
// a source read from seeds (NoCloud), when every seed it is read from now
// was read by boot too (a person's seed directory and its imported copy
// count as one). New content in the same seed (Proxmox regenerating its
// ISO) is not a late source.
func Late(b Boot, found Found) (string, bool) {
	if found.Source == "" {
		return "", false
	}
	now := describe(found.Source, found.Transport)
	const after = "; it takes effect on the next boot, and nothing from it is applied before"
	// A source read from seeds (datasource.Source.Seeds) is told by its
	// seeds: one that appears later is late, new content in one boot read
	// is not.
	seeded := readFromSeeds(found.Source)
	what := "a metadata source"
	if seeded {
		what = "a seed"
	}
	switch {
	case !b.Ran:
		// Boot may still be running, or have failed before saving:
		// "the next boot" would not be true of the first.
		return what + " (" + now + ") is here, but seedkeeper boot has not decided on a source in this boot; nothing from it is applied until seedkeeper boot has run", true
	case b.Source == "" && b.Outcome == "no-source":
		return fmt.Sprintf("%s appeared after boot: boot found no metadata source at %s, and %s is here now%s", what, stamp(b.At), now, after), true
	case b.Source == "":
		return fmt.Sprintf("boot did not decide on a metadata source at %s (outcome %s), and %s is here now%s", stamp(b.At), b.Outcome, now, after), true
	case b.Source != found.Source:
		return fmt.Sprintf("a metadata source appeared after boot: boot decided on %s at %s, and %s is here now%s",
			describe(b.Source, b.Transport), stamp(b.At), now, after), true
	case !seeded || found.Transport == "":
		return "", false
	}
	had := seeds(b.Transport)
	var added []string
	for _, s := range seeds(found.Transport) {
		if !slices.Contains(had, s) {
			added = append(added, s)
		}
	}
	if len(added) == 0 {
		return "", false
	}
	return fmt.Sprintf("a seed appeared after boot: boot read %s from %s at %s, and %s is here now%s",
		b.Source, b.Transport, stamp(b.At), strings.Join(added, ", "), after), true
}

// readFromSeeds reports whether the source named is read from seeds that
// its Origin.Transport lists.
func readFromSeeds(source string) bool {
	s, _ := datasource.Lookup(source)
	return s.Seeds
}

// seeds splits a NoCloud Origin.Transport into the seeds it names, the
// seed directory and seedkeeper's import of it counted as one.
func seeds(transport string) []string {
	var out []string
	for _, s := range strings.Split(transport, ",") {
		if s == "dir:"+seed.ImportDir {
			s = "dir:" + seed.Dir
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func describe(source, transport string) string {
	if transport == "" {
		return source
	}
	return source + " via " + transport
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}

// RecordLate keeps msg in LatePath for `seedkeeper status`.
func RecordLate(root sysroot.Root, msg string) error {
	if err := fsutil.WriteFileIn(string(root), LatePath, []byte(msg+"\n"), 0o644); err != nil {
		return fmt.Errorf("recording the late source: %w", err)
	}
	return nil
}

// ReadLate returns what RecordLate kept in this boot, "" when nothing.
func ReadLate(root sysroot.Root) (string, error) {
	b, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), LatePath, fsutil.SmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the late source record: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
