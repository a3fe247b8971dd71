package seed

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// importable returns the files of a person's seed in Dir that importSeed
// would copy to ImportDir, nil when there is nothing to import (Dir is
// absent or holds no seed file) or an import already exists. It changes
// nothing.
func importable(root sysroot.Root) ([]string, error) {
	entries, err := fsutil.ReadDirIn(string(root), Dir)
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
	if existsIn(root, ImportDir) {
		return nil, nil // imported by a run that was killed before claiming
	}
	return names, nil
}

// importSeed copies the named files of a person's seed out of Dir into
// ImportDir, once. It returns ImportDir when it imported now, "" when an
// import already exists.
func importSeed(root sysroot.Root, names []string) (string, error) {
	if existsIn(root, ImportDir) {
		return "", nil
	}
	fail := func(err error) (string, error) {
		return "", fmt.Errorf("importing the seed in %s: %w", Dir, err)
	}
	var tmp string
	for i := 0; ; i++ {
		tmp = path.Join(path.Dir(ImportDir), "."+path.Base(ImportDir)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		made, err := fsutil.MkdirIn(string(root), tmp, 0o700, true)
		if err != nil {
			return fail(err)
		}
		if made {
			break
		}
		if i == 16 {
			return fail(errors.New("no free name for a temporary directory"))
		}
	}
	ok := false
	defer func() {
		if !ok {
			fsutil.RemoveIn(string(root), tmp, true)
		}
	}()
	for _, n := range names {
		data, err := readOwnIn(root, path.Join(Dir, n))
		if err != nil {
			return fail(err)
		}
		if err := fsutil.WriteFileIn(string(root), path.Join(tmp, n), data, 0o600); err != nil {
			return fail(err)
		}
	}
	if err := fsutil.RenameIn(string(root), tmp, ImportDir); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", nil
		}
		return fail(err)
	}
	ok = true
	return ImportDir, nil
}
