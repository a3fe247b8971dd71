package apply

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"slices"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// Receipt formats: version 1 has links only; version 2 adds stacked
// links. A receipt without stacked links is written as version 1, byte for
// byte what earlier versions wrote.
const (
	receiptVersion        = 1
	receiptVersionStacked = 2
)

// Receipt remembers the addresses and routes seedkeeper added, per link, so
// that a later apply removes only its own stale objects. The zero value and
// nil are empty receipts.
type Receipt struct {
	// Links maps a lower-case colon-separated MAC to what seedkeeper added
	// to that link.
	Links map[string]Added
	// Stacked maps the name of a bond, VLAN or bridge (which has no MAC of
	// its own) to what seedkeeper added to it.
	Stacked map[string]Added
}

// Added is what seedkeeper added to one link. Routes are in the form the
// kernel reports (destination masked, table 0 for main, metric 1024 for an
// IPv6 route configured without one).
type Added struct {
	Addresses []netip.Prefix
	Routes    []netcfg.Route
	// Rules are the policy routing rules added for the link's
	// configuration (in normRule's form).
	Rules []netcfg.Rule
	// Made is set for a bond, VLAN or bridge seedkeeper created: only such
	// a link is adopted when it exists already. Index is its ifindex (0
	// when not known): a link of that name with another index is one
	// someone made after seedkeeper's was deleted.
	Made  bool
	Index int
	// AltNames are the alternative names seedkeeper gave the NIC (its
	// name before a rename): only those are given up for another link
	// to take.
	AltNames []string
}

func (a Added) empty() bool {
	return !a.Made && len(a.Addresses) == 0 && len(a.Routes) == 0 && len(a.Rules) == 0 && len(a.AltNames) == 0
}

func (r *Receipt) clone() *Receipt {
	c := &Receipt{Links: map[string]Added{}, Stacked: map[string]Added{}}
	if r == nil {
		return c
	}
	for mac, a := range r.Links {
		c.Links[mac] = Added{Addresses: slices.Clone(a.Addresses), Routes: slices.Clone(a.Routes), Rules: slices.Clone(a.Rules), AltNames: slices.Clone(a.AltNames)}
	}
	for name, a := range r.Stacked {
		c.Stacked[name] = Added{Addresses: slices.Clone(a.Addresses), Routes: slices.Clone(a.Routes), Rules: slices.Clone(a.Rules), Made: a.Made, Index: a.Index}
	}
	return c
}

func (r *Receipt) set(mac string, a Added) { setAdded(r.Links, mac, a) }

func setAdded(m map[string]Added, key string, a Added) {
	if a.empty() {
		delete(m, key)
		return
	}
	m[key] = a
}

// get and setFor read and write the entry of an owned link: by MAC for a
// NIC, by name for a stacked link.
func (r *Receipt) get(o *owned) Added {
	if o.kind != "" {
		return r.Stacked[o.name]
	}
	return r.Links[o.link.MAC]
}

func (r *Receipt) setFor(o *owned, a Added) {
	if o.kind != "" {
		setAdded(r.Stacked, o.name, a)
		return
	}
	r.set(o.link.MAC, a)
}

// recordAltName notes that the NIC with this MAC now holds (held true)
// or no longer holds an alternative name seedkeeper gave it.
func (r *Receipt) recordAltName(mac, name string, held bool) {
	a := r.Links[mac]
	i := slices.Index(a.AltNames, name)
	switch {
	case held && i < 0:
		a.AltNames = append(slices.Clone(a.AltNames), name)
	case !held && i >= 0:
		a.AltNames = slices.Delete(slices.Clone(a.AltNames), i, i+1)
	default:
		return
	}
	r.set(mac, a)
}

