package fsutil

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFileRefusesWhatIsNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	// A seedfrom naming a FIFO once blocked boot for ever.
	for _, p := range []string{fifo, "/dev/zero", "/dev/null", dir} {
		_, err := ReadFile(context.Background(), p, SmallFile)
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(%s) = %v, want ErrNotRegular", p, err)
		}
	}
	if _, err := os.Stat("/dev/tty"); err == nil {
		if _, err := ReadFile(context.Background(), "/dev/tty", SmallFile); err == nil {
			t.Errorf("ReadFile(/dev/tty) succeeded, want an error")
		}
	}
}

func TestReadFileLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(strings.Repeat("s3cret", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(context.Background(), p, 600)
	if err != nil || len(b) != 600 {
		t.Fatalf("at the limit: %d bytes, %v", len(b), err)
	}
	_, err = ReadFile(context.Background(), p, 599)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v, want ErrTooLarge", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error quotes the content: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	if b, err := ReadFile(context.Background(), empty, 10); err != nil || b == nil || len(b) != 0 {
		t.Errorf("empty file: %q, %v; want a non-nil empty slice", b, err)
	}
}

func TestReadFileProcIsRead(t *testing.T) {
	// /proc files report size 0 but have content: the limit must not
	// trust the size alone.
	b, err := ReadFile(context.Background(), "/proc/self/cmdline", TinyFile)
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if len(b) == 0 {
		t.Errorf("/proc/self/cmdline read as empty")
	}
}

func TestReadFileHonoursContext(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("x"), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadFile(ctx, p, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadFile with a cancelled context = %v", err)
	}
}

func TestReadFileNoFollow(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "target"), []byte("x"), 0o600)
	os.Symlink("target", filepath.Join(dir, "link"))
	if _, err := ReadFileNoFollow(context.Background(), filepath.Join(dir, "link"), 10); !errors.Is(err, ErrSymlink) {
		t.Errorf("through a link: %v, want ErrSymlink", err)
	}
	if _, err := ReadFile(context.Background(), filepath.Join(dir, "link"), 10); err != nil {
		t.Errorf("ReadFile follows links: %v", err)
	}
}

func TestResolve(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk("etc/ssh")
	mk("seed/real")
	mk("srv/deep/er")
	os.WriteFile(filepath.Join(root, "etc/ssh/ssh_host_rsa_key"), []byte("PRIVATE"), 0o600)
	os.WriteFile(filepath.Join(root, "seed/real/meta-data"), []byte("x"), 0o600)
	os.Symlink("/srv/deep/er", filepath.Join(root, "seed/abs"))
	os.Symlink("../../..", filepath.Join(root, "seed/up"))
	os.Symlink("loop", filepath.Join(root, "seed/loop"))

	for _, tc := range []struct {
		in, want string
		err      error
	}{
		{in: "/seed/real/meta-data", want: "/seed/real/meta-data"},
		{in: "/seed/real/missing", want: "/seed/real/missing"},
		// A seedfrom of s=/etc/ssh/ssh_host_rsa_key/%s/.. was cleaned
		// to the private key; the kernel refuses it.
		{in: "/etc/ssh/ssh_host_rsa_key/meta-data/..", err: syscall.ENOTDIR},
		{in: "/etc/ssh/missing/../ssh_host_rsa_key", err: fs.ErrNotExist},
		{in: "/etc/ssh/ssh_host_rsa_key/", err: syscall.ENOTDIR},
		// ".." after a link is the parent of the link's target.
		{in: "/seed/abs/../meta-data", want: "/srv/deep/meta-data"},
		// Neither ".." nor a link leaves root.
		{in: "/../../../etc/ssh", want: "/etc/ssh"},
		{in: "/seed/up/etc", want: "/etc"},
		{in: "/seed/loop", err: syscall.ELOOP},
	} {
		got, err := Resolve(root, tc.in)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Resolve(%s) = %q, %v; want %v", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != filepath.Join(root, tc.want) {
			t.Errorf("Resolve(%s) = %q, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := Resolve(root, "relative"); err == nil {
		t.Errorf("a relative path resolved")
	}
}

// FuzzResolve: whatever the path, the result stays under root.
func FuzzResolve(f *testing.F) {
	root := f.TempDir()
	os.MkdirAll(filepath.Join(root, "a/b"), 0o755)
	os.Symlink("../../..", filepath.Join(root, "a/b/up"))
	os.Symlink("/a", filepath.Join(root, "a/abs"))
	for _, s := range []string{"/a/b/up/x", "/../..", "/a/abs/b/../..", "//a//./b/", "/a/b/up/../../../.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := Resolve(root, "/"+p)
		if err != nil {
			return
		}
		if got != root && !strings.HasPrefix(got, root+"/") {
			t.Fatalf("Resolve(%q) = %q, outside %s", p, got, root)
		}
	})
}

func TestOpenImage(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
	for _, p := range []string{fifo, "/dev/zero", dir} {
		if f, err := OpenImage(p); err == nil {
			f.Close()
			t.Errorf("OpenImage(%s) succeeded", p)
		}
	}
	img := filepath.Join(dir, "img")
	os.WriteFile(img, make([]byte, 512), 0o600)
	f, err := OpenImage(img)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
