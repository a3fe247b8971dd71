package intent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// Account is a user of /etc/passwd.
type Account struct {
	Name     string
	UID, GID int
	Home     string
}

// PasswdPath is the user database Apply reads.
const PasswdPath = "/etc/passwd"

// ErrNoUser is returned by LookupUser for a user /etc/passwd does not have.
var ErrNoUser = errors.New("no such user in /etc/passwd")

// LookupUser finds name in /etc/passwd under root, read bounded and
// confined to the root. A line that is not seven fields with numeric IDs
// and an absolute home is skipped.
func LookupUser(root sysroot.Root, name string) (Account, error) {
	b, err := fsutil.ReadFileIn(context.Background(), string(root), PasswdPath, fsutil.SmallFile)
	if err != nil {
		return Account{}, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<10)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) != 7 || f[0] != name {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || uid < 0 || gid < 0 || !path.IsAbs(f[5]) || path.Clean(f[5]) == "/" {
			continue
		}
		return Account{Name: name, UID: uid, GID: gid, Home: path.Clean(f[5])}, nil
	}
	return Account{}, ErrNoUser
}

// SSHDConfig and SSHDConfigDir are where sshd's AuthorizedKeysFile is read.
const (
	SSHDConfig    = paths.SSHDir + "/sshd_config"
	SSHDConfigDir = paths.SSHDir + "/sshd_config.d"
)

// DefaultAuthorizedKeys is sshd's default AuthorizedKeysFile, in the home.
const DefaultAuthorizedKeys = ".ssh/authorized_keys"

// AuthorizedKeysFile is the file of the user's keys that Apply writes, as
// a path inside the home ("/.ssh/authorized_keys"). It reads sshd's
// AuthorizedKeysFile the simple way: the first one outside a Match block
// in sshd_config.d/*.conf (in name order, which Debian's Include at the
// top of sshd_config reads first) and then sshd_config; its first file
// is used with %h, %u and %% expanded. A file outside the home, or one
// naming another user's tokens, is refused: seedkeeper writes only in the
// user's own home. sshd's files are read within one aggregate bound
// (fsutil.ConfigBudget); past it the answer is an error that names the
// file and the bound, never a guess.
func AuthorizedKeysFile(root sysroot.Root, a Account) (string, error) {
	spec := ""
	var files []string
	if ents, err := fsutil.ReadDirIn(string(root), SSHDConfigDir); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".conf") {
				files = append(files, path.Join(SSHDConfigDir, e.Name()))
			}
		}
		slices.Sort(files)
	}
	files = append(files, SSHDConfig)
	// One bound for all the files together, beside each file's: past
	// it, where sshd looks is not known, and nothing is written.
	budget := fsutil.ConfigBudget("sshd's configuration (" + SSHDConfigDir + " and " + SSHDConfig + " together)")
	for _, f := range files {
		var err error
		if spec, err = authorizedKeysSpec(root, budget, f); err != nil {
			return "", err
		}
		if spec != "" {
			break
		}
	}
	if spec == "" {
		spec = DefaultAuthorizedKeys
	}
	var b strings.Builder
	for i := 0; i < len(spec); i++ {
		if spec[i] != '%' || i+1 == len(spec) {
			b.WriteByte(spec[i])
			continue
		}
		i++
		switch spec[i] {
		case 'h':
			b.WriteString(a.Home)
		case 'u':
			b.WriteString(a.Name)
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("sshd's AuthorizedKeysFile uses the token %%%c, which seedkeeper does not expand; not written", spec[i])
		}
	}
	p := b.String()
	if !path.IsAbs(p) {
		p = path.Join(a.Home, p)
	}
	p = path.Clean(p)
	rel, ok := strings.CutPrefix(p, a.Home+"/")
	if !ok || rel == "" {
		return "", errors.New("sshd's AuthorizedKeysFile is outside the user's home; seedkeeper writes only there")
	}
	return "/" + rel, nil
}

