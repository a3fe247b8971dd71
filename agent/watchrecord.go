package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// WatchRecordPath is where seedkeeper watch records what it did after
// boot, for "seedkeeper status": the guestinfo keys it set again and the
// hot-added NICs it applied. It is on tmpfs (/run), beside seedkeeper's
// other records of the running boot, because all of it is about this
// boot: the addresses and NICs of an earlier boot say nothing true now,
// and a new lease costs no write to the disk. It also names its boot, for
// a root whose /run outlives a boot (--root, a /run that is not tmpfs).
const WatchRecordPath = "/run/seedkeeper/watch.json"

// Bounds of a WatchRecord: a machine with many hotplug events (a NIC
// added and removed all day, an apply that keeps failing) does not grow
// it without limit.
const (
	// WatchKeepEvents is how many of its last events a NIC keeps.
	WatchKeepEvents = 8
	// WatchKeepNICs is how many NICs are kept; beyond it, the NIC whose
	// last event is the oldest is dropped.
	WatchKeepNICs = 64
	// watchErrorMax bounds an error's first line, in bytes.
	watchErrorMax = 256
	// maxWarnings bounds the warnings about one record.
	maxWarnings = 10
	// WatchKeepCustomizations is how many customizations are kept, and
	// watchCustomizationLines how many lines of each, of at most
	// watchLineMax bytes.
	WatchKeepCustomizations = 4
	watchCustomizationLines = 32
	watchLineMax            = 1024
)

// watchRecordVersion is the Version of the record this seedkeeper writes.
const watchRecordVersion = 1

// WatchRecord is what seedkeeper watch did in one boot.
type WatchRecord struct {
	Version int `json:"version"`
	// BootID is the kernel's ID of the boot the watch ran in; "" when
	// there was none to read.
	BootID string `json:"boot_id,omitempty"`
	// Guestinfo holds, per key the watch set (VMware only), what it last
	// set and the last failure, sorted by key.
	Guestinfo []WatchGuestinfo `json:"guestinfo,omitempty"`
	// Hotplug holds, per hot-added NIC, its last WatchKeepEvents events,
	// sorted by MAC.
	Hotplug []WatchNIC `json:"hotplug,omitempty"`
	// Customization holds the last WatchKeepCustomizations
	// customizations handed over while the machine ran (a VMware spec),
	// oldest first.
	Customization []WatchCustomization `json:"customization,omitempty"`
}

// WatchCustomization is what the watch did with one customization
// handed over while the machine ran.
type WatchCustomization struct {
	At time.Time `json:"at"`
	// Lines say what was done, one thing each, in seedkeeper's words.
	Lines []string `json:"lines"`
	// Failed says that it was not applied as a whole, and Why the first
	// reason (one of its lines); a record written before Why was kept
	// has Failed alone.
	Failed bool   `json:"failed,omitempty"`
	Why    string `json:"why,omitempty"`
}

// WatchGuestinfo is one guestinfo key the watch kept current.
type WatchGuestinfo struct {
	// Key is the whole key, "guestinfo.local-ipv4".
	Key string `json:"key"`
	// Value is the value last set, and At when; empty when no set
	// succeeded yet.
	Value string    `json:"value,omitempty"`
	At    time.Time `json:"at,omitzero"`
	// Failed is the last set that failed, when no set has succeeded
	// since.
	Failed *WatchFailure `json:"failed,omitempty"`
}

// WatchFailure is a guestinfo set that failed.
type WatchFailure struct {
	Value string    `json:"value"`
	At    time.Time `json:"at"`
	// Error is the first line of the error.
	Error string `json:"error"`
	// RetryAt is when the key is tried again at the earliest (the
	// back-off); zero when it is not tried again, as what was to be set
	// is no longer wanted (the address went, or the VMX holds the one
	// wanted).
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// WatchNIC is one hot-added NIC and its last events, oldest first.
type WatchNIC struct {
	MAC    string       `json:"mac"`
	Events []WatchEvent `json:"events"`
}

// WatchEvent is what became of one apply of a NIC, of giving up on it,
// or of its removal.
type WatchEvent struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
	// Result is hotplug.Applied, Partial, Failed, GaveUp or Removed.
	Result string `json:"result"`
	// Error is the first line of why, "" when applied or removed.
	Error string `json:"error,omitempty"`
}