// record notes the outcome of op: an object added is now ours, an object we
// failed to remove stays ours, a link created is one we made.
func (r *Receipt) record(op Op, err error) {
	if op.Kind == CreateLink && err == nil && op.Spec != nil {
		if r.Stacked == nil {
			r.Stacked = map[string]Added{}
		}
		a := r.Stacked[op.Spec.Name]
		a.Made, a.Index = true, op.Index
		r.Stacked[op.Spec.Name] = a
		return
	}
	add := op.Kind == AddAddress || op.Kind == AddRoute || op.Kind == AddRule
	keep := op.Kind == RemoveAddress || op.Kind == RemoveRoute || op.Kind == RemoveRule
	if !(add && err == nil || keep && err != nil) {
		return
	}
	m, key := r.Links, op.MAC
	if op.LinkKind != "" {
		m, key = r.Stacked, op.Name
	}
	a := m[key]
	if op.Kind == AddAddress || op.Kind == RemoveAddress {
		if !slices.Contains(a.Addresses, op.Address) {
			a.Addresses = append(a.Addresses, op.Address)
		}
	} else if op.Kind == AddRule || op.Kind == RemoveRule {
		if !slices.Contains(a.Rules, op.Rule) {
			a.Rules = append(a.Rules, op.Rule)
		}
	} else if !slices.Contains(a.Routes, op.Route) {
		a.Routes = append(a.Routes, op.Route)
	}
	setAdded(m, key, a)
}

// The JSON form: {"version":1,"links":{"<mac>":{"addresses":[...],"routes":[...]}}},
// with "version":2 and "stacked":{"<name>":{...,"made":true,"index":N}}
// when there are stacked links seedkeeper made (N its ifindex) or added to.
type receiptFile struct {
	Version int                  `json:"version"`
	Links   map[string]linkAdded `json:"links"`
	Stacked map[string]linkAdded `json:"stacked,omitempty"`
}

type linkAdded struct {
	Addresses []netip.Prefix `json:"addresses,omitempty"`
	Routes    []routeJSON    `json:"routes,omitempty"`
	Rules     []ruleJSON     `json:"rules,omitempty"`
	// Made: seedkeeper created the link (stacked links only), Index:
	// its ifindex.
	Made  bool `json:"made,omitempty"`
	Index int  `json:"index,omitempty"`
	// AltNames: the alternative names seedkeeper gave the link.
	AltNames []string `json:"alt_names,omitempty"`
}

type routeJSON struct {
	To     netip.Prefix `json:"to"`
	Via    netip.Addr   `json:"via,omitzero"`
	Metric int          `json:"metric,omitempty"`
	Table  int          `json:"table,omitempty"`
	OnLink bool         `json:"on_link,omitempty"`
}

type ruleJSON struct {
	From     netip.Prefix `json:"from,omitzero"`
	To       netip.Prefix `json:"to,omitzero"`
	Table    int          `json:"table"`
	Priority int          `json:"priority,omitempty"`
	Mark     int          `json:"mark,omitempty"`
	TOS      int          `json:"tos,omitempty"`
}

