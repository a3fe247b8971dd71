// Package dmi reads the SMBIOS (DMI) attributes the Linux kernel exports
// in /sys/class/dmi/id (product_name, sys_vendor, product_uuid,
// product_serial, ...), under a sysroot.Root so tests and --root runs read
// a scratch folder.
package dmi

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"unicode"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Dir is where the kernel exports the attributes.
const Dir = "/sys/class/dmi/id"

// Read returns the attribute name under root with trailing white space
// (the kernel's newline) removed. A missing attribute is an error wrapping
// fs.ErrNotExist.
func Read(root sysroot.Root, name string) (string, error) {
	b, err := os.ReadFile(root.Path(Dir + "/" + name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("no DMI %s: %w", name, err)
		}
		return "", fmt.Errorf("reading DMI %s: %w", name, err)
	}
	return strings.TrimRightFunc(string(b), unicode.IsSpace), nil
}

// Value returns the attribute name under root with white space trimmed on
// both sides, or "" when it cannot be read.
func Value(root sysroot.Root, name string) string {
	v, _ := Read(root, name)
	return strings.TrimSpace(v)
}
