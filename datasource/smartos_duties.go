package datasource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
)

// The file a SmartOS host watches in a zone it provisions: renamed to
// provisionSuccess once the metadata was read, it tells the host that the
// zone came up and is to be kept, as cloud-init's SmartOS datasource does
// it (_set_provisioned).
const (
	provisioningPath = "/var/svc/provisioning"
	provisionSuccess = "/var/svc/provision_success"
)

// smartOSDuties are what boot does for SmartOS beyond its read: once the
// seed is written, tell the host that the zone is provisioned (what
// cloud-init's SmartOS datasource did once it had read the metadata; with
// its NoCloud, boot does), in Extra.Provision.
func smartOSDuties(_ *Metadata, h *sourceduty.Host) sourceduty.Duties {
	return sourceduty.Duties{AfterSeed: func(_ context.Context, x *sourceduty.Extra) {
		msg, err := markProvisioned(h)
		if err != nil {
			msg = "the zone's provisioning state not changed: " + err.Error()
			h.Log.Warn("smartos: " + msg)
		} else if msg != "" {
			h.Log.Info("smartos: " + msg)
		}
		x.Provision = msg
	}}
}

// markProvisioned renames provisioningPath to provisionSuccess under the
// root when it is there, never through a link on the way or of its own.
// It returns what it did for the status ("" when there was nothing to
// do); an error is only logged by the caller: the metadata was read.
func markProvisioned(h *sourceduty.Host) (string, error) {
	fi, err := fsutil.StatIn(string(h.Root), provisioningPath, false)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", provisioningPath, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("%s is a symbolic link: not renamed", provisioningPath)
	}
	if err := fsutil.NoLinkOnTheWayIn(string(h.Root), "/var/svc"); err != nil {
		return "", err
	}
	if err := fsutil.RenameIn(string(h.Root), provisioningPath, provisionSuccess); err != nil {
		return "", err
	}
	return "renamed " + provisioningPath + " to " + provisionSuccess + ": the host keeps the zone", nil
}
