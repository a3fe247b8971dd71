package mdata

import "golang.org/x/sys/windows/registry"

// platformProductName reads the SMBIOS product name Windows keeps in the
// registry.
func platformProductName() string {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `HARDWARE\DESCRIPTION\System\BIOS`, registry.QUERY_VALUE)
	if err != nil {
		return ""
	}
	defer k.Close()
	v, _, err := k.GetStringValue("SystemProductName")
	if err != nil {
		return ""
	}
	return v
}
