package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

func TestHelp(t *testing.T) {
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"--help"}, &out, &errb); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{"Usage: mdatasim", "--fault MODE", "stale-frame", mdatatest.SampleUUID} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--fault", "sideways"}, {"--bogus"}, {"extra"}, {"--count", "-1"}, {"--unix", "x", "--stale"},
	} {
		var out, errb strings.Builder
		if code := run(context.Background(), args, &out, &errb); code != 3 {
			t.Errorf("%q: exit %d, want 3 (stderr %q)", args, code, errb.String())
		}
		if errb.Len() == 0 {
			t.Errorf("%q: no message", args)
		}
	}
}

// TestServeUnix starts the simulator on a socket with a fault and reads
// sdc:uuid through it.
func TestServeUnix(t *testing.T) {
	sock := t.TempDir() + "/metadata.sock"
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--unix", sock, "--fault", "fail-probe", "--count", "1"}, pw, io.Discard)
		pw.Close()
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d", code)
		}
	}()
	path, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || path != sock+"\n" {
		t.Fatalf("printed %q, %v", path, err)
	}
	go io.Copy(io.Discard, pr)
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("\n\nGET sdc:uuid\n"))
	r := bufio.NewReader(c)
	var got []string
	for range 4 {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	want := []string{"FAILURE\n", "invalid command\n", "SUCCESS\n", mdatatest.SampleUUID + "\n"}
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Errorf("got %q, want %q", got, want)
	}
}
