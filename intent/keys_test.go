package intent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

const handKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHandAddedKey person@hand"

// userRoot is a scratch root with /etc/passwd naming admin and admin's
// home. As root admin is uid 4242, gid 4243, so that the ownership of
// what is written is tested; otherwise the test's own, which files can be
// given to without privileges.
func userRoot(t *testing.T) (sysroot.Root, Account) {
	t.Helper()
	root := t.TempDir()
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 4242, 4243
	}
	passwd := "root:x:0:0:root:/root:/bin/sh\nadmin:x:" + strconv.Itoa(uid) + ":" + strconv.Itoa(gid) + "::/home/admin:/bin/sh\n"
	write(t, root, "etc/passwd", passwd, 0o644)
	if err := os.MkdirAll(filepath.Join(root, "home/admin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The home is the user's, as useradd makes it.
	if err := os.Lchown(filepath.Join(root, "home/admin"), uid, gid); err != nil {
		t.Fatal(err)
	}
	write(t, root, "etc/shadow", "root:*:19000:0:99999:7:::\n", 0o640)
	a, err := LookupUser(sysroot.Root(root), "admin")
	if err != nil {
		t.Fatal(err)
	}
	return sysroot.Root(root), a
}

// userDir makes the directory p under root the test user's, 0700, as a
// user would make it.
func userDir(t *testing.T, root sysroot.Root, p string) {
	t.Helper()
	a, err := LookupUser(root, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root.Path(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(root.Path(p), a.UID, a.GID); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, root, name, data string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLookupUser(t *testing.T) {
	root, a := userRoot(t)
	if a.Home != "/home/admin" || a.UID == 0 || a.GID == 0 {
		t.Errorf("admin: %+v", a)
	}
	if _, err := LookupUser(root, "nobody"); err != ErrNoUser {
		t.Errorf("nobody: %v, want ErrNoUser", err)
	}
}

// Keys added to the metadata are appended; a key the metadata put there
// and no longer has is removed; a line a person added stays, in place.
func TestApplyKeys(t *testing.T) {
	root, a := userRoot(t)
	file := "/.ssh/authorized_keys"
	p := root.Path("/home/admin/.ssh/authorized_keys")

	// Boot 1: no ~/.ssh yet.
	out, err := ApplyKeys(root, a, file, []string{keyA}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, p); got != keyA+"\n" || out.Added != 1 || !out.Wrote {
		t.Fatalf("first apply: %q, %+v", got, out)
	}
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{filepath.Dir(p), 0o700 | os.ModeDir}, {p, 0o600}} {
		fi, err := os.Lstat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != c.mode || int(st.Uid) != a.UID || int(st.Gid) != a.GID {
			t.Errorf("%s: mode %v owner %d:%d, want %v %d:%d", c.path, fi.Mode(), st.Uid, st.Gid, c.mode, a.UID, a.GID)
		}
	}
	receipt := out.Receipt

	// A person adds a line by hand; the metadata adds keyB.
	write(t, string(root), "home/admin/.ssh/authorized_keys", keyA+"\n# mine\n"+handKey+"\n", 0o600)
	out, err = ApplyKeys(root, a, file, []string{keyA, keyB}, receipt)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, p), keyA+"\n# mine\n"+handKey+"\n"+keyB+"\n"; got != want {
		t.Errorf("key added: %q, want %q", got, want)
	}
	receipt = out.Receipt
	if len(receipt) != 2 {
		t.Errorf("receipt %v, want keyA and keyB", receipt)
	}

	// The metadata drops keyA and keyB; it also names the hand key now,
	// which stays the person's.
	out, err = ApplyKeys(root, a, file, []string{handKey}, receipt)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, p), "# mine\n"+handKey+"\n"; got != want || out.Removed != 2 || out.Added != 0 {
		t.Errorf("keys removed: %q (%+v), want %q", got, out, want)
	}
	if len(out.Receipt) != 0 {
		t.Errorf("receipt %v: the hand key became the metadata's", out.Receipt)
	}
	// The hand key leaves the metadata: it is still not removed.
	if _, err := ApplyKeys(root, a, file, nil, out.Receipt); err != nil {
		t.Fatal(err)
	}
	if got := read(t, p); !strings.Contains(got, handKey) {
		t.Errorf("the hand key was removed: %q", got)
	}

	// Nothing to add or remove: the file is not rewritten.
	fi1, _ := os.Stat(p)
	if out, err := ApplyKeys(root, a, file, []string{handKey}, nil); err != nil || out.Wrote {
		t.Errorf("no change: wrote %v, %v", out.Wrote, err)
	}
	fi2, _ := os.Stat(p)
	if !os.SameFile(fi1, fi2) || !fi1.ModTime().Equal(fi2.ModTime()) {
		t.Error("no change: the file was replaced")
	}
}

// A user can make authorized_keys, or ~/.ssh, a link to a file only root
// may write: the write is refused with a line that says so, and the
// target is untouched.
func TestApplyKeysRefusesLinks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, root sysroot.Root)
	}{
		{"authorized_keys", func(t *testing.T, root sysroot.Root) {
			userDir(t, root, "/home/admin/.ssh")
			if err := os.Symlink(root.Path("/etc/shadow"), root.Path("/home/admin/.ssh/authorized_keys")); err != nil {
				t.Fatal(err)
			}
		}},
		{"relative to /etc/shadow", func(t *testing.T, root sysroot.Root) {
			userDir(t, root, "/home/admin/.ssh")
			if err := os.Symlink("../../../etc/shadow", root.Path("/home/admin/.ssh/authorized_keys")); err != nil {
				t.Fatal(err)
			}
		}},
		{".ssh", func(t *testing.T, root sysroot.Root) {
			if err := os.Symlink(root.Path("/etc"), root.Path("/home/admin/.ssh")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, a := userRoot(t)
			tc.plant(t, root)
			_, err := ApplyKeys(root, a, "/.ssh/authorized_keys", []string{keyA}, nil)
			if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "admin") {
				t.Errorf("err %v, want a refusal naming the link and the user", err)
			}
			if strings.Contains(err.Error(), "AdminKeyA") {
				t.Errorf("the error quotes the key: %v", err)
			}
			if got := read(t, root.Path("/etc/shadow")); got != "root:*:19000:0:99999:7:::\n" {
				t.Errorf("/etc/shadow changed: %q", got)
			}
			if _, err := os.Stat(root.Path("/etc/authorized_keys")); err == nil {
				t.Error("a file was written through the ~/.ssh link")
			}
		})
	}
}

