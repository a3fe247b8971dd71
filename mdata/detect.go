package mdata

import (
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/dmi"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// EnvTransport names the environment variable that forces a transport.
const EnvTransport = "SEEDKEEPER_MDATA"

// ZoneSockets are the sockets a SmartOS zone offers, in the order they are
// tried: LX zones, native zones, and the SDC 6 location.
var ZoneSockets = []string{
	"/native/.zonecontrol/metadata.sock",
	"/.zonecontrol/metadata.sock",
	"/var/run/smartdc/metadata.sock",
}

// DefaultSerialPort is the port a KVM or bhyve guest of this OS reaches the
// host on (COM2).
func DefaultSerialPort() string {
	switch runtime.GOOS {
	case "freebsd":
		return "/dev/cuau1"
	case "netbsd":
		return "/dev/tty01"
	case "openbsd":
		return "/dev/cua01"
	case "windows":
		return "COM2"
	}
	return "/dev/ttyS1"
}

// Detect chooses the transport to the metadata host. In order: an explicit
// transport (the SEEDKEEPER_MDATA variable, or the configuration; the
// caller passes it as forced), a zone socket that exists under root, and
// the serial port when DMI says this is a SmartOS guest ("SmartDC ..."). It
// never picks a serial port otherwise: another vendor's console may sit on
// it. The reason says what decided.
//
// root is the directory that stands for "/" when looking for zone sockets,
// DMI and the serial device, so that detection can be tried against a
// scratch tree; "" (or "/") is the machine's own root.
func Detect(root, forced string) (t Transport, reason string, err error) {
	r := sysroot.Root(root)
	if forced != "" {
		t, err := ParseTransport(forced)
		if err != nil {
			return nil, "", err
		}
		return t, "transport set explicitly", nil
	}
	// Under a root the socket and the serial port are resolved inside
	// it (a link of the image's leads where it would inside the image,
	// never out of it); the transport then reaches what was resolved.
	for _, p := range ZoneSockets {
		fi, err := fsutil.StatIn(root, p, false)
		if err == nil && fi.Mode().Type() == fs.ModeSocket {
			if host, err := fsutil.Resolve(root, p); err == nil {
				return Unix(host), "zone socket " + p + " exists", nil
			}
		}
	}
	product := DMIProductName(root)
	if strings.HasPrefix(product, "SmartDC") {
		dev := DefaultSerialPort()
		if runtime.GOOS != "windows" && !r.IsReal() {
			host, err := fsutil.Resolve(root, dev)
			if err != nil {
				// Missing on the way: named as it is, unless a link
				// of the image's is on the way.
				if lerr := fsutil.NoLinkOnTheWayIn(root, path.Dir(dev)); lerr != nil {
					return nil, "", fmt.Errorf("%w: %s under the root: %v", ErrNoTransport, dev, lerr)
				}
				host = r.Path(dev)
			}
			dev = host
		}
		return Serial(dev), fmt.Sprintf("DMI product name is %q", product), nil
	}
	if product == "" {
		return nil, "", fmt.Errorf("%w: no zone socket and no DMI product name; set %s to choose one", ErrNoTransport, EnvTransport)
	}
	return nil, "", fmt.Errorf("%w: no zone socket and DMI product name %q is not SmartDC; set %s to choose one", ErrNoTransport, product, EnvTransport)
}

// DMIProductName returns the SMBIOS system product name, or "" when it
// cannot be read: /sys/class/dmi/id/product_name under root on Linux, the
// kernel environment on FreeBSD, the registry on Windows. root is as for
// Detect: "" is the machine's own root, and under any other root only the
// sysfs file is read.
func DMIProductName(root string) string {
	r := sysroot.Root(root)
	if v, err := dmi.Read(r, "product_name"); err == nil {
		return strings.TrimSpace(v)
	}
	if !r.IsReal() {
		return ""
	}
	return strings.TrimSpace(platformProductName())
}
