package datasource

import (
	"regexp"

	"github.com/seedkeeper/seedkeeper/internal/dmi"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// dmiKernelNames maps the dmidecode key names usable in __dmi.<key>__ to
// the files in /sys/class/dmi/id (cloud-init's DMIDECODE_TO_KERNEL).
var dmiKernelNames = map[string]string{
	"baseboard-asset-tag":     "board_asset_tag",
	"baseboard-manufacturer":  "board_vendor",
	"baseboard-product-name":  "board_name",
	"baseboard-serial-number": "board_serial",
	"baseboard-version":       "board_version",
	"bios-release-date":       "bios_date",
	"bios-vendor":             "bios_vendor",
	"bios-version":            "bios_version",
	"chassis-asset-tag":       "chassis_asset_tag",
	"chassis-manufacturer":    "chassis_vendor",
	"chassis-serial-number":   "chassis_serial",
	"chassis-version":         "chassis_version",
	"system-manufacturer":     "sys_vendor",
	"system-product-name":     "product_name",
	"system-serial-number":    "product_serial",
	"system-uuid":             "product_uuid",
	"system-version":          "product_version",
}

var dmiVar = regexp.MustCompile(`__dmi\.([^_]+)__`)

// substDMI replaces each __dmi.<key>__ in s with that DMI value read under
// root (whitespace-trimmed; empty when unreadable). Unknown keys are left
// as they are and returned in unknown.
func substDMI(root sysroot.Root, s string) (out string, unknown []string) {
	out = dmiVar.ReplaceAllStringFunc(s, func(m string) string {
		key := dmiVar.FindStringSubmatch(m)[1]
		file, ok := dmiKernelNames[key]
		if !ok {
			unknown = append(unknown, key)
			return m
		}
		return dmi.Value(root, file)
	})
	return out, unknown
}
