package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/safetext"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const uninstallHelp = `Usage: seedkeeper uninstall [--root DIR] [--json]

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
/var/lib/seedkeeper are not touched; a purge removes that state, all but
an imported seed that could not be given back, which it keeps. Under
--root every path is reached inside DIR: a link of the image's is never
followed out of it. Running it again changes nothing.

The package's removal runs it (prerm of the .deb, %preun of the .rpm). The
next boot is then plain cloud-init's: it decides the instance ID alone,
from the seed it finds, so a machine whose ID seedkeeper kept stable
across config changes becomes a new instance (new SSH host keys), as it
would without seedkeeper.

There is no way out that keeps the instance ID: a seed holding only the
kept ID would make cloud-init restore its cached datasource on every boot
(its quick instance-id check passes), so a drive's changes would never be
read, and it would render no network (seedkeeper owned it), leaving the
machine without one.

Options:
  --root DIR  work under DIR instead of /
  --json      print what was done as JSON

Exit status: 0 when done (also when files were left), 2 on error, 3 usage.
`

// uninstallSchemaVersion is the version of "uninstall --json" (docs/json.md).
const uninstallSchemaVersion = 1

func runUninstall(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("uninstall", stderr)
	root := flags.String("root", "", "")
	asJSON := flags.Bool("json", false, "")
	if code, ok := parseFlags(flags, args, uninstallHelp, stdout, stderr); !ok {
		return code
	}
	u, err := agent.Uninstall(sysroot.Root(*root))
	for _, l := range u.Left {
		fmt.Fprintf(stderr, "seedkeeper uninstall: left %s\n", safetext.Escape(l))
	}
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper uninstall: %s\n", safetext.Escape(err.Error()))
		return exitError
	}
	if *asJSON {
		b, err := json.MarshalIndent(struct {
			SchemaVersion int `json:"schema_version"`
			*agent.Uninstalled
		}{uninstallSchemaVersion, u}, "", "  ")
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
	return exitOK
}
