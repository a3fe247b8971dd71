package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/safetext"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const uninstallHelp = `Usage: seedkeeper uninstall [--root DIR] [--keep-instance-id] [--json]

Takes away what seedkeeper wrote for cloud-init and the network stacks, so
that cloud-init sees what it would had seedkeeper never been installed: the
NoCloud seed in /var/lib/cloud/seed/nocloud and its marker, the SmartOS
per-boot scripts and /var/db/mdata-user-data, the network files rendered
for systemd-networkd, NetworkManager and ifupdown (the ifupdown stanza is
persistent), and the no-source gate. A seed a person had put in the seed
directory before seedkeeper first ran is given back, byte for byte.

Only a file that still holds what seedkeeper wrote is removed (the seed
marker's hashes say so; a network file by its name and its first line).
Anything else is left in place and named on stderr, as is
/etc/resolv.conf when seedkeeper wrote it (removing it would end name
resolution now). The live network and seedkeeper's own state in
/var/lib/seedkeeper are not touched. Running it again changes nothing.

The package's removal runs it (prerm of the .deb, %preun of the .rpm). The
next boot is then plain cloud-init's: it decides the instance ID alone,
from the seed it finds, so a machine whose ID seedkeeper kept stable
across config changes becomes a new instance (new SSH host keys), as it
would without seedkeeper.

--keep-instance-id leaves without that: run it before removing the
package. It hands the instance ID cloud-init runs with over to a seed of
cloud-init's own, meta-data holding only that ID (and an empty
user-data), no longer seedkeeper's: cloud-init merges that directory's
meta-data before a cidata drive's, so the drive's hostname, keys,
user-data and network config still apply, under the kept ID. That ID then
stays until that file is deleted, even if the drive names a new one. It
refuses (and removes nothing) when cloud-init has no real instance ID, or
when a person's seed is given back (its own instance-id then counts).

Options:
  --root DIR          work under DIR instead of /
  --keep-instance-id  hand cloud-init's instance ID over (see above)
  --json              print what was done as JSON

Exit status: 0 when done (also when files were left), 2 on error, 3 usage.
`

func runUninstall(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("uninstall", stderr)
	root := flags.String("root", "", "")
	keep := flags.Bool("keep-instance-id", false, "")
	asJSON := flags.Bool("json", false, "")
	if code, ok := parseFlags(flags, args, uninstallHelp, stdout, stderr); !ok {
		return code
	}
	u, err := agent.Uninstall(sysroot.Root(*root), agent.UninstallOptions{KeepInstanceID: *keep})
	for _, l := range u.Left {
		fmt.Fprintf(stderr, "seedkeeper uninstall: left %s\n", safetext.Escape(l))
	}
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper uninstall: %s\n", safetext.Escape(err.Error()))
		return exitError
	}
	if *asJSON {
		b, err := json.MarshalIndent(u, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "seedkeeper uninstall: %v\n", err)
			return exitError
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	for _, p := range u.Removed {
		fmt.Fprintf(stdout, "removed %s\n", safetext.Escape(p))
	}
	for _, p := range u.Restored {
		fmt.Fprintf(stdout, "gave back %s\n", safetext.Escape(p))
	}
	if u.HandedOver != "" {
		fmt.Fprintf(stdout, "kept instance ID %s for cloud-init in %s\n", safetext.Escape(u.HandedOver), safetext.Escape(u.HandoverFiles[0]))
	}
	return exitOK
}