// authorizedKeysSpec returns the first file of the first AuthorizedKeysFile
// line of f outside a Match block, "" when there is none.
func authorizedKeysSpec(root sysroot.Root, budget *fsutil.Budget, f string) (string, error) {
	b, err := budget.ReadFileIn(context.Background(), string(root), f, fsutil.SmallFile)
	if errors.Is(err, fsutil.ErrOverBudget) {
		return "", err
	}
	if err != nil {
		return "", nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(strings.ReplaceAll(line, "=", " "))
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch strings.ToLower(fields[0]) {
		case "match":
			return "", nil
		case "authorizedkeysfile":
			if len(fields) > 1 && fields[1] != "none" {
				return strings.Trim(fields[1], `"`), nil
			}
			return "", nil
		}
	}
	return "", nil
}

// maxAuthorizedKeys bounds the authorized_keys file read.
const maxAuthorizedKeys = 1 << 20

// KeysOutcome is what ApplyKeys did for one user.
type KeysOutcome struct {
	File           string // the host path written or refused
	Added, Removed int
	// Receipt is the fingerprints of the keys that are in the file now
	// because the metadata put them there.
	Receipt []string
	Wrote   bool
}

// ApplyKeys makes the user's authorized_keys hold want: a key of want
// not in it is appended, and a key in it that the receipt says the
// metadata put there and want no longer has is removed. Every other line
// (a key a person added, a comment) stays as it is, in its place. The
// file is rewritten only when a line is added or removed: atomically,
// owned by the user, 0600 in a 0700 ~/.ssh. Everything happens inside the
// home as the root: a link as the file or on the way to it (a user can
// make ~/.ssh/authorized_keys a link to /etc/shadow) is refused, never
// followed.
func ApplyKeys(root sysroot.Root, a Account, file string, want, receipt []string) (KeysOutcome, error) {
	home := root.Path(a.Home)
	out := KeysOutcome{File: path.Join(home, file)}
	if err := CheckHome(root, a, file); err != nil {
		return out, err
	}
	old, err := fsutil.ReadFileInNoFollow(context.Background(), home, file, maxAuthorizedKeys)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case errors.Is(err, fsutil.ErrSymlink):
		return out, fmt.Errorf("authorized keys of %s: %s is a symbolic link; not followed, not written", a.Name, out.File)
	case err != nil:
		return out, fmt.Errorf("authorized keys of %s: %w", a.Name, err)
	}

	wanted := map[string]bool{}
	for _, l := range want {
		if k, ok := ParseKey(l); ok {
			wanted[k.Fingerprint()] = true
		}
	}
	ours := map[string]bool{}
	for _, fp := range receipt {
		ours[fp] = true
	}
	var lines []string
	present := map[string]bool{}
	if len(old) > 0 {
		lines = strings.Split(strings.TrimSuffix(string(old), "\n"), "\n")
	}
	kept := lines[:0:0]
	for _, l := range lines {
		k, ok := ParseKey(l)
		if ok && ours[k.Fingerprint()] && !wanted[k.Fingerprint()] {
			out.Removed++
			continue
		}
		if ok {
			present[k.Fingerprint()] = true
		}
		kept = append(kept, l)
	}
	for _, l := range want {
		k, ok := ParseKey(l)
		if !ok || checkText(l) != nil {
			// A line break in a key would add a line of its own to
			// the file: the readers drop such keys, and so does the
			// writer.
			continue
		}
		fp := k.Fingerprint()
		switch {
		case !present[fp]:
			kept = append(kept, l)
			present[fp] = true
			out.Added++
			out.Receipt = append(out.Receipt, fp)
		case ours[fp]:
			out.Receipt = append(out.Receipt, fp)
		}
		// A wanted key a person had put there already stays theirs.
	}
	slices.Sort(out.Receipt)
	out.Receipt = slices.Compact(out.Receipt)
	if out.Added == 0 && out.Removed == 0 {
		return out, nil
	}
	data := strings.Join(kept, "\n")
	if data != "" {
		data += "\n"
	}
	if err := fsutil.WriteFileInAs(home, file, []byte(data), 0o600, 0o700, a.UID, a.GID); err != nil {
		if errors.Is(err, fsutil.ErrSymlink) {
			return out, fmt.Errorf("authorized keys of %s: a symbolic link on the way to %s; not followed, not written", a.Name, out.File)
		}
		return out, fmt.Errorf("authorized keys of %s: %w", a.Name, err)
	}
	out.Wrote = true
	return out, nil
}

