package agent

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// What a stack's reload command prints is text from another program: a
// command that fails printing a megabyte reaches the log as a bounded
// excerpt that says how much more there was.
func TestReloadStackOutputBounded(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "run/dbus"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "run/dbus/system_bus_socket"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	script := "#!/bin/sh\nhead -c 1048576 /dev/zero | tr '\\0' x\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "nmcli"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	var log bytes.Buffer
	e := &Env{Root: sysroot.Root(root), Log: slog.New(slog.NewTextHandler(&log, nil))}
	if e.reloadStack(context.Background(), &netcfg.StackFiles{Stack: netcfg.NetworkManager}) {
		t.Fatal("a failing nmcli reported as reloaded")
	}
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if len(l) > 2048 {
			t.Errorf("a log line of %d bytes: %.200s", len(l), l)
		}
		if strings.Contains(l, "reload failed") && !strings.Contains(l, "more bytes") {
			t.Errorf("the excerpt does not say how much more there was: %.300s", l)
		}
	}
}