// Last is the NIC's last event.
func (n *WatchNIC) Last() WatchEvent { return n.Events[len(n.Events)-1] }

// Key returns the entry of key ("guestinfo.local-ipv4"), nil when the
// watch did not set it (or r is nil).
func (r *WatchRecord) Key(key string) *WatchGuestinfo {
	if r == nil {
		return nil
	}
	for i := range r.Guestinfo {
		if r.Guestinfo[i].Key == key {
			return &r.Guestinfo[i]
		}
	}
	return nil
}

// ThisBoot reports whether r is the running boot's, whose ID is current
// (CurrentBootID), or, when that is not known, the boot of the status
// record, whose ID is statusBoot. When neither can be compared the record
// is taken as this boot's, as Status.ThisBoot does.
func (r *WatchRecord) ThisBoot(current, statusBoot string) bool {
	switch {
	case r.BootID == "":
		return true
	case current != "":
		return r.BootID == current
	case statusBoot != "":
		return r.BootID == statusBoot
	}
	return true
}

// watchKeys are the guestinfo keys the watch sets.
var watchKeys = []string{"guestinfo." + sourceduty.GuestinfoLocalIPv4, "guestinfo." + sourceduty.GuestinfoLocalIPv6}

var watchResults = []string{hotplug.Applied, hotplug.Partial, hotplug.Failed, hotplug.GaveUp, hotplug.Removed}

// ParseWatchRecord reads a record seedkeeper watch wrote. It fails when
// the whole is not one (not JSON of its form, another version, a boot ID
// that is not one): nothing of it can be trusted then. An entry with a
// value that is not of its kind (a key the watch does not set, a MAC that
// is not one) is left out with a warning, and the rest kept. A record
// longer than the bounds is cut to them. No error or warning quotes the
// input.
func ParseWatchRecord(b []byte) (*WatchRecord, []string, error) {
	var r WatchRecord
	if err := json.Unmarshal(b, &r); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, nil, fmt.Errorf("not JSON (at byte %d)", se.Offset)
		case errors.As(err, &te):
			// Value is the JSON kind, and for a number the number
			// itself ("number 1.5"): only the kind is said.
			kind, _, _ := strings.Cut(te.Value, " ")
			if te.Field != "" {
				return nil, nil, fmt.Errorf("%s is a JSON %s, not of its kind", te.Field, kind)
			}
			return nil, nil, fmt.Errorf("a JSON %s, not an object", kind)
		}
		return nil, nil, errors.New("a value is not of its kind (a time that is not one)")
	}
	if r.Version != watchRecordVersion {
		return nil, nil, fmt.Errorf("version %d, not %d, the one this seedkeeper reads", r.Version, watchRecordVersion)
	}
	if r.BootID != "" {
		id, err := ParseBootID([]byte(r.BootID))
		if err != nil {
			return nil, nil, err
		}
		r.BootID = id
	}
	var warn []string
	keys := r.Guestinfo[:0]
	for i, g := range r.Guestinfo {
		if why := g.check(); why != "" {
			warn = append(warn, fmt.Sprintf("guestinfo entry %d: %s; left out", i+1, why))
			continue
		}
		if slices.ContainsFunc(keys, func(k WatchGuestinfo) bool { return k.Key == g.Key }) {
			warn = append(warn, fmt.Sprintf("guestinfo entry %d: %s again; left out", i+1, g.Key))
			continue
		}
		keys = append(keys, g)
	}
	r.Guestinfo = keys
	nics := r.Hotplug[:0]
	seen := make(map[string]bool) // a file of many NICs is not compared pair by pair
	for i, n := range r.Hotplug {
		mac, err := net.ParseMAC(n.MAC)
		if err != nil || len(mac) != 6 {
			warn = append(warn, fmt.Sprintf("hotplug entry %d: not an ethernet MAC address; left out", i+1))
			continue
		}
		n.MAC = mac.String()
		if seen[n.MAC] {
			warn = append(warn, fmt.Sprintf("hotplug entry %d: %s again; left out", i+1, n.MAC))
			continue
		}
		evs := n.Events[:0]
		for j, ev := range n.Events {
			if why := ev.check(); why != "" {
				warn = append(warn, fmt.Sprintf("hotplug entry %d (%s), event %d: %s; left out", i+1, n.MAC, j+1, why))
				continue
			}
			evs = append(evs, ev)
		}
		if len(evs) == 0 {
			continue
		}
		n.Events = evs[max(0, len(evs)-WatchKeepEvents):]
		seen[n.MAC] = true
		nics = append(nics, n)
	}
	r.Hotplug = nics
	cs := r.Customization[:0]
	for i, c := range r.Customization {
		if why := c.check(); why != "" {
			warn = append(warn, fmt.Sprintf("customization entry %d: %s; left out", i+1, why))
			continue
		}
		cs = append(cs, c)
	}
	r.Customization = cs
	r.trim()
	if len(warn) > maxWarnings {
		warn = append(warn[:maxWarnings], fmt.Sprintf("%d more entries left out", len(warn)-maxWarnings))
	}
	return &r, warn, nil
}

