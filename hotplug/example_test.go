package hotplug_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

func ExampleResolveAllowlist() {
	// Config says hotplug.drivers: [virtio_net]; the metadata says
	// nothing; the platform is Proxmox.
	a := hotplug.ResolveAllowlist(
		hotplug.Setting{},
		hotplug.Setting{Set: true, Value: []any{"virtio_net"}},
		"proxmox",
	)
	fmt.Println(a.Allows("virtio_net"), a.Allows("veth"), a.Origin())

	// VMware metadata network-drivers with a typo closes the gate.
	b := hotplug.ResolveAllowlist(hotplug.Setting{Set: true, Value: "vmxnet3,e1000 e"}, hotplug.Setting{}, "vmware")
	fmt.Println(b.Allows("vmxnet3"))
	fmt.Println(b.Reason())

	// Nothing set: the platform's default.
	fmt.Println(hotplug.ResolveAllowlist(hotplug.Setting{}, hotplug.Setting{}, "vmware"))
	// Output:
	// true false config hotplug.drivers
	// false
	// metadata network-drivers: entry 2: driver name has U+0020 at byte 6 (allowed: a-z 0-9 _ -); allowing no driver
	// e1000,e1000e,vlance,vmxnet2,vmxnet3,vrdma (from default for vmware)
}

func ExampleParseDriverList() {
	drivers, err := hotplug.ParseDriverList("virtio_net, e1000")
	fmt.Println(drivers, err)
	_, err = hotplug.ParseDriverList("virtio_net,,e1000")
	fmt.Println(err)
	// Output:
	// [virtio_net e1000] <nil>
	// entry 2: empty driver name
}

// How `seedkeeper watch` runs the watcher: fetch and apply are the
// datasource's re-fetch and netcfg/apply; SIGTERM ends it.
func ExampleWatch() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	allow := hotplug.ResolveAllowlist(hotplug.Setting{}, hotplug.Setting{}, "kvm")
	fetch := func(ctx context.Context) (*netcfg.Config, error) {
		// Re-read the metadata source here; return its parsed network
		// config, or nil when it has none.
		return nil, nil
	}
	w, err := hotplug.New(hotplug.Options{
		Allowlist: allow,
		Fetch:     fetch,
		Apply:     hotplug.NetlinkApplier(0, allow, "/var/lib/seedkeeper/network-receipt.json", slog.Default()),
		Ready:     func() { /* sd_notify READY=1 */ },
		Status:    func(s string) { /* sd_notify STATUS=s */ },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%+v\n", w.Stats())
}
