package journallog

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/coreos/go-systemd/v22/journal"
)

// Priority is the journal priority of a level: debug 7, info 6, warn 4,
// error 3; a level between two takes the more urgent one's.
func Priority(l slog.Level) journal.Priority {
	switch {
	case l > slog.LevelError:
		return journal.PriCrit
	case l > slog.LevelWarn:
		return journal.PriErr
	case l > slog.LevelInfo:
		return journal.PriWarning
	case l > slog.LevelDebug:
		return journal.PriInfo
	}
	return journal.PriDebug
}

// NewTextHandler is the text handler of the console and of a terminal:
// key=value, without a timestamp when journald (which adds its own) is
// reading the stream (JOURNAL_STREAM is set).
func NewTextHandler(w io.Writer, journalReads bool) slog.Handler {
	opts := &slog.HandlerOptions{}
	if journalReads {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
	}
	return slog.NewTextHandler(w, opts)
}

// NewStreamHandler is the handler of the stream journald reads (stderr of
// a unit, JOURNAL_STREAM): the text handler's line, each prefixed with its
// level's priority as "<N>", which journald takes as the line's priority
// (SyslogLevelPrefix=, on by default) and strips. The stream, not the
// journal's own socket: journald attributes a stream's lines to their unit
// even after a short-lived process (seedkeeper boot) has exited, and
// forwards them to the console where the unit asks for journal+console;
// a record sent to the socket by a process already gone has no unit, and
// "journalctl -u" misses it.
func NewStreamHandler(w io.Writer) slog.Handler {
	pw := &prioWriter{w: w}
	return &streamHandler{inner: NewTextHandler(pw, true), pw: pw}
}

type prioWriter struct {
	mu   sync.Mutex
	w    io.Writer
	prio journal.Priority
}

// Write writes one line, prefixed with the priority of the record being
// handled (the text handler writes a record in one Write).
func (p *prioWriter) Write(b []byte) (int, error) {
	line := make([]byte, 0, len(b)+4)
	line = append(line, '<', byte('0'+p.prio), '>')
	line = append(line, b...)
	if _, err := p.w.Write(line); err != nil {
		return 0, err
	}
	return len(b), nil
}

type streamHandler struct {
	inner slog.Handler
	pw    *prioWriter
}

func (h *streamHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *streamHandler) Handle(ctx context.Context, r slog.Record) error {
	h.pw.mu.Lock()
	defer h.pw.mu.Unlock()
	h.pw.prio = Priority(r.Level)
	return h.inner.Handle(ctx, r)
}

func (h *streamHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &streamHandler{inner: h.inner.WithAttrs(attrs), pw: h.pw}
}

func (h *streamHandler) WithGroup(name string) slog.Handler {
	return &streamHandler{inner: h.inner.WithGroup(name), pw: h.pw}
}