func (g *WatchGuestinfo) check() string {
	if !slices.Contains(watchKeys, g.Key) {
		return "not a key seedkeeper watch sets"
	}
	if g.Value != "" {
		if _, err := netip.ParseAddr(g.Value); err != nil {
			return "the value set is not an IP address"
		}
	}
	if f := g.Failed; f != nil {
		if _, err := netip.ParseAddr(f.Value); err != nil {
			return "the value whose set failed is not an IP address"
		}
		if why := textCheck(f.Error); why != "" {
			return "the error " + why
		}
	}
	switch {
	case g.Value == "" && g.Failed == nil:
		return "neither a value set nor a failure"
	case g.Value != "" && g.At.IsZero(), g.Failed != nil && g.Failed.At.IsZero():
		return "no time"
	}
	return ""
}

func (c *WatchCustomization) check() string {
	switch {
	case c.At.IsZero():
		return "no time"
	case len(c.Lines) == 0 || len(c.Lines) > watchCustomizationLines:
		return fmt.Sprintf("%d lines, not 1 to %d", len(c.Lines), watchCustomizationLines)
	case c.Why != "" && !c.Failed:
		return "a reason it failed, and not failed"
	case len(c.Why) > watchLineMax || !utf8.ValidString(c.Why) || strings.ContainsAny(c.Why, "\r\n"):
		return fmt.Sprintf("why is not one line of UTF-8 text of at most %d bytes", watchLineMax)
	}
	for i, l := range c.Lines {
		if l == "" || len(l) > watchLineMax || !utf8.ValidString(l) || strings.ContainsAny(l, "\r\n") {
			return fmt.Sprintf("line %d is not one line of UTF-8 text of 1 to %d bytes", i+1, watchLineMax)
		}
	}
	return ""
}

func (ev *WatchEvent) check() string {
	switch {
	case ev.Name == "" || len(ev.Name) > maxLinkName:
		return "not a link name"
	case !slices.Contains(watchResults, ev.Result):
		return "not a result seedkeeper watch records"
	case (ev.Result == hotplug.Applied || ev.Result == hotplug.Removed) && ev.Error != "":
		return ev.Result + ", with an error"
	case ev.Result != hotplug.Applied && ev.Result != hotplug.Removed && ev.Error == "":
		return "not applied, with no error"
	}
	if why := textCheck(ev.Error); why != "" {
		return "the error " + why
	}
	if ev.At.IsZero() {
		return "no time"
	}
	return ""
}

