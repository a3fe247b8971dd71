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

// receiptVersion is the only receipt format this package reads and writes.
const receiptVersion = 1

// Receipt remembers the addresses and routes seedkeeper added, per link, so
// that a later apply removes only its own stale objects. The zero value and
// nil are empty receipts.
type Receipt struct {
	// Links maps a lower-case colon-separated MAC to what seedkeeper added
	// to that link.
	Links map[string]Added
}

// Added is what seedkeeper added to one link. Routes are in the form the
// kernel reports (destination masked, table 0 for main, metric 1024 for an
// IPv6 route configured without one).
type Added struct {
	Addresses []netip.Prefix
	Routes    []netcfg.Route
}

func (a Added) empty() bool { return len(a.Addresses) == 0 && len(a.Routes) == 0 }

func (r *Receipt) clone() *Receipt {
	c := &Receipt{Links: map[string]Added{}}
	if r == nil {
		return c
	}
	for mac, a := range r.Links {
		c.Links[mac] = Added{Addresses: slices.Clone(a.Addresses), Routes: slices.Clone(a.Routes)}
	}
	return c
}

func (r *Receipt) set(mac string, a Added) {
	if a.empty() {
		delete(r.Links, mac)
		return
	}
	r.Links[mac] = a
}

// record notes the outcome of op: an object added is now ours, an object we
// failed to remove stays ours.
func (r *Receipt) record(op Op, err error) {
	add := op.Kind == AddAddress || op.Kind == AddRoute
	keep := op.Kind == RemoveAddress || op.Kind == RemoveRoute
	if !(add && err == nil || keep && err != nil) {
		return
	}
	a := r.Links[op.MAC]
	if op.Kind == AddAddress || op.Kind == RemoveAddress {
		if !slices.Contains(a.Addresses, op.Address) {
			a.Addresses = append(a.Addresses, op.Address)
		}
	} else if !slices.Contains(a.Routes, op.Route) {
		a.Routes = append(a.Routes, op.Route)
	}
	r.set(op.MAC, a)
}

// The JSON form: {"version":1,"links":{"<mac>":{"addresses":[...],"routes":[...]}}}.
type receiptFile struct {
	Version int                  `json:"version"`
	Links   map[string]linkAdded `json:"links"`
}

type linkAdded struct {
	Addresses []netip.Prefix `json:"addresses,omitempty"`
	Routes    []routeJSON    `json:"routes,omitempty"`
}

type routeJSON struct {
	To     netip.Prefix `json:"to"`
	Via    netip.Addr   `json:"via,omitzero"`
	Metric int          `json:"metric,omitempty"`
	Table  int          `json:"table,omitempty"`
}

// Marshal returns the receipt's JSON document, sorted so that the same
// receipt always gives the same bytes.
func (r *Receipt) Marshal() []byte {
	f := receiptFile{Version: receiptVersion, Links: map[string]linkAdded{}}
	if r != nil {
		for mac, a := range r.Links {
			if a.empty() {
				continue
			}
			var la linkAdded
			la.Addresses = slices.SortedFunc(slices.Values(a.Addresses), func(x, y netip.Prefix) int {
				return cmp.Or(x.Addr().Compare(y.Addr()), x.Bits()-y.Bits())
			})
			rs := slices.SortedFunc(slices.Values(a.Routes), compareRoutes)
			for _, rt := range rs {
				la.Routes = append(la.Routes, routeJSON{To: rt.To, Via: rt.Via, Metric: rt.Metric, Table: rt.Table})
			}
			f.Links[mac] = la
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		panic("apply: marshalling receipt: " + err.Error()) // only plain data
	}
	return append(b, '\n')
}

func compareRoutes(x, y netcfg.Route) int {
	return cmp.Or(
		x.To.Addr().Compare(y.To.Addr()), x.To.Bits()-y.To.Bits(),
		x.Via.Compare(y.Via), x.Metric-y.Metric, x.Table-y.Table)
}

// ParseReceipt reads a receipt document. Anything it does not understand is
// an error naming the field: a receipt decides what gets deleted, so it is
// never guessed at.
func ParseReceipt(data []byte) (*Receipt, error) {
	var f receiptFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.Version != receiptVersion {
		return nil, fmt.Errorf("version: %d is not supported (want %d)", f.Version, receiptVersion)
	}
	r := &Receipt{Links: map[string]Added{}}
	for _, key := range slices.Sorted(maps.Keys(f.Links)) {
		la := f.Links[key]
		mac := normMAC(key)
		if mac == "" || mac != key {
			return nil, fmt.Errorf("links[%q]: not a lower-case colon-separated MAC", key)
		}
		var a Added
		for i, p := range la.Addresses {
			if !p.IsValid() {
				return nil, fmt.Errorf("links[%q].addresses[%d]: missing address", key, i)
			}
			a.Addresses = append(a.Addresses, p)
		}
		for i, rj := range la.Routes {
			rt := netcfg.Route{To: rj.To, Via: rj.Via, Metric: rj.Metric, Table: rj.Table}
			switch {
			case !rt.To.IsValid():
				return nil, fmt.Errorf("links[%q].routes[%d].to: missing destination", key, i)
			case rt.Via.IsValid() && rt.Via.Is4() != rt.To.Addr().Is4():
				return nil, fmt.Errorf("links[%q].routes[%d].via: %s is not of the family of %s", key, i, rt.Via, rt.To)
			case rt.Metric < 0 || rt.Table < 0:
				return nil, fmt.Errorf("links[%q].routes[%d]: negative metric or table", key, i)
			case normRoute(rt) != rt:
				return nil, fmt.Errorf("links[%q].routes[%d]: route %s is not in kernel form", key, i, routeString(rt))
			}
			a.Routes = append(a.Routes, rt)
		}
		r.set(mac, a)
	}
	return r, nil
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
