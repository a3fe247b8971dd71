package seed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// importable returns the files of a person's seed in Dir that importSeed
// would copy to ImportDir, nil when there is nothing to import (Dir is
// absent or holds no seed file) or an import already exists. It changes
// nothing.
func importable(root sysroot.Root) ([]string, error) {
	entries, err := os.ReadDir(root.Path(Dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", Dir, err)
	}
	var names []string
	found := false
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue // fsutil temporaries, the marker, symlinks
		}
		names = append(names, e.Name())
		found = found || slices.Contains(seedFiles, e.Name())
	}
	if !found {
		return nil, nil
	}
	if _, err := os.Lstat(root.Path(ImportDir)); err == nil {
		return nil, nil // imported by a run that was killed before claiming
	}
	return names, nil
}

// importSeed copies the named files of a person's seed out of Dir into
// ImportDir, once. It returns ImportDir when it imported now, "" when an
// import already exists.
func importSeed(root sysroot.Root, names []string) (string, error) {
	dir := root.Path(Dir)
	dst := root.Path(ImportDir)
	if _, err := os.Lstat(dst); err == nil {
		return "", nil
	}
	parent := filepath.Dir(dst)
	if err := fsutil.MkdirNoFollow(parent, 0o755); err != nil {
		return "", fmt.Errorf("importing the seed in %s: %w", Dir, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("importing the seed in %s: %w", Dir, err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o700); err != nil {
		return "", fmt.Errorf("importing the seed in %s: %w", Dir, err)
	}
	for _, n := range names {
		data, err := fsutil.ReadFileNoFollow(context.Background(), filepath.Join(dir, n), maxFile)
		if err != nil {
			return "", fmt.Errorf("importing the seed in %s: %w", Dir, err)
		}
		if _, err := fsutil.WriteFile(filepath.Join(tmp, n), data, 0o600); err != nil {
			return "", fmt.Errorf("importing the seed in %s: %w", Dir, err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", nil
		}
		return "", fmt.Errorf("importing the seed in %s: %w", Dir, err)
	}
	ok = true
	if err := fsutil.SyncDir(parent); err != nil {
		return "", fmt.Errorf("importing the seed in %s: %w", Dir, err)
	}
	return ImportDir, nil
}