func TestAuthorizedKeysFile(t *testing.T) {
	for _, tc := range []struct {
		name, conf, dropin string
		want, err          string
	}{
		{name: "default", want: "/.ssh/authorized_keys"},
		{name: "Debian's commented line", conf: "#AuthorizedKeysFile	.ssh/authorized_keys .ssh/authorized_keys2\n", want: "/.ssh/authorized_keys"},
		{name: "relative", conf: "AuthorizedKeysFile .ssh/keys .ssh/authorized_keys2\n", want: "/.ssh/keys"},
		{name: "%h", conf: "AuthorizedKeysFile %h/.config/ssh/%u.keys\n", want: "/.config/ssh/admin.keys"},
		{name: "drop-in first", conf: "AuthorizedKeysFile .ssh/one\n", dropin: "AuthorizedKeysFile .ssh/two\n", want: "/.ssh/two"},
		{name: "only in Match", conf: "Match User admin\n  AuthorizedKeysFile .ssh/other\n", want: "/.ssh/authorized_keys"},
		{name: "outside the home", conf: "AuthorizedKeysFile /etc/ssh/keys/%u\n", err: "outside the user's home"},
		{name: "escapes the home", conf: "AuthorizedKeysFile ../other/.ssh/authorized_keys\n", err: "outside the user's home"},
		{name: "unknown token", conf: "AuthorizedKeysFile .ssh/%i\n", err: "token %i"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, a := userRoot(t)
			if tc.conf != "" {
				write(t, string(root), "etc/ssh/sshd_config", "Include /etc/ssh/sshd_config.d/*.conf\n"+tc.conf, 0o644)
			}
			if tc.dropin != "" {
				write(t, string(root), "etc/ssh/sshd_config.d/50-keys.conf", tc.dropin, 0o644)
			}
			got, err := AuthorizedKeysFile(root, a)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("got %q, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Key
		ok   bool
	}{
		{keyA, Key{Type: "ssh-ed25519", Blob: "AAAAC3NzaC1lZDI1NTE5AAAAIAdminKeyA"}, true},
		{"  ssh-rsa\tAAAAB3 c o m", Key{Type: "ssh-rsa", Blob: "AAAAB3"}, true},
		{`from="10.0.0.0/8",no-pty ssh-ed25519 AAAAx me`, Key{Options: `from="10.0.0.0/8",no-pty`, Type: "ssh-ed25519", Blob: "AAAAx"}, true},
		{"ecdsa-sha2-nistp256 AAAAE2", Key{Type: "ecdsa-sha2-nistp256", Blob: "AAAAE2"}, true},
		{"# ssh-ed25519 AAAA commented out", Key{}, false},
		{"", Key{}, false},
		{"ssh-ed25519", Key{}, false},
	} {
		got, ok := ParseKey(tc.line)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
	a, _ := ParseKey(keyA)
	b, _ := ParseKey("ssh-ed25519  AAAAC3NzaC1lZDI1NTE5AAAAIAdminKeyA another comment")
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("the comment changed the fingerprint")
	}
}

// chpasswd gets the line on its standard input, never on its command
// line, with -e for a hash, and passwd --expire follows when asked.
func TestSetPassword(t *testing.T) {
	type call struct {
		argv  []string
		stdin string
	}
	for _, tc := range []struct {
		name   string
		root   sysroot.Root
		p      Password
		expire bool
		want   []call
	}{
		{"hash", "", Password{User: "admin", Value: hash1, Hashed: true}, false,
			[]call{{[]string{"chpasswd", "-e"}, "admin:" + hash1 + "\n"}}},
		{"text, expired", "", Password{User: "admin", Value: "hunter2"}, true,
			[]call{{[]string{"chpasswd"}, "admin:hunter2\n"}, {[]string{"passwd", "--expire", "admin"}, ""}}},
		{"under a root", "/mnt/img", Password{User: "admin", Value: hash1, Hashed: true}, true,
			[]call{{[]string{"chpasswd", "-e", "-R", "/mnt/img"}, "admin:" + hash1 + "\n"}, {[]string{"passwd", "--expire", "-R", "/mnt/img", "admin"}, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []call
			run := func(_ context.Context, argv []string, stdin []byte) error {
				got = append(got, call{argv, string(stdin)})
				return nil
			}
			if err := SetPassword(context.Background(), run, tc.root, tc.p, tc.expire); err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tc.want, func(a, b call) bool { return slices.Equal(a.argv, b.argv) && a.stdin == b.stdin }) {
				t.Errorf("ran %q, want %q", got, tc.want)
			}
			for _, c := range got {
				if strings.Contains(strings.Join(c.argv, " "), tc.p.Value) {
					t.Errorf("the password is on the command line: %q", c.argv)
				}
			}
		})
	}
	// A line break would add a line to chpasswd's input.
	run := func(context.Context, []string, []byte) error {
		t.Error("ran chpasswd with input it must refuse")
		return nil
	}
	if err := SetPassword(context.Background(), run, "", Password{User: "admin", Value: "a\nroot:x"}, false); err == nil {
		t.Error("a password with a line break was set")
	}
	// Nor may the user name add a line, or a field, to chpasswd's input
	// (the second line would set root's password), nor a hash shift the
	// fields of /etc/shadow; the error never quotes the password.
	for _, p := range []Password{
		{User: "admin\nroot", Value: "hunter2"},
		{User: "admin:root", Value: "hunter2"},
		{User: "", Value: "hunter2"},
		{User: "-admin", Value: "hunter2"},
		{User: "admin", Value: "$6$salt$hash:0:0:99999:7:::", Hashed: true},
	} {
		err := SetPassword(context.Background(), run, "", p, true)
		if err == nil {
			t.Errorf("%q: set", p.User)
		} else if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "99999") {
			t.Errorf("the error quotes the password: %v", err)
		}
	}
	// A ':' in a text password is chpasswd's to split: the first ':' ends
	// the name.
	var stdin string
	ok := func(_ context.Context, _ []string, in []byte) error { stdin = string(in); return nil }
	if err := SetPassword(context.Background(), ok, "", Password{User: "admin", Value: "a:b"}, false); err != nil || stdin != "admin:a:b\n" {
		t.Errorf("text with a ':': %q, %v", stdin, err)
	}
}

func TestIsHashed(t *testing.T) {
	for p, want := range map[string]bool{
		hash1: true, "$1$ab$cd": true, "$2a$10$abc": true, "$5$s$h": true, "$y$j9T$a$b": false,
		"$6$only": false, "hunter2": false, "$6$a$b:c": false, "x$6$a$b": false,
	} {
		if got := isHashed(p); got != want {
			t.Errorf("isHashed(%q) = %v, want %v", p, got, want)
		}
	}
}

// seedkeeper runs as root and writes in a home only where no one but root
// and the user can change the way there: each way a passwd entry or a
// user can point the write elsewhere, or hand the user a file root owns,
// is refused with an error naming the user, and nothing is written.
func TestApplyKeysTrust(t *testing.T) {
	const other = 4300
	for _, tc := range []struct {
		name string
		// plant changes the root; it returns the account to write for
		// and the file that must stay as it is.
		plant func(t *testing.T, root sysroot.Root, a Account) (Account, string)
		want  string
	}{
		{"home owned by another user", func(t *testing.T, root sysroot.Root, a Account) (Account, string) {
			os.Lchown(root.Path(a.Home), other, other)
			return a, root.Path(a.Home + "/.ssh/authorized_keys")
		}, "owned by uid 4300"},
		{"a passwd home of /root", func(t *testing.T, root sysroot.Root, a Account) (Account, string) {
			write(t, string(root), "root/.ssh/authorized_keys", handKey+"\n", 0o600)
			a.Home = "/root"
			return a, root.Path("/root/.ssh/authorized_keys")
		}, "owned by uid"},
		{"home under a directory the user owns", func(t *testing.T, root sysroot.Root, a Account) (Account, string) {
			userDir(t, root, "/srv/admin")
			os.MkdirAll(root.Path("/srv/admin/home"), 0o755)
			os.Lchown(root.Path("/srv/admin/home"), a.UID, a.GID)
			a.Home = "/srv/admin/home"
			return a, root.Path(a.Home + "/.ssh/authorized_keys")
		}, "above the home"},
		{"home in a sticky directory anyone writes", func(t *testing.T, root sysroot.Root, a Account) (Account, string) {
			os.MkdirAll(root.Path("/scratch"), 0o755)
			os.Chmod(root.Path("/scratch"), 0o1777)
			userDir(t, root, "/scratch/admin")
			os.Chmod(root.Path("/scratch/admin"), 0o755)
			a.Home = "/scratch/admin"
			return a, root.Path(a.Home + "/.ssh/authorized_keys")
		}, "others may write"},
		{"a group-writable home", func(t *testing.T, root sysroot.Root, a Account) (Account, string) {
			os.Chmod(root.Path(a.Home), 0o775)
			return a, root.Path(a.Home + "/.ssh/authorized_keys")
		}, "StrictModes"},
		{"~/.ssh owned by root", func(t *testing.T, root sysroot.Root, a Account) (Account, string) {
			os.MkdirAll(root.Path(a.Home+"/.ssh"), 0o700)
			return a, root.Path(a.Home + "/.ssh/authorized_keys")
		}, ".ssh is owned by uid 0"},
		{"authorized_keys owned by root", func(t *testing.T, root sysroot.Root, a Account) (Account, string) {
			userDir(t, root, a.Home+"/.ssh")
			write(t, string(root), "home/admin/.ssh/authorized_keys", handKey+"\n", 0o644)
			return a, root.Path(a.Home + "/.ssh/authorized_keys")
		}, "left as it is"},
		{"authorized_keys a FIFO", func(t *testing.T, root sysroot.Root, a Account) (Account, string) {
			userDir(t, root, a.Home+"/.ssh")
			if err := syscall.Mkfifo(root.Path(a.Home+"/.ssh/authorized_keys"), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Lchown(root.Path(a.Home+"/.ssh/authorized_keys"), a.UID, a.GID)
			return a, ""
		}, "not a file"},
		{"authorized_keys a directory", func(t *testing.T, root sysroot.Root, a Account) (Account, string) {
			userDir(t, root, a.Home+"/.ssh")
			userDir(t, root, a.Home+"/.ssh/authorized_keys")
			return a, ""
		}, "not a file"},
		{"home a file", func(t *testing.T, root sysroot.Root, a Account) (Account, string) {
			os.Remove(root.Path(a.Home))
			write(t, string(root), "home/admin", "", 0o600)
			return a, root.Path(a.Home)
		}, "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if os.Getuid() != 0 && strings.Contains(tc.name, "owned by") {
				t.Skip("giving a file to another user needs root: run go test as root to run this case")
			}
			root, a := userRoot(t)
			a, keep := tc.plant(t, root, a)
			var before string
			if keep != "" {
				before, _ = readMaybe(keep)
			}
			_, err := ApplyKeys(root, a, "/.ssh/authorized_keys", []string{keyA}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "admin") {
				t.Fatalf("err %v, want a refusal naming the user and saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "AdminKeyA") {
				t.Errorf("the error quotes the key: %v", err)
			}
			if keep != "" {
				if after, _ := readMaybe(keep); after != before {
					t.Errorf("%s changed: %q, was %q", keep, after, before)
				}
			}
			if fps := KeysPresent(root, a, "/.ssh/authorized_keys", []string{keyA, handKey}); len(fps) != 0 {
				t.Errorf("KeysPresent read a file it must not trust: %v", fps)
			}
		})
	}
}

func readMaybe(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

// On the machine's own root too, a home that is a link (or under one) is
// refused, not followed: an entry in /etc/passwd pointing into a link to
// /root must not give root's authorized_keys to the user.
func TestIntegrationApplyKeysRealRoot(t *testing.T) {
	testenv.Integration(t)
	if os.Getuid() != 0 {
		t.Skip("writes under the machine's root as another user: run as root (sudo go test -run TestIntegrationApplyKeysRealRoot ./intent/)")
	}
	dir := t.TempDir()
	victim := filepath.Join(dir, "rootshome")
	if err := os.MkdirAll(filepath.Join(victim, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "home")); err != nil {
		t.Fatal(err)
	}
	a := Account{Name: "admin", UID: 4242, GID: 4243, Home: filepath.Join(dir, "home")}
	_, err := ApplyKeys(sysroot.Root("/"), a, "/.ssh/authorized_keys", []string{keyA}, nil)
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("err %v, want the home's link refused", err)
	}
	if _, err := os.Lstat(filepath.Join(victim, ".ssh/authorized_keys")); err == nil {
		t.Error("the link's target was written")
	}
	// Not a link: written, the user's.
	a.Home = victim
	os.Lchown(victim, a.UID, a.GID)
	os.Lchown(filepath.Join(victim, ".ssh"), a.UID, a.GID)
	if _, err := ApplyKeys(sysroot.Root("/"), a, "/.ssh/authorized_keys", []string{keyA}, nil); err != nil {
		t.Fatalf("a plain home on the real root: %v", err)
	}
	if got := read(t, filepath.Join(victim, ".ssh/authorized_keys")); got != keyA+"\n" {
		t.Errorf("written: %q", got)
	}
}

// Whatever the file held and the metadata asks for, ApplyKeys keeps every
// line but the metadata's keys it no longer wants, in order; adds only
// lines of want, none with a line break or control character; and claims
// only keys of want.
func FuzzApplyKeys(f *testing.F) {
	f.Add(keyA+"\n# mine\n"+handKey+"\n", keyB, keyA, true)
	f.Add("", keyA, "ssh-ed25519 AAAA\nssh-ed25519 BBBB injected", false)
	f.Add(handKey+"\n"+handKey+"\n", handKey, "", true)
	f.Add("\n\n"+keyA, `from="10.0.0.0/8" `+keyA, "ssh-rsa AAAA\rx", true)
	f.Fuzz(func(t *testing.T, old, want1, want2 string, claimOld bool) {
		if len(old) > 4096 || len(want1)+len(want2) > 4096 {
			return
		}
		root, a := userRoot(t)
		userDir(t, root, "/home/admin/.ssh")
		p := root.Path("/home/admin/.ssh/authorized_keys")
		if err := os.WriteFile(p, []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Lchown(p, a.UID, a.GID)
		want := []string{want1, want2}
		var receipt []string
		if claimOld {
			for _, l := range strings.Split(old, "\n") {
				if k, ok := ParseKey(l); ok {
					receipt = append(receipt, k.Fingerprint())
				}
			}
		}
		out, err := ApplyKeys(root, a, "/.ssh/authorized_keys", want, receipt)
		if err != nil {
			t.Fatalf("a regular file of the user's: %v", err)
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
		var kept []string
		if old != "" {
			for _, l := range strings.Split(strings.TrimSuffix(old, "\n"), "\n") {
				if k, ok := ParseKey(l); ok && ours[k.Fingerprint()] && !wanted[k.Fingerprint()] {
					continue
				}
				kept = append(kept, l)
			}
		}
		got := read(t, p)
		if !out.Wrote {
			if got != old {
				t.Fatalf("not written, but the file changed: %q", got)
			}
			return
		}
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if got == "" {
			lines = nil
		}
		if len(lines) != len(kept)+out.Added || !slices.Equal(lines[:len(kept)], kept) {
			t.Fatalf("file %q, want the kept lines %q then %d added", got, kept, out.Added)
		}
		for _, l := range lines[len(kept):] {
			if !slices.Contains(want, l) || checkText(l) != nil {
				t.Errorf("added line %q is no usable line of want", l)
			}
		}
		for _, fp := range out.Receipt {
			if !wanted[fp] {
				t.Errorf("receipt claims %s, not a key of want", fp)
			}
		}
	})
}
