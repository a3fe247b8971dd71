package journallog

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"
)

func TestPriority(t *testing.T) {
	for l, want := range map[slog.Level]journal.Priority{
		slog.LevelDebug: journal.PriDebug, slog.LevelInfo: journal.PriInfo, slog.LevelInfo + 2: journal.PriWarning,
		slog.LevelWarn: journal.PriWarning, slog.LevelError: journal.PriErr, slog.LevelError + 4: journal.PriCrit,
	} {
		if got := Priority(l); got != want {
			t.Errorf("Priority(%v) = %d, want %d", l, got, want)
		}
	}
}

// JOURNAL_STREAM names the stream journald reads by device and inode:
// only that file is the journal; another file, a malformed value or none
// is not.
func TestIsStream(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	stream, other := open("stream"), open("other")
	fi, err := stream.Stat()
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	for env, want := range map[string]bool{
		fmt.Sprintf("%d:%d", st.Dev, st.Ino):   true,
		fmt.Sprintf("%d:%d", st.Dev, st.Ino+1): false,
		fmt.Sprintf("%d:%d", st.Dev+1, st.Ino): false,
		fmt.Sprintf("%d", st.Ino):              false,
		fmt.Sprintf("%d:%dx", st.Dev, st.Ino):  false,
		"":                                     false,
	} {
		t.Setenv(EnvStream, env)
		if got := IsStream(stream); got != want {
			t.Errorf("JOURNAL_STREAM=%q: IsStream = %v, want %v", env, got, want)
		}
	}
	t.Setenv(EnvStream, fmt.Sprintf("%d:%d", st.Dev, st.Ino))
	if IsStream(other) {
		t.Errorf("another file is taken for the stream")
	}
}

// The text handler is today's line: with a time on a terminal, without
// when journald reads the stream.
func TestNewTextHandler(t *testing.T) {
	var a, b bytes.Buffer
	slog.New(NewTextHandler(&a, false)).Info("hello", "nic", "eth0")
	slog.New(NewTextHandler(&b, true)).Info("hello", "nic", "eth0")
	if !strings.HasPrefix(a.String(), "time=") || !strings.HasSuffix(a.String(), " level=INFO msg=hello nic=eth0\n") {
		t.Errorf("terminal: %q", a.String())
	}
	if b.String() != "level=INFO msg=hello nic=eth0\n" {
		t.Errorf("journal stream: %q", b.String())
	}
}
