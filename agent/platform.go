package agent

import (
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/dmi"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Platform names the hypervisor family from DMI, for the default hotplug
// allowlist: vmware, smartos, proxmox, bhyve, kvm, qemu, or "" when it
// cannot tell.
func Platform(root sysroot.Root) string {
	read := func(name string) string { return strings.ToLower(dmi.Value(root, name)) }
	product, vendor := read("product_name"), read("sys_vendor")
	switch {
	case strings.Contains(product, "vmware") || strings.Contains(vendor, "vmware"):
		return "vmware"
	case strings.HasPrefix(product, "smartdc"):
		return "smartos"
	case strings.Contains(vendor, "bhyve") || strings.Contains(product, "bhyve"):
		return "bhyve"
	case strings.Contains(product, "proxmox"):
		return "proxmox"
	case strings.Contains(vendor, "qemu"):
		return "qemu"
	case strings.Contains(product, "kvm") || strings.Contains(vendor, "kvm"):
		return "kvm"
	}
	return ""
}
