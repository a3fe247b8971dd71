package identity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Where cloud-init records the datasource of its last run (read only).
const (
	// CloudInitInstanceLink is cloud-init's symlink to the directory of
	// the current instance, /var/lib/cloud/instances/<id>. Its datasource
	// file holds "<class>: <description>", e.g. "DataSourceNone:
	// DataSourceNone" (stages.py _reflect_cur_instance, 22.4 and today).
	CloudInitInstanceLink = paths.CloudInitInstance
	// CloudInitInstanceData is written by every cloud-init run on tmpfs:
	// v1.platform is the datasource's platform type, "none" for
	// DataSourceNone, and v1.instance_id the ID of that run. It is
	// therefore only there after cloud-init ran in the current boot.
	CloudInitInstanceData = "/run/cloud-init/instance-data.json"
)

// noneDatasource is DataSourceNone's class name, and nonePlatform its
// platform type (its dsname, lower-cased) in instance-data.json.
const (
	noneDatasource = "DataSourceNone"
	nonePlatform   = "none"
)

// CloudInit is what cloud-init recorded about its last run on this machine.
type CloudInit struct {
	// ID is the content of /var/lib/cloud/data/instance-id, trimmed; ""
	// when cloud-init has not run here (or left the file empty).
	ID string
	// Datasource is the datasource class of the last run as recorded
	// ("DataSourceNoCloud", "DataSourceNone"), and DatasourceFrom the file
	// that said so; both empty when neither record could be read.
	Datasource     string
	DatasourceFrom string
	// Placeholder says why ID is not an identity (a placeholder, a run
	// with DataSourceNone, an empty file); "" when it is one, or when
	// there is no ID.
	Placeholder string
}

// Adoptable returns the ID cloud-init ran with when it is a real instance
// ID, and "" when there is none or it is a placeholder.
func (c CloudInit) Adoptable() string {
	if c.Placeholder != "" {
		return ""
	}
	return c.ID
}

// ReadCloudInit reads cloud-init's record of its last run under root: the
// instance ID, and the datasource from both places cloud-init keeps it
// (either may be missing or unreadable; the instance's datasource file is
// used first). The error is only for an instance-id file that exists but
// cannot be read.
func ReadCloudInit(root sysroot.Root) (CloudInit, error) {
	var c CloudInit
	data, err := fsutil.ReadFileIn(context.Background(), string(root), CloudInitIDPath, fsutil.TinyFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return c, fmt.Errorf("reading cloud-init's instance ID: %w", err)
	default:
		c.ID = string(bytes.TrimSpace(data))
		if c.ID == "" {
			c.Placeholder = fmt.Sprintf("%s is empty", CloudInitIDPath)
		}
	}
	c.Datasource, c.DatasourceFrom = recordedDatasource(root, c.ID)
	if c.ID == "" {
		return c, nil
	}
	if why, ok := PlaceholderID(c.ID); ok {
		c.Placeholder = why
	} else if c.Datasource == noneDatasource {
		c.Placeholder = fmt.Sprintf("cloud-init ran with no datasource (%s says %s)", c.DatasourceFrom, noneDatasource)
	}
	return c, nil
}

// recordedDatasource returns the datasource class cloud-init recorded for
// its current instance, and the file it came from.
func recordedDatasource(root sysroot.Root, id string) (class, from string) {
	dsFile := CloudInitInstanceLink + "/datasource"
	if b, err := fsutil.ReadFileIn(context.Background(), string(root), dsFile, fsutil.TinyFile); err == nil {
		name, _, _ := strings.Cut(string(b), ":")
		if name = strings.TrimSpace(name); name != "" {
			return name, dsFile
		}
	}
	b, err := fsutil.ReadFileIn(context.Background(), string(root), CloudInitInstanceData, 16<<20)
	if err != nil {
		return "", ""
	}
	var doc struct {
		V1 struct {
			Platform   *string `json:"platform"`
			InstanceID *string `json:"instance_id"`
		} `json:"v1"`
	}
	if json.Unmarshal(b, &doc) != nil || doc.V1.Platform == nil {
		return "", ""
	}
	// A record of another run than the one whose ID is on disk says
	// nothing about that ID.
	if doc.V1.InstanceID != nil && id != "" && *doc.V1.InstanceID != id {
		return "", ""
	}
	if strings.EqualFold(*doc.V1.Platform, nonePlatform) {
		return noneDatasource, CloudInitInstanceData
	}
	return "", ""
}
