package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/safetext"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// identityPinUsage is the part of "seedkeeper identity --help" about pin.
const identityPinUsage = `
pin records cloud-init's current instance ID as the pin of this machine
(its DMI product_uuid), as the first boot would. The package's postinst
runs it on a running system (not in a chroot or an image build), so that
a VM that gets seedkeeper after its first boot keeps its ID, and a copy of
its disk made before seedkeeper first boots is recognised as another
machine. It never replaces a pin, and pins nothing on a sealed image, when
cloud-init has not run, or when the machine identity cannot be read.
`

// runIdentityPin implements "seedkeeper identity pin".
func runIdentityPin(root sysroot.Root, asJSON bool, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "seedkeeper identity pin: %s\n", safetext.Escape(err.Error()))
		return exitError
	}
	mid, err := identity.ReadMachineIdentity(root)
	if err != nil {
		return fail(err)
	}
	st, out, err := identity.Pin(root, mid, time.Time{})
	if err != nil {
		return fail(err)
	}
	if asJSON {
		b, err := json.MarshalIndent(struct {
			SchemaVersion int                 `json:"schema_version"`
			Outcome       identity.PinOutcome `json:"outcome"`
			State         *identity.State     `json:"state"`
		}{identitySchemaVersion, out, st}, "", "  ")
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	switch out {
	case identity.Pinned:
		fmt.Fprintf(stdout, "Pinned cloud-init's instance ID %s for this machine (%s).\n", safetext.Escape(st.InstanceID), safetext.Escape(st.MachineID))
	case identity.AlreadyPinned:
		fmt.Fprintf(stdout, "Already pinned: %s for machine %s; left as it is.\n", safetext.Escape(st.InstanceID), safetext.Escape(st.MachineID))
	case identity.NothingToPin:
		fmt.Fprintln(stdout, "Nothing pinned: cloud-init has not run here; the first boot decides the instance ID.")
	case identity.NoMachineIdentity:
		fmt.Fprintf(stdout, "Nothing pinned: no machine identity could be read (%s missing, or a placeholder every clone shares).\n", identity.ProductUUIDPath)
	case identity.SealedImage:
		fmt.Fprintln(stdout, "Nothing pinned: the image is sealed; the first boot of each clone decides its instance ID.")
	}
	return exitOK
}
