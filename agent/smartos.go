package agent

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

// The file a SmartOS host watches in a zone it provisions: renamed to
// ProvisionSuccess once the metadata was read, it tells the host that the
// zone came up and is to be kept, as cloud-init's SmartOS datasource does
// it (_set_provisioned).
const (
	ProvisioningPath = "/var/svc/provisioning"
	ProvisionSuccess = "/var/svc/provision_success"
)

// markProvisioned renames ProvisioningPath to ProvisionSuccess under the
// root when it is there, never through a link on the way or of its own.
// It returns what it did for the status ("" when there was nothing to
// do); an error is only logged by the caller: the metadata was read.
func (e *Env) markProvisioned() (string, error) {
	fi, err := fsutil.StatIn(string(e.Root), ProvisioningPath, false)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", ProvisioningPath, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("%s is a symbolic link: not renamed", ProvisioningPath)
	}
	if err := fsutil.NoLinkOnTheWayIn(string(e.Root), "/var/svc"); err != nil {
		return "", err
	}
	if err := fsutil.RenameIn(string(e.Root), ProvisioningPath, ProvisionSuccess); err != nil {
		return "", err
	}
	return "renamed " + ProvisioningPath + " to " + ProvisionSuccess + ": the host keeps the zone", nil
}
