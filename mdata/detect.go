package mdata

import (
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/dmi"
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
func Detect(root sysroot.Root, forced string) (t Transport, reason string, err error) {
	if forced != "" {
		t, err := ParseTransport(forced)
		if err != nil {
			return nil, "", err
		}
		return t, "transport set explicitly", nil
	}
	for _, p := range ZoneSockets {
		fi, err := os.Lstat(root.Path(p))
		if err == nil && fi.Mode().Type() == fs.ModeSocket {
			return Unix(root.Path(p)), "zone socket " + p + " exists", nil
		}
	}
	product := DMIProductName(root)
	if strings.HasPrefix(product, "SmartDC") {
		dev := DefaultSerialPort()
		if runtime.GOOS != "windows" {
			dev = root.Path(dev)
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
// kernel environment on FreeBSD, the registry on Windows.
func DMIProductName(root sysroot.Root) string {
	if v, err := dmi.Read(root, "product_name"); err == nil {
		return strings.TrimSpace(v)
	}
	if !root.IsReal() {
		return ""
	}
	return strings.TrimSpace(platformProductName())
}
