package netcfg

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Stack is the network manager an image runs, which seedkeeper renders the
// persistent configuration of its NICs for.
type Stack string

// The network stacks seedkeeper knows.
const (
	// StackNone: no manager seedkeeper knows is enabled. Static addresses
	// are applied live; DHCP NICs get no lease from anyone.
	StackNone Stack = "none"
	// StackNetworkd: systemd-networkd (also what netplan renders for on
	// Ubuntu and newer Debian). Files in /run/systemd/network.
	StackNetworkd Stack = "networkd"
	// StackNetworkManager: NetworkManager (RHEL-family images, desktops).
	// Keyfiles in /run/NetworkManager/system-connections.
	StackNetworkManager Stack = "networkmanager"
	// StackIfupdown: Debian's ifupdown (/etc/network/interfaces). Stanzas
	// in a directory the image's interfaces file sources.
	StackIfupdown Stack = "ifupdown"
)

// Detection says which stack an image runs and why.
type Detection struct {
	Stack  Stack
	Reason string
	// IfupdownDir is the directory the image's /etc/network/interfaces
	// sources stanzas from (for StackIfupdown), "" when it sources none.
	IfupdownDir string
}

// unitEnabled reports whether a systemd unit is enabled for a target in
// root (a symlink in /etc/systemd/system/*.wants/) or running now
// (runDir exists).
func unitEnabled(root, unit string) bool {
	for _, target := range []string{"multi-user.target", "network-online.target", "graphical.target", "sysinit.target"} {
		if _, err := os.Lstat(filepath.Join(root, "etc/systemd/system", target+".wants", unit)); err == nil {
			return true
		}
	}
	return false
}

// DetectStack looks at the system under root ("/" on a live system) and
// says which network stack it runs. It runs before any of them has
// started (seedkeeper-boot is ordered before network-pre.target), so it
// goes by what is enabled: a unit wanted by a target, or networkd's state
// file. (Not /run/NetworkManager: seedkeeper's own keyfiles make it.)
//
// When several are enabled, NetworkManager wins over systemd-networkd
// (NetworkManager manages every device it is not told to leave alone), and
// both win over ifupdown (which manages only what interfaces names).
func DetectStack(root string) (Detection, error) {
	if root == "" {
		root = "/"
	}
	exists := func(p string) bool {
		_, err := os.Stat(filepath.Join(root, p))
		return err == nil
	}
	switch {
	case unitEnabled(root, "NetworkManager.service") && exists("usr/sbin/NetworkManager"):
		return Detection{Stack: StackNetworkManager, Reason: "NetworkManager.service is enabled"}, nil
	case exists("run/systemd/netif/state"):
		// Not /run/systemd/netif: systemd's tmpfiles make it on every
		// system, networkd or not; networkd writes the state file.
		return Detection{Stack: StackNetworkd, Reason: "systemd-networkd is running"}, nil
	case unitEnabled(root, "systemd-networkd.service"):
		return Detection{Stack: StackNetworkd, Reason: "systemd-networkd.service is enabled"}, nil
	}
	if unitEnabled(root, "networking.service") && (exists("sbin/ifup") || exists("usr/sbin/ifup")) {
		dir, err := IfupdownSourceDir(root)
		if err != nil {
			return Detection{}, err
		}
		d := Detection{Stack: StackIfupdown, Reason: "networking.service (ifupdown) is enabled", IfupdownDir: dir}
		if dir == "" {
			d.Reason += "; /etc/network/interfaces sources no directory, so no stanzas can be added"
		}
		return d, nil
	}
	return Detection{Stack: StackNone, Reason: "no systemd-networkd, NetworkManager or ifupdown is enabled"}, nil
}

// IfupdownSourceDir reads root's /etc/network/interfaces and returns the
// directory its first "source DIR/*" or "source-directory DIR" line names
// (as seen inside root), or "" when it sources no directory. Relative
// paths are relative to /etc/network, as ifupdown takes them.
func IfupdownSourceDir(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, IfupdownInterfaces))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return ParseIfupdownSource(b)
}

// IfupdownInterfaces is ifupdown's main configuration file.
const IfupdownInterfaces = "/etc/network/interfaces"

// ParseIfupdownSource returns the directory the first "source DIR/*" or
// "source-directory DIR" line of an /etc/network/interfaces file names,
// or "" when it sources none (see IfupdownSourceDir).
func ParseIfupdownSource(b []byte) (string, error) {
	const path = IfupdownInterfaces
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		var dir string
		switch f[0] {
		case "source-directory", "source-dir":
			dir = f[1]
		case "source":
			// Only a plain "DIR/*" glob: the stanza file must match it.
			if !strings.HasSuffix(f[1], "/*") || strings.ContainsAny(strings.TrimSuffix(f[1], "/*"), "*?[") {
				continue
			}
			dir = strings.TrimSuffix(f[1], "/*")
		default:
			continue
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join("/etc/network", dir)
		}
		dir = filepath.Clean(dir)
		if !strings.HasPrefix(dir, "/etc/") && !strings.HasPrefix(dir, "/run/") {
			return "", fmt.Errorf("%s line %d: the sourced directory is outside /etc and /run", path, n)
		}
		return dir, nil
	}
	return "", sc.Err()
}
