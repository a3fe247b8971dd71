package journallog

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/journal"
)

// Identifier is the SYSLOG_IDENTIFIER of every record sent, the name a
// stream line of the same unit carries.
const Identifier = "seedkeeper"

// FieldPrefix starts the name of every field made of an attribute.
const FieldPrefix = "SEEDKEEPER_"

// Sender sends one entry to the journal: journal.Send.
type Sender func(message string, priority journal.Priority, fields map[string]string) error

// Handler sends each record to the journal. When a send fails (no
// journald socket in the sandbox) the record is written as text to the
// fallback instead, so that nothing is lost.
type Handler struct {
	send     Sender
	fallback slog.Handler
	// text renders the message: the record's text line without its time
	// and level (the journal keeps both itself).
	text   slog.Handler
	buf    *bytes.Buffer
	mu     *sync.Mutex
	prefix string      // the open groups, "A_B_"
	attrs  []slog.Attr // WithAttrs's, their keys already prefixed
	level  slog.Leveler
}

// New returns a Handler sending with send (nil: journal.Send), at level
// and above, falling back to fallback.
func New(send Sender, level slog.Leveler, fallback slog.Handler) *Handler {
	if send == nil {
		send = journal.Send
	}
	if level == nil {
		level = slog.LevelInfo
	}
	buf := new(bytes.Buffer)
	text := slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
			return slog.Attr{}
		}
		return a
	}})
	return &Handler{send: send, fallback: fallback, text: text, buf: buf, mu: new(sync.Mutex), level: level}
}

// Enabled reports whether level is logged.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// Handle sends r.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	h.buf.Reset()
	err := h.text.Handle(ctx, r)
	rest := strings.TrimSuffix(h.buf.String(), "\n")
	h.mu.Unlock()
	if err != nil {
		return err
	}
	msg := r.Message
	if rest != "" {
		msg += " " + rest
	}
	fields := Fields(h.prefix, h.attrs, r)
	if err := h.send(msg, Priority(r.Level), fields); err != nil && h.fallback != nil {
		return h.fallback.Handle(ctx, r)
	}
	return nil
}

// WithAttrs returns a Handler adding attrs to every record.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.text = h.text.WithAttrs(attrs)
	if h.fallback != nil {
		c.fallback = h.fallback.WithAttrs(attrs)
	}
	c.attrs = slices.Concat(h.attrs, prefixed(h.prefix, attrs))
	return &c
}

// WithGroup returns a Handler whose next attributes are in group name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.text = h.text.WithGroup(name)
	if h.fallback != nil {
		c.fallback = h.fallback.WithGroup(name)
	}
	c.prefix = h.prefix + name + "_"
	return &c
}

func prefixed(prefix string, attrs []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = slog.Attr{Key: prefix + a.Key, Value: a.Value}
	}
	return out
}

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

// Fields are the journal fields of r: SYSLOG_IDENTIFIER and, per
// attribute (the handler's own, whose keys carry their groups already, then
// the record's under prefix), FieldName of its key with the groups it is
// in, and its value as text (a time in RFC 3339). An attribute whose name
// is empty after the mapping is left out; of two with one name, the last
// wins.
func Fields(prefix string, attrs []slog.Attr, r slog.Record) map[string]string {
	f := map[string]string{"SYSLOG_IDENTIFIER": Identifier}
	var add func(prefix string, a slog.Attr)
	add = func(prefix string, a slog.Attr) {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindGroup {
			p := prefix
			if a.Key != "" {
				p += a.Key + "_"
			}
			for _, g := range v.Group() {
				add(p, g)
			}
			return
		}
		name := FieldName(prefix + a.Key)
		if name == "" {
			return
		}
		switch v.Kind() {
		case slog.KindTime:
			f[name] = v.Time().Format(time.RFC3339Nano)
		default:
			f[name] = v.String()
		}
	}
	for _, a := range attrs {
		add("", a)
	}
	r.Attrs(func(a slog.Attr) bool { add(prefix, a); return true })
	return f
}

// FieldName is the journal field name of an attribute key: FieldPrefix
// and the key in upper case, each character that may not be in a field
// name (journald takes A-Z, 0-9 and _, at most 64 bytes) as _. It is ""
// for an empty key.
func FieldName(key string) string {
	if key == "" {
		return ""
	}
	b := []byte(FieldPrefix + strings.ToUpper(key))
	for i, c := range b {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
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
