package agent

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// localIPWatch keeps guestinfo.local-ipv4 and guestinfo.local-ipv6
// current while seedkeeper watch runs: boot publishes once, before the
// stack's DHCP client has run, and a hot-added NIC or a new lease changes
// the addresses later. It publishes what cloud-init's pick (localIPs)
// finds whenever that changes, and, as cloud-init, never clears a key.
type localIPWatch struct {
	e    *Env
	tool string

	mu    sync.Mutex
	names []string
	last  map[string]netip.Addr // key -> what the VMX was last given
}

// newLocalIPWatch returns the watch for the boot recorded in st, nil when
// that boot did not publish through a guestinfo tool on this machine.
func (e *Env) newLocalIPWatch(st *Status) *localIPWatch {
	if st == nil || st.Source != datasource.SourceVMware || st.VMware == nil ||
		(st.Transport != datasource.ToolRPCTool && st.Transport != datasource.ToolVMToolsd) ||
		st.Network == nil || st.Network.Action != "applied" {
		return nil
	}
	w := &localIPWatch{e: e, tool: st.Transport, names: slices.Clone(st.Network.Links), last: map[string]netip.Addr{}}
	for _, p := range st.VMware.Published {
		k, v, _ := strings.Cut(strings.TrimPrefix(p, "guestinfo."), " ")
		if a, err := netip.ParseAddr(v); err == nil {
			w.last[k] = a
		}
	}
	return w
}

// setLinks takes the owned links of a new plan (after a hotplug apply).
func (w *localIPWatch) setLinks(p *apply.Plan) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.names = w.names[:0]
	for _, id := range slices.Sorted(maps.Keys(p.OwnedName)) {
		w.names = append(w.names, p.OwnedName[id])
	}
}

// reconcile publishes the addresses picked now that differ from the last
// ones published.
func (w *localIPWatch) reconcile(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.names) == 0 {
		return
	}
	st, err := readOwnedAddrs(w.e.Netns, w.names)
	if err != nil {
		w.e.Log.Debug("vmware: reading the owned links", "err", err)
		return
	}
	v4, v6, _ := localIPs(st)
	for _, p := range []struct {
		key  string
		addr netip.Addr
	}{{GuestinfoLocalIPv4, v4}, {GuestinfoLocalIPv6, v6}} {
		if !p.addr.IsValid() || w.last[p.key] == p.addr {
			continue
		}
		if err := datasource.SetGuestinfo(ctx, w.e.vmwareRunner(), w.tool, p.key, p.addr.String()); err != nil {
			w.e.Log.Warn("vmware: publishing guestinfo."+p.key+" failed", "err", err)
			continue
		}
		w.last[p.key] = p.addr
		w.e.Log.Info("vmware: published guestinfo." + p.key + " " + p.addr.String() + " (the owned addresses changed)")
	}
}

// run reconciles once, then on every address or route change in the
// namespace, until ctx ends. A subscription that cannot be made is
// logged: the keys then stay as boot left them.
func (w *localIPWatch) run(ctx context.Context) {
	events, err := subscribeAddrRoute(ctx, w.e.Netns)
	if err != nil {
		w.e.Log.Warn("vmware: not keeping guestinfo.local-ipv4/-ipv6 current", "err", err)
		return
	}
	w.reconcile(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				if ctx.Err() == nil {
					w.e.Log.Warn("vmware: address events ended; guestinfo.local-ipv4/-ipv6 no longer kept current")
				}
				return
			}
			w.reconcile(ctx)
		}
	}
}
