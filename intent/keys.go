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
// user's own home.
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
	for _, f := range files {
		if spec = authorizedKeysSpec(root, f); spec != "" {
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
func authorizedKeysSpec(root sysroot.Root, f string) string {
	b, err := fsutil.ReadFileIn(context.Background(), string(root), f, fsutil.SmallFile)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(strings.ReplaceAll(line, "=", " "))
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch strings.ToLower(fields[0]) {
		case "match":
			return ""
		case "authorizedkeysfile":
			if len(fields) > 1 && fields[1] != "none" {
				return strings.Trim(fields[1], `"`)
			}
			return ""
		}
	}
	return ""
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
	if err := fsutil.NoLinkOnTheWayIn(string(root), a.Home); err != nil {
		return out, fmt.Errorf("home of %s: %w", a.Name, err)
	}
	if fi, err := fsutil.StatIn(string(root), a.Home, true); err != nil || !fi.IsDir() {
		return out, fmt.Errorf("home of %s is not a directory", a.Name)
	}
	if err := fsutil.NoLinkOnTheWayIn(home, path.Dir(file)); err != nil {
		return out, fmt.Errorf("authorized keys of %s: %w", a.Name, err)
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
		if !ok {
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

// KeysPresent returns the fingerprints of want that are in the user's
// authorized_keys now (read the same confined way), for the receipt of a
// boot that has no earlier record to go by.
func KeysPresent(root sysroot.Root, a Account, file string, want []string) []string {
	home := root.Path(a.Home)
	if fsutil.NoLinkOnTheWayIn(string(root), a.Home) != nil || fsutil.NoLinkOnTheWayIn(home, path.Dir(file)) != nil {
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
// that cannot be read or decoded is skipped.
func ImageDefaultUser(root sysroot.Root) string {
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
	for _, f := range files {
		b, err := fsutil.ReadFileIn(context.Background(), string(root), f, fsutil.SmallFile)
		if err != nil {
			continue
		}
		var doc yaml.Node
		if yamlx.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
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
