package identity

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// ProductUUIDPath is the DMI product_uuid, the machine identity of every
// platform but SmartOS (whose sdc:uuid is the VM's UUID, which SmartOS also
// sets as the product_uuid of its hardware VMs).
const ProductUUIDPath = "/sys/class/dmi/id/product_uuid"

// ReadMachineIdentity reads the DMI product_uuid under root, normalised by
// MachineIdentity ("" for a placeholder). A missing file is not an error.
func ReadMachineIdentity(root sysroot.Root) (string, error) {
	b, err := fsutil.ReadFileIn(context.Background(), string(root), ProductUUIDPath, fsutil.TinyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the machine identity: %w", err)
	}
	return MachineIdentity(string(b)), nil
}

// PinOutcome says what Pin did.
type PinOutcome string

// The outcomes of Pin.
const (
	// Pinned: cloud-init's current ID is now pinned for this machine.
	Pinned PinOutcome = "pinned"
	// AlreadyPinned: a pin exists and was left as it is.
	AlreadyPinned PinOutcome = "already-pinned"
	// NothingToPin: cloud-init has not run here, so the first boot
	// decides; nothing was written.
	NothingToPin PinOutcome = "cloud-init-never-ran"
	// NoMachineIdentity: the machine identity cannot be read (or is a
	// placeholder), so a pin could not tell this machine from a clone;
	// nothing was written.
	NoMachineIdentity PinOutcome = "no-machine-identity"
	// SealedImage: the image is sealed; its first boot decides.
	SealedImage PinOutcome = "sealed"
)

// Pin records cloud-init's current instance ID as the pin of this machine
// (machineID, see MachineIdentity), as rule 3 would on seedkeeper's first
// boot, and returns the state and what it did. The package's postinst runs
// it on a running system, so that a VM that gets seedkeeper after its first
// boot keeps its ID, and a copy of its disk made before seedkeeper first
// boots is still recognised as another machine (rule 4).
//
// It never replaces a pin, never pins on a sealed image, and pins nothing
// when cloud-init has not run with a real datasource (its placeholder
// iid-datasource-none, or any DataSourceNone run, is not an identity) or
// the machine identity is unusable. An
// unreadable state file is an error (ErrBadState).
func Pin(root sysroot.Root, machineID string, now time.Time) (*State, PinOutcome, error) {
	st, err := Load(root)
	if err != nil {
		return nil, "", fmt.Errorf("pinning the instance ID: %w", err)
	}
	switch {
	case st != nil && st.InstanceID != "":
		return st, AlreadyPinned, nil
	case ReadSeal(root) != nil:
		return st, SealedImage, nil
	}
	ci, err := ReadCloudInit(root)
	if err != nil {
		return st, "", fmt.Errorf("pinning the instance ID: %w", err)
	}
	// cloud-init's "no datasource" placeholder is not an identity: a VM
	// that only ever ran as DataSourceNone has nothing to keep.
	ciID := ci.Adoptable()
	if ciID == "" {
		return st, NothingToPin, nil
	}
	mid := MachineIdentity(machineID)
	if mid == "" {
		return st, NoMachineIdentity, nil
	}
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC().Truncate(time.Second)
	next := State{}
	if st != nil {
		next = *st
	}
	next.InstanceID, next.MachineID, next.ReportedID = ciID, mid, ciID
	next.Rule, next.RuleName = RuleAdopt, RuleAdopt.String()
	next.PinnedAt, next.ConfirmedAt = now, now
	next.Last = &LastDecision{
		At: now, ReportedID: ciID, InstanceID: ciID, Rule: RuleAdopt, RuleName: RuleAdopt.String(),
		Explanation: fmt.Sprintf("Instance ID %q: seedkeeper was installed on a running system where cloud-init already ran with this ID, so \"seedkeeper identity pin\" pinned it for this machine (%s): installing seedkeeper changes nothing, and a copy of this disk on another machine is a new instance (rule %d, %s).",
			ciID, mid, RuleAdopt, RuleAdopt),
	}
	if _, err := Save(root, &next); err != nil {
		return st, "", fmt.Errorf("pinning the instance ID: %w", err)
	}
	return &next, Pinned, nil
}