// maxLinkName is the longest name the kernel gives a link (IFNAMSIZ
// less its NUL). A name in the record is only printed, escaped: its
// length is all that is checked.
const maxLinkName = 15

// textCheck says what is wrong with an error line, "" when nothing is.
func textCheck(s string) string {
	switch {
	case len(s) > watchErrorMax:
		return fmt.Sprintf("is %d bytes, more than %d", len(s), watchErrorMax)
	case !utf8.ValidString(s):
		return "is not UTF-8"
	case strings.ContainsAny(s, "\r\n"):
		return "is more than one line"
	}
	return ""
}

// trim cuts r to WatchKeepNICs, dropping the NICs whose last event is the
// oldest, and to WatchKeepCustomizations, and sorts it.
func (r *WatchRecord) trim() {
	if n := len(r.Customization); n > WatchKeepCustomizations {
		r.Customization = slices.Delete(r.Customization, 0, n-WatchKeepCustomizations)
	}
	if len(r.Hotplug) > WatchKeepNICs {
		slices.SortStableFunc(r.Hotplug, func(a, b WatchNIC) int { return b.Last().At.Compare(a.Last().At) })
		r.Hotplug = r.Hotplug[:WatchKeepNICs]
	}
	slices.SortFunc(r.Hotplug, func(a, b WatchNIC) int { return strings.Compare(a.MAC, b.MAC) })
	slices.SortFunc(r.Guestinfo, func(a, b WatchGuestinfo) int { return strings.Compare(a.Key, b.Key) })
}

// ReadWatchRecord reads the record at WatchRecordPath under root, never
// through a link, bounded. The error wraps fs.ErrNotExist when the watch
// has recorded nothing; any other says what is wrong and where, without
// quoting the file.
func ReadWatchRecord(root sysroot.Root) (*WatchRecord, []string, error) {
	b, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), WatchRecordPath, fsutil.SmallFile)
	if err != nil {
		return nil, nil, err
	}
	r, warn, err := ParseWatchRecord(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", root.Path(WatchRecordPath), err)
	}
	for i, w := range warn {
		warn[i] = root.Path(WatchRecordPath) + ": " + w
	}
	return r, warn, nil
}

// firstLine is the first line of err, cut to watchErrorMax bytes (at a
// character), "" for nil.
func firstLine(err error) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return cutText(strings.TrimSuffix(s, "\r"), watchErrorMax)
}

