package datasource

import (
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/dmi"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// platforms are the hypervisor families Platform tells apart, in the order
// their DMI checks are made; each is claimed by one Source (its
// Platforms), which gives its default hotplug driver allowlist.
var platforms = []platformCheck{
	{"vmware", func(p, v string) bool { return strings.Contains(p, "vmware") || strings.Contains(v, "vmware") }},
	{"smartos", func(p, v string) bool { return strings.HasPrefix(p, "smartdc") }},
	{"bhyve", func(p, v string) bool { return strings.Contains(v, "bhyve") || strings.Contains(p, "bhyve") }},
	{"proxmox", func(p, v string) bool { return strings.Contains(p, "proxmox") }},
	{"qemu", func(p, v string) bool { return strings.Contains(v, "qemu") }},
	{"kvm", func(p, v string) bool { return strings.Contains(p, "kvm") || strings.Contains(v, "kvm") }},
}

// platformCheck tells one platform by the lower-cased DMI product name
// and vendor.
type platformCheck struct {
	name  string
	match func(product, vendor string) bool
}

// Platform names the hypervisor family of the machine whose system files
// are under root ("" or "/" is this machine) from its DMI product name and
// vendor: vmware, smartos, bhyve, proxmox, qemu or kvm, or "" when it
// cannot tell. It picks the default hotplug driver allowlist
// (PlatformSource); which source is read is Detect's decision.
func Platform(root string) string {
	r := sysroot.Root(root)
	product := strings.ToLower(dmi.Value(r, "product_name"))
	vendor := strings.ToLower(dmi.Value(r, "sys_vendor"))
	for _, p := range platforms {
		if p.match(product, vendor) {
			return p.name
		}
	}
	return ""
}
