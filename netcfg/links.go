package netcfg

import (
	"fmt"
	"net/netip"
	"slices"
)

// LinkPlan is what one owned link is configured with: decided once, by
// Config.Plan, for the live apply and for every stack's files, which are
// views of it and never decide again.
type LinkPlan struct {
	*Interface
	// Master is the owned bond or bridge the link is a member of, nil
	// for none; VLANs are the owned VLANs on the link.
	Master *Interface
	VLANs  []*Interface
	// Addresses, Routes (the link's own, then the global routes placed
	// on it) and Rules are what the link carries; a member carries none.
	Addresses []netip.Prefix
	Routes    []Route
	Rules     []Rule
	// DNS is the link's own (a member has none); the global DNS is
	// placed by each stack among the links it renders (placeDNS).
	DNS DNS
}

// Plan decides, for the interfaces for which owned returns true (all of
// them when owned is nil), in configuration order, what each carries;
// notes say what the configuration asks for that no link carries, and
// why:
//
//   - A member of an owned bond or bridge carries no addresses, routes,
//     rules or DNS of its own: the master does. A member of a bond that
//     is not owned is a plain link.
//   - A global route (v1 "route") goes on the first owned link, not a
//     member, with a static address whose subnet holds its gateway; a
//     route with no such link, or with no gateway, is left out: no link
//     is known to reach it.
//   - A link carries an address, route or rule once, however often the
//     configuration gives it.
//   - A route's gateway is on-link (Route.OnLink) when the configuration
//     says so, or when it is not link-local and outside every static
//     address of the link, unless the link may get an address of the
//     gateway's family from DHCP or SLAAC beside static ones (a /32 with
//     the gateway beside it; a DHCP-only link, which networkd takes as
//     on-link too): the kernel refuses such a gateway otherwise.
func (c *Config) Plan(owned func(*Interface) bool) ([]LinkPlan, []string) {
	v := newView(c, owned)
	plans := make([]LinkPlan, len(v.links))
	var notes []string
	for i, ifc := range v.links {
		plans[i] = v.plan(ifc)
		if plans[i].Master != nil && len(ifc.Addresses)+len(ifc.Routes)+len(ifc.RoutingPolicy)+len(ifc.DNS.Nameservers)+len(ifc.DNS.Search) > 0 {
			notes = append(notes, fmt.Sprintf("%s: a member of %s: its own addresses, routes, rules and DNS are left out (the %s carries them)",
				ifc.ID, plans[i].Master.ID, plans[i].Master.Kind))
		}
	}
	for _, r := range c.Routes {
		home := routeHome(plans, r)
		if home == nil {
			notes = append(notes, fmt.Sprintf("route %s: no owned link has an address on the way to its gateway; left out", routeText(r)))
			continue
		}
		if r = home.onLink(r); !slices.Contains(home.Routes, r) {
			home.Routes = append(home.Routes, r)
		}
	}
	return plans, notes
}

// plan is the link's plan before the global routes and DNS are placed:
// its own settings, none for a member.
func (v *view) plan(ifc *Interface) LinkPlan {
	lp := LinkPlan{Interface: ifc, Master: v.master(ifc), VLANs: v.vlans(ifc)}
	if lp.Master == nil {
		lp.Addresses = dedupe(slices.Clone(ifc.Addresses))
		for _, r := range ifc.Routes {
			lp.Routes = append(lp.Routes, lp.onLink(r))
		}
		lp.Routes = dedupe(lp.Routes)
		lp.Rules = dedupe(slices.Clone(ifc.RoutingPolicy))
		lp.DNS = DNS{Nameservers: dedupe(slices.Clone(ifc.DNS.Nameservers)), Search: dedupe(slices.Clone(ifc.DNS.Search))}
	}
	return lp
}

// onLink is r with its gateway on-link where the link needs it (Plan).
func (lp *LinkPlan) onLink(r Route) Route {
	if r.Via.IsValid() && !r.Via.IsUnspecified() && !r.Via.IsLinkLocalUnicast() && !containsAddr(lp.Addresses, r.Via) &&
		(!dynamicFor(lp.Interface, r.Via) || len(lp.Addresses) == 0) {
		r.OnLink = true
	}
	return r
}

// routeHome is the link a global route goes on (Plan), nil for none.
func routeHome(plans []LinkPlan, r Route) *LinkPlan {
	if !r.Via.IsValid() {
		return nil
	}
	for i := range plans {
		if lp := &plans[i]; lp.Master == nil && containsAddr(lp.Addresses, r.Via.Unmap()) {
			return lp
		}
	}
	return nil
}

// placeDNS adds the global DNS to the links of plans it goes on: every
// link, not a member, that can reach a default router (a static gateway,
// DHCP or SLAAC), or every link with addresses if none can. It is the
// resolver's, not a link's: each stack places it among the links it
// renders, so that a stack that leaves a bond to another still gives it
// to the resolver.
func placeDNS(plans []*LinkPlan, dns DNS) {
	var homes []*LinkPlan
	for _, lp := range plans {
		if lp.Master == nil && (hasDefaultRoute(lp.Interface) || lp.DHCP4 || lp.DHCP6 || lp.SLAAC) {
			homes = append(homes, lp)
		}
	}
	if len(homes) == 0 {
		for _, lp := range plans {
			if lp.Master == nil && lp.HasL3() {
				homes = append(homes, lp)
			}
		}
	}
	for _, lp := range homes {
		lp.DNS = DNS{
			Nameservers: dedupe(slices.Concat(lp.DNS.Nameservers, dns.Nameservers)),
			Search:      dedupe(slices.Concat(lp.DNS.Search, dns.Search)),
		}
	}
}

// routeText names a route in a note: its destination and gateway.
func routeText(r Route) string {
	to := r.To.String()
	if r.To.Bits() == 0 {
		to = "default"
	}
	if !r.Via.IsValid() {
		return to + " on-link"
	}
	return to + " via " + r.Via.String()
}
