package netcfg

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxDriverName is the longest kernel driver name: ETHTOOL_GDRVINFO
// reports it in a 32-byte NUL-terminated field.
const MaxDriverName = 31

// CheckDriverName reports whether name can be the name of a kernel
// network driver as ETHTOOL_GDRVINFO reports it, which is what a driver
// allowlist is matched against: 1 to MaxDriverName bytes of ASCII letters
// (either case), digits, '_' and '-'. That is the kernel's alphabet: a
// driver reports its module name (KBUILD_MODNAME: a C identifier, so
// letters, digits, '_') or its own DRV_NAME string, which adds '-'
// ("ne2k-pci", "xen-netfront"); nothing makes either lower-case, so a
// capital is accepted rather than closing the gate on a real name.
// Matching is exact: "E1000" never matches the e1000 driver. Anything
// else (a space, a comma, a glob character, a control character) is not
// what drivers are named with and would change the meaning of the lists
// the name is written into. The error describes the name, never quotes
// it.
func CheckDriverName(name string) error {
	if name == "" {
		return errors.New("empty driver name")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || c == '_' || c == '-' {
			continue
		}
		r, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Errorf("driver name has %U at byte %d (allowed: A-Z a-z 0-9 _ -)", r, i+1)
	}
	if len(name) > MaxDriverName {
		return fmt.Errorf("driver name is %d bytes long, more than %d", len(name), MaxDriverName)
	}
	return nil
}