// cutText is s as valid UTF-8, cut to limit bytes (at a character).
func cutText(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > limit {
		cut := limit - len("…")
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// watchRecorder keeps the WatchRecord of one watch run and writes it
// whenever it changes. It is safe for concurrent use: the hotplug loop
// and the guestinfo reconcile both record.
type watchRecorder struct {
	root sysroot.Root
	log  *slog.Logger
	now  func() time.Time
	// bootLinks are the NICs boot applied (Status.Network.Links): their
	// apply as the watch starts is boot's work, on status's Network line.
	bootLinks []string
	// after, when not nil, is called after each write of the record.
	after func()

	mu      sync.Mutex
	rec     WatchRecord
	saved   []byte // what WatchRecordPath holds, as far as known
	failing bool   // the last write failed (logged once)
}

// newWatchRecorder starts the record of this boot: a watch restarted in
// the same boot goes on from what it recorded before; a record of another
// boot, or one that does not parse, is replaced at the first write.
func newWatchRecorder(root sysroot.Root, log *slog.Logger) *watchRecorder {
	w := &watchRecorder{root: root, log: log, now: time.Now,
		rec: WatchRecord{Version: watchRecordVersion, BootID: CurrentBootID(root)}}
	if old, _, err := ReadWatchRecord(root); err == nil && w.rec.BootID != "" && old.BootID == w.rec.BootID {
		w.rec = *old
	}
	return w
}

// stamp is now, to the second, without the monotonic reading.
func (w *watchRecorder) stamp() time.Time { return w.now().Truncate(time.Second).Round(0) }

// Published records that key ("guestinfo.local-ipv4") was set to value.
func (w *watchRecorder) Published(key, value string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	g := w.key(key)
	g.Value, g.At, g.Failed = value, w.stamp(), nil
	w.save()
}

// SetFailed records that setting key to value failed with err, and is
// tried again at retry at the earliest.
func (w *watchRecorder) SetFailed(key, value string, err error, retry time.Time) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.key(key).Failed = &WatchFailure{Value: value, At: w.stamp(), Error: firstLine(err), RetryAt: retry.Truncate(time.Second).Round(0)}
	w.save()
}

// RetryEnded records that key, whose set failed, is not tried again:
// what it was to be set to is no longer wanted. The failure is kept.
func (w *watchRecorder) RetryEnded(key string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if g := w.rec.Key(key); g != nil && g.Failed != nil {
		g.Failed.RetryAt = time.Time{}
		w.save()
	}
}

// Customized records a customization handed over while the machine
// ran, its lines and why cut to the record's bounds.
func (w *watchRecorder) Customized(lines []string, why string) {
	if w == nil {
		return
	}
	oneLine := func(l string) string {
		return cutText(strings.NewReplacer("\r", " ", "\n", " ").Replace(l), watchLineMax)
	}
	c := WatchCustomization{Failed: why != "", Why: oneLine(why)}
	for _, l := range lines[:min(len(lines), watchCustomizationLines)] {
		if l = oneLine(l); l != "" {
			c.Lines = append(c.Lines, l)
		}
	}
	if len(c.Lines) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c.At = w.stamp()
	w.rec.Customization = append(w.rec.Customization, c)
	w.rec.trim()
	w.save()
}

func (w *watchRecorder) key(key string) *WatchGuestinfo {
	if g := w.rec.Key(key); g != nil {
		return g
	}
	w.rec.Guestinfo = append(w.rec.Guestinfo, WatchGuestinfo{Key: key})
	w.rec.trim()
	return w.rec.Key(key)
}

// hotplug records what became of a NIC.
func (w *watchRecorder) hotplug(o hotplug.Outcome) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.IndexFunc(w.rec.Hotplug, func(n WatchNIC) bool { return n.MAC == o.MAC })
	if i < 0 && o.AtStart && o.Result == hotplug.Applied && slices.Contains(w.bootLinks, o.Name) {
		// A NIC boot applied, applied again as the watch starts, is not
		// repeated. Once something of it is recorded (a failed apply at
		// start), what follows is recorded too, or its last result
		// would stay the failure.
		return
	}
	ev := WatchEvent{Name: o.Name, At: w.stamp(), Result: o.Result, Error: firstLine(o.Err)}
	if i < 0 {
		w.rec.Hotplug = append(w.rec.Hotplug, WatchNIC{MAC: o.MAC})
		i = len(w.rec.Hotplug) - 1
	}
	n := &w.rec.Hotplug[i]
	n.Events = append(n.Events, ev)
	if len(n.Events) > WatchKeepEvents {
		n.Events = slices.Delete(n.Events, 0, len(n.Events)-WatchKeepEvents)
	}
	w.rec.trim()
	w.save()
}

// save writes the record when it differs from what was written last:
// atomically, never through a link, mode 0600 as status.json (it keeps
// error text: a guestinfo tool's words, the kernel's). A failure is
// logged once until a write works again; the watch goes on.
func (w *watchRecorder) save() {
	b, err := json.MarshalIndent(&w.rec, "", "  ")
	if err != nil {
		return
	}
	b = append(b, '\n')
	if bytes.Equal(b, w.saved) {
		return
	}
	if err := fsutil.WriteFileIn(string(w.root), WatchRecordPath, b, 0o600); err != nil {
		if !w.failing {
			w.log.Warn("watch: recording what the watch did for seedkeeper status", "err", err)
		}
		w.failing = true
		return
	}
	if w.failing {
		w.log.Info("watch: recording what the watch did works again")
	}
	w.failing = false
	w.saved = b
	if w.after != nil {
		w.after()
	}
}