// Marshal returns the receipt's JSON document, sorted so that the same
// receipt always gives the same bytes.
func (r *Receipt) Marshal() []byte {
	f := receiptFile{Version: receiptVersion, Links: map[string]linkAdded{}}
	if r != nil {
		marshalAdded(f.Links, r.Links)
		if len(r.Stacked) > 0 {
			f.Stacked = map[string]linkAdded{}
			marshalAdded(f.Stacked, r.Stacked)
		}
		if len(f.Stacked) > 0 {
			f.Version = receiptVersionStacked
		} else {
			f.Stacked = nil
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		panic("apply: marshalling receipt: " + err.Error()) // only plain data
	}
	return append(b, '\n')
}

func marshalAdded(out map[string]linkAdded, in map[string]Added) {
	for key, a := range in {
		if a.empty() {
			continue
		}
		la := linkAdded{Made: a.Made, Index: a.Index, AltNames: slices.Sorted(slices.Values(a.AltNames))}
		la.Addresses = slices.SortedFunc(slices.Values(a.Addresses), func(x, y netip.Prefix) int {
			return cmp.Or(x.Addr().Compare(y.Addr()), x.Bits()-y.Bits())
		})
		rs := slices.SortedFunc(slices.Values(a.Routes), compareRoutes)
		for _, rt := range rs {
			la.Routes = append(la.Routes, routeJSON{To: rt.To, Via: rt.Via, Metric: rt.Metric, Table: rt.Table, OnLink: rt.OnLink})
		}
		for _, ru := range slices.SortedFunc(slices.Values(a.Rules), compareRules) {
			la.Rules = append(la.Rules, ruleJSON{From: ru.From, To: ru.To, Table: ru.Table, Priority: ru.Priority, Mark: ru.Mark, TOS: ru.TOS})
		}
		out[key] = la
	}
}

func compareRules(x, y netcfg.Rule) int {
	return cmp.Or(x.Priority-y.Priority, x.From.Addr().Compare(y.From.Addr()), x.From.Bits()-y.From.Bits(),
		x.To.Addr().Compare(y.To.Addr()), x.To.Bits()-y.To.Bits(), x.Table-y.Table, x.Mark-y.Mark, x.TOS-y.TOS)
}

func compareRoutes(x, y netcfg.Route) int {
	return cmp.Or(
		x.To.Addr().Compare(y.To.Addr()), x.To.Bits()-y.To.Bits(),
		x.Via.Compare(y.Via), x.Metric-y.Metric, x.Table-y.Table, boolOrder(x.OnLink)-boolOrder(y.OnLink))
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ParseReceipt reads a receipt document. Anything it does not understand is
// an error naming the field: a receipt decides what gets deleted, so it is
// never guessed at.
func ParseReceipt(data []byte) (*Receipt, error) {
	var f receiptFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	switch {
	case f.Version == receiptVersionStacked:
	case f.Version != receiptVersion:
		return nil, fmt.Errorf("version: %d is not supported (want %d or %d)", f.Version, receiptVersion, receiptVersionStacked)
	case f.Stacked != nil:
		return nil, fmt.Errorf("stacked: not part of version %d", receiptVersion)
	}
	r := &Receipt{Links: map[string]Added{}, Stacked: map[string]Added{}}
	for _, key := range slices.Sorted(maps.Keys(f.Links)) {
		mac := normMAC(key)
		if mac == "" || mac != key {
			return nil, fmt.Errorf("links[%q]: not a lower-case colon-separated MAC", key)
		}
		a, err := parseAdded("links", key, f.Links[key])
		if err != nil {
			return nil, err
		}
		r.set(mac, a)
	}
	for _, key := range slices.Sorted(maps.Keys(f.Stacked)) {
		// The kernel's rule, not netcfg.ValidLinkName's narrower one: a
		// receipt written before that narrowed names a link seedkeeper
		// may have added to, and reading it must not fail the sync.
		if !kernelLinkName(key) {
			return nil, fmt.Errorf("stacked[%q]: not a link name", key)
		}
		a, err := parseAdded("stacked", key, f.Stacked[key])
		if err != nil {
			return nil, err
		}
		setAdded(r.Stacked, key, a)
	}
	return r, nil
}

// kernelLinkName reports whether the kernel takes s as a link name: 1 to
// 15 bytes of printable ASCII, no '/', ':' or white space, not "." or "..".
func kernelLinkName(s string) bool {
	if s == "" || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '/' || c == ':' {
			return false
		}
	}
	return true
}

func parseAdded(field, key string, la linkAdded) (Added, error) {
	a := Added{Made: la.Made, Index: la.Index}
	if la.Made && field != "stacked" {
		return a, fmt.Errorf("%s[%q].made: only a stacked link is made", field, key)
	}
	if la.Index < 0 || la.Index != 0 && !la.Made {
		return a, fmt.Errorf("%s[%q].index: only a made link has one, and it is positive", field, key)
	}
	if len(la.AltNames) > 0 && field == "stacked" {
		return a, fmt.Errorf("%s[%q].alt_names: only a NIC is given one", field, key)
	}
	for i, n := range la.AltNames {
		if !kernelLinkName(n) || slices.Contains(a.AltNames, n) {
			return a, fmt.Errorf("%s[%q].alt_names[%d]: not a link name, or one named twice", field, key, i)
		}
		a.AltNames = append(a.AltNames, n)
	}
	for i, p := range la.Addresses {
		if !p.IsValid() {
			return a, fmt.Errorf("%s[%q].addresses[%d]: missing address", field, key, i)
		}
		a.Addresses = append(a.Addresses, p)
	}
	for i, rj := range la.Routes {
		rt := netcfg.Route{To: rj.To, Via: rj.Via, Metric: rj.Metric, Table: rj.Table, OnLink: rj.OnLink}
		switch {
		case !rt.To.IsValid():
			return a, fmt.Errorf("%s[%q].routes[%d].to: missing destination", field, key, i)
		case rt.Via.IsValid() && rt.Via.Is4() != rt.To.Addr().Is4():
			return a, fmt.Errorf("%s[%q].routes[%d].via: %s is not of the family of %s", field, key, i, rt.Via, rt.To)
		case rt.OnLink && !rt.Via.IsValid():
			return a, fmt.Errorf("%s[%q].routes[%d].on_link: only a route with a gateway is", field, key, i)
		case rt.Metric < 0 || rt.Table < 0:
			return a, fmt.Errorf("%s[%q].routes[%d]: negative metric or table", field, key, i)
		case normRoute(rt) != rt:
			return a, fmt.Errorf("%s[%q].routes[%d]: route %s is not in kernel form", field, key, i, routeString(rt))
		}
		a.Routes = append(a.Routes, rt)
	}
	for i, rj := range la.Rules {
		ru := netcfg.Rule{From: rj.From, To: rj.To, Table: rj.Table, Priority: rj.Priority, Mark: rj.Mark, TOS: rj.TOS}
		switch {
		case !ru.From.IsValid() && !ru.To.IsValid():
			return a, fmt.Errorf("%s[%q].rules[%d]: neither from nor to", field, key, i)
		case ru.From.IsValid() && ru.To.IsValid() && ru.From.Addr().Is4() != ru.To.Addr().Is4():
			return a, fmt.Errorf("%s[%q].rules[%d]: from and to of two families", field, key, i)
		case ru.Table <= 0 || ru.Priority < 0 || ru.Mark < 0 || ru.TOS < 0 || ru.TOS > 255:
			return a, fmt.Errorf("%s[%q].rules[%d]: a table, priority, mark or tos out of range", field, key, i)
		case normRule(ru) != ru:
			return a, fmt.Errorf("%s[%q].rules[%d]: rule %s is not in kernel form", field, key, i, ruleString(ru))
		}
		a.Rules = append(a.Rules, ru)
	}
	return a, nil
}

// LoadReceipt reads the receipt at path. A missing file is an empty
// receipt; an unreadable or corrupt one is an error naming the file, and
// the caller decides what to do (never silently start afresh: that would
// forget what to clean up).
func LoadReceipt(path string) (*Receipt, error) {
	data, err := fsutil.ReadFileNoFollow(context.Background(), path, fsutil.SmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return &Receipt{Links: map[string]Added{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading network receipt: %w", err)
	}
	r, err := ParseReceipt(data)
	if err != nil {
		return nil, fmt.Errorf("reading network receipt %s: %w", path, err)
	}
	return r, nil
}

// Save writes the receipt to path atomically, only when its content
// changed, and reports whether it did.
func (r *Receipt) Save(path string) (changed bool, err error) {
	return fsutil.WriteFile(path, r.Marshal(), 0o644)
}
