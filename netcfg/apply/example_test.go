package apply_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"

	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// Diff plans a configuration against live links without touching the
// kernel: here one NIC is still called ens4 and has no address, and a
// docker bridge that the configuration does not name is left alone.
func ExampleDiff() {
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{
		ID: "eth0", Kind: netcfg.Physical, MAC: "bc:24:11:aa:bb:02", Name: "eth0",
		Addresses: []netip.Prefix{netip.MustParsePrefix("192.0.2.10/24")},
		Routes: []netcfg.Route{{
			To: netip.MustParsePrefix("0.0.0.0/0"), Via: netip.MustParseAddr("192.0.2.1"), Metric: 100,
		}},
	}}}
	live := []apply.Link{
		{Index: 2, Name: "ens4", MAC: "bc:24:11:aa:bb:02", MTU: 1500, Driver: "virtio_net"},
		{Index: 3, Name: "docker0", MAC: "02:42:ac:11:00:01", MTU: 1500, Up: true},
	}
	p := apply.Diff(cfg, live, apply.Drivers("virtio_net", "e1000"), nil)
	fmt.Print(p)
	// Output:
	// ens4 (bc:24:11:aa:bb:02): rename ens4 -> eth0
	// eth0 (bc:24:11:aa:bb:02): link up
	// eth0 (bc:24:11:aa:bb:02): add address 192.0.2.10/24
	// eth0 (bc:24:11:aa:bb:02): add route default via 192.0.2.1 metric 100
}

// A whole run: load the receipt, plan against this namespace's links, apply,
// and keep the new receipt.
func ExampleHandle_Apply() {
	const receipt = "/var/lib/seedkeeper/network-receipt.json"
	var cfg *netcfg.Config // from netcfg.Parse; nil means "no network config"

	rc, err := apply.LoadReceipt(receipt)
	if err != nil {
		log.Fatal(err) // corrupt: a person decides
	}
	h, err := apply.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	p, err := h.Plan(ctx, cfg, apply.Drivers("virtio_net", "e1000", "e1000e", "vmxnet3"), rc)
	if err != nil {
		log.Fatal(err)
	}
	res, err := h.Apply(ctx, p)
	if res != nil {
		if _, serr := res.Receipt.Save(receipt); serr != nil {
			log.Print(serr)
		}
	}
	if err != nil {
		log.Print(err) // errors.Is(err, apply.ErrPartial): some operations failed
	}
}
