package intent

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// CachePath is where cloud-init keeps the datasource it read for the
// instance id (pickled), under /var/lib/cloud/instances/ with a '/' in
// the ID made '_', as cloud-init names the directory.
func CachePath(id string) string {
	return path.Join(paths.CloudDir, "instances", strings.ReplaceAll(id, "/", "_"), "obj.pkl")
}

// DropCache makes cloud-init read the seed again at this boot, for the
// same instance: it removes the pickled datasource of instance id. Without
// it, cloud-init finds the seed directory's instance-id unchanged and
// restores the datasource of the boot that made the cache, never reading
// the new user-data or meta-data. Without the cache it finds the
// datasource again, sees the same instance ID (not a new instance: no
// per-instance module runs), and regenerates cloud-config.txt from the
// new user-data, from which its per-boot modules (set_hostname,
// update_hostname, update_etc_hosts, bootcmd) work. It reports whether
// there was a cache to remove.
func DropCache(root sysroot.Root, id string) (bool, error) {
	p := CachePath(id)
	if err := fsutil.NoLinkOnTheWayIn(string(root), path.Dir(p)); err != nil {
		return false, fmt.Errorf("cloud-init's cache: %w", err)
	}
	fi, err := fsutil.StatIn(string(root), p, false)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("cloud-init's cache: %w", err)
	case !fi.Mode().IsRegular():
		return false, fmt.Errorf("cloud-init's cache %s is %s, not a file; left alone", root.Path(p), fsutil.Kind(fi.Mode()))
	}
	if err := fsutil.RemoveIn(string(root), p, false); err != nil {
		return false, fmt.Errorf("cloud-init's cache: %w", err)
	}
	return true, nil
}
