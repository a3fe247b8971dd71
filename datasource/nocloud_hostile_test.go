package datasource

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

// A seedfrom of s=/etc/ssh/KEY/%s/.. was cleaned lexically to the host
// private key, whose text then landed in an error message.
func TestSeedfromLocalResolvedAsTheKernelDoes(t *testing.T) {
	r := newNCRoot(t)
	r.write("/etc/ssh/ssh_host_rsa_key", []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETMARKER\n"))
	r.write(cmdlinePath, []byte("ds=nocloud;s=/etc/ssh/ssh_host_rsa_key/%s/..\n"))
	_, err := readNoCloud(context.Background(), r.opts())
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("err = %v, want ENOTDIR as the kernel gives", err)
	}
	if strings.Contains(err.Error(), "SECRETMARKER") {
		t.Errorf("error quotes the file: %v", err)
	}
}

// A seedfrom naming a FIFO once blocked boot for ever.
func TestSeedfromFIFODoesNotBlock(t *testing.T) {
	r := newNCRoot(t)
	r.seed("/srv/seed", map[string]string{"user-data": "#\n"})
	if err := syscall.Mkfifo(filepath.Join(r.dir, "srv/seed/meta-data"), 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	r.write(cmdlinePath, []byte("ds=nocloud;s=/srv/seed/\n"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := readNoCloud(ctx, r.opts())
	if !errors.Is(err, fsutil.ErrNotRegular) {
		t.Fatalf("err = %v, want ErrNotRegular", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the read ran into its deadline")
	}
}

func TestSeedfromDeviceRefused(t *testing.T) {
	r := newNCRoot(t)
	// A seed directory that links to the machine's /dev/zero: read under
	// a real root, it would be read without end.
	r.seed("/srv/seed", map[string]string{"meta-data": "{}\n"})
	if err := os.Symlink("/dev/zero", filepath.Join(r.dir, "srv/seed/user-data")); err != nil {
		t.Fatal(err)
	}
	o := r.opts()
	o.Root = ""
	o.NoCloud.SeedPath = filepath.Join(r.dir, "srv/seed")
	_, err := readNoCloud(context.Background(), o)
	if !errors.Is(err, fsutil.ErrNotRegular) {
		t.Fatalf("err = %v, want ErrNotRegular", err)
	}
}

func TestSeedPathFIFORefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	_, err := readNoCloud(context.Background(), Options{NoCloud: NoCloudOptions{SeedPath: p}, Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "a FIFO is neither a seed directory nor an image") {
		t.Fatalf("err = %v", err)
	}
}

// The error once quoted the file, secrets and all:
// "meta-data is not a mapping: <the whole file>".
func TestMetaDataErrorsDescribeNotQuote(t *testing.T) {
	for _, md := range []string{
		"-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETMARKER\n-----END OPENSSH PRIVATE KEY-----\n",
		"- SECRETMARKER\n",
		"SECRETMARKER: [1\n",
		// The library's duplicate-key error names the key.
		"SECRETMARKER: 1\nSECRETMARKER: 2\n",
	} {
		r := newNCRoot(t)
		r.seed(noCloudSeedDir, map[string]string{"meta-data": md, "user-data": "#\n"})
		_, err := readNoCloud(context.Background(), r.opts())
		if err == nil {
			t.Errorf("meta-data %q read without error", md)
			continue
		}
		if strings.Contains(err.Error(), "SECRETMARKER") {
			t.Errorf("error quotes the meta-data: %v", err)
		}
	}
	// A bad field degrades that field, not the read (one bad field does
	// not stop the boot): it is dropped with a warning that describes it.
	for _, md := range []string{
		"instance-id: {SECRETMARKER: 1}\n",
		"public-keys: [{SECRETMARKER: 1}]\n",
	} {
		r := newNCRoot(t)
		r.seed(noCloudSeedDir, map[string]string{"meta-data": md, "user-data": "#\n"})
		got, err := readNoCloud(context.Background(), r.opts())
		if err != nil {
			t.Errorf("meta-data %q: %v", md, err)
			continue
		}
		if len(got.Warnings) == 0 {
			t.Errorf("meta-data %q read without a warning", md)
		}
		for _, w := range got.Warnings {
			if strings.Contains(w, "SECRETMARKER") {
				t.Errorf("warning quotes the meta-data: %v", w)
			}
		}
	}
}

// A failed http(s) seedfrom returned the library's
// error, which names the whole URL with its presigned query.
func TestSeedfromHTTPErrorHidesQuery(t *testing.T) {
	r := newNCRoot(t)
	r.write(cmdlinePath, []byte("ds=nocloud;s=http://u:SECRETMARKER1@127.0.0.1:1/%s?sig=SECRETMARKER2\n"))
	o := r.opts()
	o.NoCloud.SeedfromTries = 1
	_, err := readNoCloud(context.Background(), o)
	if err == nil {
		t.Fatal("no error from a closed port")
	}
	if strings.Contains(err.Error(), "SECRETMARKER") {
		t.Errorf("error holds a secret: %v", err)
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1/meta-data") {
		t.Errorf("error does not say where: %v", err)
	}
}

// A seedfrom that is not a URL is described, not quoted.
func TestSeedfromNotAURLNotQuoted(t *testing.T) {
	for _, v := range []string{"SECRETMARKER", "SECRETMARKER:x", "hunter2 SECRETMARKER://x"} {
		r := newNCRoot(t)
		r.seed(noCloudSeedDir, map[string]string{"meta-data": "seedfrom: \"" + v + "\"\n", "user-data": "#\n"})
		_, err := readNoCloud(context.Background(), r.opts())
		if err == nil || strings.Contains(err.Error(), "SECRETMARKER") {
			t.Errorf("seedfrom %q: %v", v, err)
		}
	}
}

// A seedfrom server's status line is text from outside: its reason
// phrase (here 32 KiB, under the header bound) never
// reaches the error, which goes to the log and status.json; the code and
// its standard text say what happened.
func TestSeedfromHTTPStatusLineBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	reason := strings.Repeat("SECRETMARKER ", 32<<10/13)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				c.Read(buf)
				io.WriteString(c, "HTTP/1.1 403 "+reason+"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			}()
		}
	}()
	r := newNCRoot(t)
	r.write(cmdlinePath, []byte("ds=nocloud-net;s=http://"+ln.Addr().String()+"/s/\n"))
	o := r.opts()
	o.NoCloud.SeedfromTries = 1
	_, err = readNoCloud(context.Background(), o)
	if err == nil {
		t.Fatal("no error from a 403")
	}
	if msg := err.Error(); strings.Contains(msg, "SECRETMARKER") || len(msg) > 512 || !strings.Contains(msg, "403 Forbidden") {
		t.Errorf("error of %d bytes quotes the server's status line or does not say 403 Forbidden: %.300s", len(msg), msg)
	}
}
