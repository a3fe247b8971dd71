package hotplug

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/vishvananda/netns"

	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// Only returns a copy of cfg that keeps, of its interfaces, those whose
// MAC is one of macs, and all of its global routes and DNS. Applied through
// netcfg/apply it touches only those NICs: links the copy does not mention
// are not owned, and their receipt entries are kept as they are.
func Only(cfg *netcfg.Config, macs []string) *netcfg.Config {
	if cfg == nil {
		return nil
	}
	want := make(map[string]bool, len(macs))
	for _, m := range macs {
		want[normMAC(m)] = true
	}
	out := &netcfg.Config{Routes: cfg.Routes, DNS: cfg.DNS}
	for _, i := range cfg.Interfaces {
		if m := normMAC(i.MAC); m != "" && want[m] {
			out.Interfaces = append(out.Interfaces, i)
		}
	}
	return out
}

func normMAC(s string) string {
	hw, err := net.ParseMAC(s)
	if err != nil {
		return ""
	}
	return hw.String()
}

// NetlinkApplier returns an ApplyFunc that applies, through netcfg/apply in
// the network namespace ns (0 or -1: the current one), the interfaces of the
// configuration with the given MACs and nothing else (see Only). allow is
// checked again by the apply. The receipt of what seedkeeper added is read
// from and saved to receiptPath before and after each apply; an unreadable
// receipt fails the apply rather than forgetting what to clean up.
func NetlinkApplier(ns int, allow Allowlist, receiptPath string, log *slog.Logger) ApplyFunc {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, cfg *netcfg.Config, macs []string) error {
		h, err := openApply(ns)
		if err != nil {
			return fmt.Errorf("opening the network namespace: %w", err)
		}
		defer h.Close()
		unlock, err := apply.LockReceipt(receiptPath)
		if err != nil {
			return err
		}
		defer unlock()
		rc, err := apply.LoadReceipt(receiptPath)
		if err != nil {
			return err
		}
		p, err := h.Plan(ctx, Only(cfg, macs), allow.Allows, rc)
		if err != nil {
			return err
		}
		for _, n := range p.Notes {
			log.Info("hotplug: plan: " + n)
		}
		res, applyErr := h.Apply(ctx, p)
		for _, o := range res.Ops {
			if o.Err == nil {
				log.Info("hotplug: " + o.Op.String())
			} else {
				log.Warn("hotplug: "+o.Op.String()+" failed", "err", o.Err)
			}
		}
		if _, err := res.Receipt.Save(receiptPath); err != nil {
			return fmt.Errorf("saving the receipt: %w", err)
		}
		return applyErr
	}
}

func openApply(ns int) (*apply.Handle, error) {
	if ns > 0 {
		return apply.OpenAt(netns.NsHandle(ns))
	}
	return apply.Open()
}
