package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// A watch with nothing to watch is ready at once: it tells the service
// manager and marks this boot's readiness for status --wait; a watch that
// only plans writes no mark.
func TestWatchReadyMark(t *testing.T) {
	const boot = "9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e44"
	for _, mode := range []agent.NetworkMode{agent.NetworkApply, agent.NetworkPlan} {
		root := t.TempDir()
		p := filepath.Join(root, agent.BootIDPath)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(boot+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		cfg.Events.Network = []string{"boot"}
		var sent []string
		e := agent.Env{Root: sysroot.Root(root), Config: cfg, Notify: func(s string) { sent = append(sent, s) }}
		if err := agent.Watch(context.Background(), e, agent.WatchOptions{Network: mode}); err != nil {
			t.Fatal(err)
		}
		if len(sent) != 1 || sent[0] != "READY=1\nSTATUS=hotplug is not in events.network; nothing to watch" {
			t.Errorf("%s: sent %q", mode, sent)
		}
		ready := agent.WatchIsReady(sysroot.Root(root), boot)
		if ready != (mode == agent.NetworkApply) {
			t.Errorf("%s: marked ready %v", mode, ready)
		}
		if agent.WatchIsReady(sysroot.Root(root), "0d3e5a71-c2b4-4f08-a9e6-7b1f3c5d8a20") {
			t.Errorf("%s: the mark counts for another boot", mode)
		}
	}
}

// On the stream JOURNAL_STREAM names, each line carries its level's
// priority for journald ("<4>" a warning, "<6>" information), the text
// otherwise as before; any other writer keeps the plain text.
func TestNewLoggerJournal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", st.Dev, st.Ino))
	lg := agent.NewLogger(f)
	lg.Warn("hello", "nic", "eth1")
	lg.With("boot", "a").Info("read")
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if want := "<4>level=WARN msg=hello nic=eth1\n<6>level=INFO msg=read boot=a\n"; string(b) != want {
		t.Errorf("the journal's stream got %q, want %q", b, want)
	}
	var buf bytes.Buffer
	agent.NewLogger(&buf).Warn("hello", "nic", "eth1")
	if buf.String() != "level=WARN msg=hello nic=eth1\n" {
		t.Errorf("text under journald: %q", buf.String())
	}
}
