package seed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// markerVersion is the version of the marker format.
const markerVersion = 1

// marker is the content of Dir/.seedkeeper.
type marker struct {
	Version int `json:"version"`
	// Files maps the system path of every file seedkeeper wrote to the
	// SHA-256 of its content.
	Files map[string]string `json:"files"`
	// Pending holds the hashes of a write in progress.
	Pending map[string]string `json:"pending,omitempty"`
}

func markerPath(root sysroot.Root) string {
	return root.Path(filepath.Join(Dir, MarkerName))
}

// readMarker returns the marker and whether there is one. A marker that
// exists but cannot be parsed is an error (and still means "owned").
func readMarker(root sysroot.Root) (*marker, bool, error) {
	path := filepath.Join(Dir, MarkerName)
	data, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), path, fsutil.SmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return &marker{}, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("reading seed marker %s: %w", path, err)
	}
	mk, err := parseMarker(data)
	if err != nil {
		return nil, true, fmt.Errorf("seed marker %s: %w", path, err)
	}
	return mk, true, nil
}

func parseMarker(data []byte) (*marker, error) {
	var mk marker
	if err := json.Unmarshal(data, &mk); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	if mk.Version != markerVersion {
		return nil, fmt.Errorf("version %d is not supported (want %d)", mk.Version, markerVersion)
	}
	return &mk, nil
}

func writeMarker(root sysroot.Root, mk *marker) error {
	mk.Version = markerVersion
	if mk.Files == nil {
		mk.Files = map[string]string{}
	}
	data, err := json.MarshalIndent(mk, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the seed marker: %w", err)
	}
	if _, err := fsutil.WriteFile(markerPath(root), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the seed marker: %w", err)
	}
	return nil
}

// Owned reports whether the seed directory under root is seedkeeper's
// output (it holds the marker). The NoCloud reader must then not read it.
func Owned(rootDir string) (bool, error) {
	_, err := fsutil.StatIn(rootDir, Dir+"/"+MarkerName, false)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking the seed marker: %w", err)
	}
	return true, nil
}

// SourceDir tells the NoCloud reader which directory to read in place of
// Dir: ImportDir when a person's seed was imported, "" when Dir is
// seedkeeper's own output and nothing was imported (read no directory),
// and Dir itself when seedkeeper has not written there yet. The result is
// a system path.
func SourceDir(rootDir string) (string, error) {
	fi, err := fsutil.StatIn(rootDir, ImportDir, false)
	switch {
	case err == nil && fi.IsDir():
		return ImportDir, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("checking %s: %w", ImportDir, err)
	}
	owned, err := Owned(rootDir)
	if err != nil {
		return "", err
	}
	if owned {
		return "", nil
	}
	return Dir, nil
}
