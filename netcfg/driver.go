package netcfg

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// maxDriverName is the longest kernel driver name: ETHTOOL_GDRVINFO
// reports it in a 32-byte NUL-terminated field.
const maxDriverName = 31

// CheckDriverName reports whether name can be the name of a kernel
// network driver as ETHTOOL_GDRVINFO reports it, which is what a driver
// allowlist is matched against: 1 to maxDriverName bytes of lower-case
// ASCII letters, digits, '_' and '-' (a module name, or a DRV_NAME string
// such as "ne2k-pci" or "xen-netfront"). A capital is refused, not
// matched: an allowlist with "E1000" or "VMXNET3" is a typo, and a typo
// closes the gate and says why rather than allow a name no NIC reports.
// Anything else (a space, a comma, a glob character, a control
// character) would change the meaning of the lists the name is written
// into. The error describes the name, never quotes it.
func CheckDriverName(name string) error {
	if name == "" {
		return errors.New("empty driver name")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c == '_' || c == '-' {
			continue
		}
		r, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Errorf("driver name has %U at byte %d (allowed: a-z 0-9 _ -)", r, i+1)
	}
	if len(name) > maxDriverName {
		return fmt.Errorf("driver name is %d bytes long, more than %d", len(name), maxDriverName)
	}
	return nil
}