// CheckHome says why seedkeeper, which runs as root, must not write the
// user's authorized keys file (a path inside the home, as
// AuthorizedKeysFile returns it): it writes only where no one but root
// and the user can change the way there, so that what it checked is what
// it writes. Every directory from the root down to the home must be a
// directory, no symbolic link (on the machine's own root too: a home that
// is a link, or is under one, is refused, not followed), owned by root
// (under an image root, also by the root directory's owner) and writable
// by no one else, unless sticky with the next directory root's. The home
// and each directory inside it on the way to the file must be the user's
// and writable by no one else (sshd's StrictModes would refuse the keys
// otherwise), and an existing file must be a regular file of the user's:
// a file root owns in a home (keys an admin manages) stays root's. A home
// owned by another user (a passwd entry naming /root or another user's
// home) is refused.
func CheckHome(root sysroot.Root, a Account, file string) error {
	if !path.IsAbs(a.Home) || path.Clean(a.Home) == "/" || !path.IsAbs(file) || path.Clean(file) == "/" {
		return fmt.Errorf("home of %s: not a directory below the root", a.Name)
	}
	trustedUID := map[int]bool{0: true}
	if !root.IsReal() {
		if fi, err := fsutil.StatIn(string(root), "/", false); err == nil {
			if u, ok := ownerOf(fi); ok {
				trustedUID[u] = true
			}
		}
	}
	home := path.Clean(a.Home)
	var dirs []string
	for d := home; d != "/"; d = path.Dir(d) {
		dirs = append(dirs, d)
	}
	slices.Reverse(dirs)
	// Every directory in the home on the way to the file, if it exists.
	var below []string
	if d := path.Dir(path.Clean(file)); d != "/" {
		for e := d; e != "/"; e = path.Dir(e) {
			below = append(below, path.Join(home, e))
		}
		slices.Reverse(below)
	}
	parentOpen, parentSticky := false, false // the directory above d
	for i, d := range append(dirs, below...) {
		isHome, inHome := d == home, i >= len(dirs)
		fi, err := fsutil.StatIn(string(root), d, false)
		if inHome && errors.Is(err, fs.ErrNotExist) {
			break // made by the write, the user's
		}
		what := fmt.Sprintf("home of %s: %s", a.Name, root.Path(d))
		if inHome {
			what = fmt.Sprintf("authorized keys of %s: %s", a.Name, root.Path(d))
		}
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", what, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link; not followed, not written", what)
		case !fi.IsDir():
			return fmt.Errorf("%s is %s, not a directory; not written", what, fsutil.Kind(fi.Mode()))
		}
		uid, ok := ownerOf(fi)
		if !ok {
			return fmt.Errorf("%s: its owner is not known here; not written", what)
		}
		switch {
		case isHome || inHome:
			if uid != a.UID {
				return fmt.Errorf("%s is owned by uid %d, not by the user (uid %d); not written", what, uid, a.UID)
			}
		case !trustedUID[uid]:
			return fmt.Errorf("%s, above the home, is owned by uid %d, not by root; not written", what, uid)
		}
		if parentOpen && (!parentSticky || isHome || inHome) {
			return fmt.Errorf("%s is in a directory others may write; not written", what)
		}
		parentOpen, parentSticky = fi.Mode().Perm()&0o022 != 0, fi.Mode()&fs.ModeSticky != 0
		if (isHome || inHome) && parentOpen {
			return fmt.Errorf("%s is writable by others than the user (sshd's StrictModes refuses that too); not written", what)
		}
	}
	fi, err := fsutil.StatIn(string(root), path.Join(home, file), false)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("authorized keys of %s: %w", a.Name, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("authorized keys of %s: %s is a symbolic link; not followed, not written", a.Name, root.Path(path.Join(home, file)))
	case !fi.Mode().IsRegular():
		return fmt.Errorf("authorized keys of %s: %s is %s, not a file; left alone", a.Name, root.Path(path.Join(home, file)), fsutil.Kind(fi.Mode()))
	}
	if uid, ok := ownerOf(fi); !ok || uid != a.UID {
		return fmt.Errorf("authorized keys of %s: %s is owned by uid %d, not by the user; left as it is", a.Name, root.Path(path.Join(home, file)), uid)
	}
	return nil
}

