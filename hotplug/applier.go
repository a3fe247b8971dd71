package hotplug

import (
	"context"
	"log/slog"

	"github.com/vishvananda/netns"

	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// Only returns a copy of cfg that keeps, of its interfaces, those whose
// MAC is one of macs, and all of its global routes and DNS (apply.Only).
func Only(cfg *netcfg.Config, macs []string) *netcfg.Config { return apply.Only(cfg, macs) }

// NetlinkApplier returns an ApplyFunc that applies, through apply.Sync in
// the network namespace ns (0 or -1: the current one), the interfaces of the
// configuration with the given MACs and nothing else (see Only). allow is
// checked again by the apply. The receipt of what seedkeeper added is read
// from and saved to receiptPath before and after each apply; an unreadable
// receipt fails the apply rather than forgetting what to clean up.
func NetlinkApplier(ns int, allow Allowlist, receiptPath string, log *slog.Logger) ApplyFunc {
	return NetlinkApplierThen(ns, allow, receiptPath, log, nil)
}

// NetlinkApplierThen is NetlinkApplier with a step, then, run with the
// receipt still locked after every apply in which no operation failed. It
// gets the plan of the whole configuration (what is owned), made from the
// same reading of the links: the place to render persistent files.
func NetlinkApplierThen(ns int, allow Allowlist, receiptPath string, log *slog.Logger, then func(ctx context.Context, cfg *netcfg.Config, whole *apply.Plan) error) ApplyFunc {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, cfg *netcfg.Config, macs []string) error {
		o := apply.SyncOptions{Receipt: receiptPath, Allow: allow.Allows, Only: macs}
		if macs == nil {
			o.Only = []string{}
		}
		if ns > 0 {
			o.Namespace = netns.NsHandle(ns)
		}
		logged := false
		logOps := func(s *apply.Synced) {
			if logged || s == nil || s.Result == nil {
				return
			}
			logged = true
			for _, n := range s.Plan.Notes {
				log.Info("hotplug: plan: " + n)
			}
			for _, o := range s.Result.Ops {
				if o.Err == nil {
					log.Info("hotplug: " + o.Op.String())
				} else {
					log.Warn("hotplug: "+o.Op.String()+" failed", "err", o.Err)
				}
			}
		}
		o.Locked = func(ctx context.Context, s *apply.Synced) error {
			logOps(s)
			if then == nil || s.Result.Failed() {
				return nil
			}
			return then(ctx, cfg, s.Whole)
		}
		s, err := apply.Sync(ctx, cfg, o)
		logOps(s) // the receipt could not be saved: the ops still ran
		return err
	}
}