// KeysPresent returns the fingerprints of want that are in the user's
// authorized_keys now (read the same confined way), for the receipt of a
// boot that has no earlier record to go by.
func KeysPresent(root sysroot.Root, a Account, file string, want []string) []string {
	home := root.Path(a.Home)
	if CheckHome(root, a, file) != nil {
		return nil
	}
	b, err := fsutil.ReadFileInNoFollow(context.Background(), home, file, maxAuthorizedKeys)
	if err != nil {
		return nil
	}
	in := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, ok := ParseKey(l); ok {
			in[k.Fingerprint()] = true
		}
	}
	var fps []string
	for _, l := range want {
		if k, ok := ParseKey(l); ok && in[k.Fingerprint()] {
			fps = append(fps, k.Fingerprint())
		}
	}
	slices.Sort(fps)
	return slices.Compact(fps)
}

// Fingerprints returns the sorted fingerprints of the keys.
func Fingerprints(keys []string) []string {
	var fps []string
	for _, l := range keys {
		if k, ok := ParseKey(l); ok {
			fps = append(fps, k.Fingerprint())
		}
	}
	slices.Sort(fps)
	return slices.Compact(fps)
}

// ImageDefaultUser is system_info.default_user.name of cloud-init's
// configuration under root (cloud.cfg, then cloud.cfg.d/*.cfg in name
// order, the last file that sets it winning); "" when none does. A file
// that cannot be read or decoded is skipped; files past the aggregate
// bound of cloud-init's configuration (fsutil.CloudConfigBudget) are not
// read, and those past what one document may hold (yamlx.Budget) are
// skipped.
func ImageDefaultUser(root sysroot.Root) string {
	budget := yamlx.NewBudget()
	files := []string{paths.CloudCfg}
	if ents, err := fsutil.ReadDirIn(string(root), paths.CloudCfgD); err == nil {
		var names []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".cfg") {
				names = append(names, path.Join(paths.CloudCfgD, e.Name()))
			}
		}
		slices.Sort(names)
		files = append(files, names...)
	}
	name := ""
	readBudget := fsutil.CloudConfigBudget()
	for _, f := range files {
		b, err := readBudget.ReadFileIn(context.Background(), string(root), f, min(fsutil.SmallFile, budget.ReadLimit()))
		if errors.Is(err, fsutil.ErrOverBudget) {
			break // files past the aggregate bound are not read
		}
		if err != nil {
			continue
		}
		var doc yaml.Node
		if budget.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		si := mapValue(doc.Content[0], "system_info")
		if si == nil || si.Kind != yaml.MappingNode {
			continue
		}
		du := mapValue(si, "default_user")
		if du == nil || du.Kind != yaml.MappingNode {
			continue
		}
		if n := mapValue(du, "name"); n != nil && n.Kind == yaml.ScalarNode && CheckUserName(n.Value) == nil {
			name = n.Value
		}
	}
	return name
}
