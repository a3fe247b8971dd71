package journallog

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/seedkeeper/seedkeeper/internal/safetext"
)

// Identifier is the SYSLOG_IDENTIFIER of seedkeeper's records.
const Identifier = "seedkeeper"

// FieldPrefix starts the name of the journal field of each attribute of
// a record: iface=eth1 is SEEDKEEPER_IFACE=eth1.
const FieldPrefix = "SEEDKEEPER_"

// EnvConsole, set to 1 by a unit whose output also goes to the console
// (journal+console), has each record's text line written to /dev/console
// too when records go to the journal's socket: journald forwards a
// stream's lines to the console, never a record sent to its socket.
const EnvConsole = "SEEDKEEPER_LOG_CONSOLE"

// send is journal.Send; a test replaces it.
var send = journal.Send

// NewJournalHandler sends each record to the journal's own socket, with
// its level's PRIORITY, SYSLOG_IDENTIFIER=seedkeeper, CODE_FILE,
// CODE_LINE and CODE_FUNC, each attribute as a field of its own
// (FieldName), and as MESSAGE the text handler's line, so that journalctl
// shows what the stream showed. unit, the unit the process runs in
// (OwnUnit), is sent as OBJECT_SYSTEMD_UNIT: journald takes _SYSTEMD_UNIT
// from the sender's cgroup, which it can no longer read once a
// short-lived process has exited, while "journalctl -u UNIT" also matches
// OBJECT_SYSTEMD_UNIT=UNIT on a record from uid 0 (_UID, which the kernel
// gives journald for every datagram). A record the socket does not take
// is written to stream as NewStreamHandler writes it, so nothing is lost;
// console, when not nil, gets every text line too.
func NewJournalHandler(unit string, stream, console io.Writer) slog.Handler {
	shared := &journalShared{stream: stream, console: console}
	return &journalHandler{unit: unit, shared: shared, text: NewTextHandler(&shared.buf, true)}
}

type journalShared struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	stream  io.Writer
	console io.Writer
}

type journalHandler struct {
	unit   string
	shared *journalShared
	attrs  []slog.Attr // WithAttrs, with their group prefix in the key
	group  string      // the WithGroup prefix, "a.b."
	text   slog.Handler
}

func (h *journalHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *journalHandler) Handle(ctx context.Context, r slog.Record) error {
	vars := map[string]string{"SYSLOG_IDENTIFIER": Identifier}
	if h.unit != "" {
		vars["OBJECT_SYSTEMD_UNIT"] = h.unit
	}
	if r.PC != 0 {
		f, _ := runtime.CallersFrames([]uintptr{r.PC}).Next()
		vars["CODE_FILE"], vars["CODE_LINE"], vars["CODE_FUNC"] = f.File, strconv.Itoa(f.Line), f.Function
	}
	for _, a := range h.attrs {
		addField(vars, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		addField(vars, h.group, a)
		return true
	})

	s := h.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Reset()
	if err := h.text.Handle(ctx, r); err != nil {
		return err
	}
	line := s.buf.Bytes()
	prio := Priority(r.Level)
	if err := send(strings.TrimSuffix(string(line), "\n"), prio, vars); err != nil {
		// The stream: journald forwards it to the console itself.
		_, err = (&prioWriter{w: s.stream, prio: prio}).Write(line)
		return err
	}
	if s.console != nil {
		s.console.Write(line) // best effort, as journald's forwarding is
	}
	return nil
}

func (h *journalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	n.text = h.text.WithAttrs(attrs)
	n.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range attrs {
		n.attrs = append(n.attrs, slog.Attr{Key: h.group + a.Key, Value: a.Value})
	}
	return &n
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.text = h.text.WithGroup(name)
	n.group = h.group + name + "."
	return &n
}

// addField adds the attribute a, under the group prefix, as its field;
// a group's attributes each as their own.
func addField(vars map[string]string, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			addField(vars, prefix+a.Key+".", g)
		}
		return
	}
	if name := FieldName(prefix + a.Key); name != "" {
		vars[name] = fieldValue(v.String())
	}
}

// maxFieldValue bounds one field's value: an attribute may carry what the
// metadata said, which the text line quotes and the field must not carry
// whole either.
const maxFieldValue = 4 << 10

// fieldValue is v as a field holds it: escaped as the text line is
// (safetext), and cut at maxFieldValue.
func fieldValue(v string) string {
	v = safetext.Escape(v)
	if len(v) > maxFieldValue {
		v = strings.ToValidUTF8(v[:maxFieldValue], "") + "…"
	}
	return v
}

// maxFieldName is journald's longest field name.
const maxFieldName = 64

// FieldName is the journal field of the attribute key: FieldPrefix and
// the key in upper case, each character that is not a letter or a digit
// made "_" (iface -> SEEDKEEPER_IFACE, instance-id ->
// SEEDKEEPER_INSTANCE_ID, a group's "nic.mac" -> SEEDKEEPER_NIC_MAC); ""
// when that is longer than journald takes.
func FieldName(key string) string {
	var b strings.Builder
	b.WriteString(FieldPrefix)
	for _, c := range key {
		switch {
		case c >= 'a' && c <= 'z':
			b.WriteRune(c - 'a' + 'A')
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() > maxFieldName || key == "" {
		return ""
	}
	return b.String()
}

// OwnUnit is the systemd unit this process runs in, as its cgroup names
// it ("seedkeeper-boot.service"); "" outside a system service.
func OwnUnit() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	return unitOfCgroup(string(b))
}

// unitOfCgroup reads /proc/self/cgroup's text: the unified hierarchy's
// line ("0::/system.slice/NAME.service"), or the named systemd
// hierarchy's on a legacy one; the last element that is a service.
func unitOfCgroup(text string) string {
	var path string
	for _, line := range strings.Split(text, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && path == "" {
			path = p
		}
		if _, p, ok := strings.Cut(line, ":name=systemd:"); ok {
			path = p
		}
	}
	for _, el := range strings.Split(path, "/") {
		if strings.HasSuffix(el, ".service") && !strings.HasPrefix(el, ".") {
			return el
		}
	}
	return ""
}

// NativeUnit says whether the records of a process whose stderr is f
// should go to the journal's socket, and the unit to name in them: f is
// the journal's stream, the socket is there, the process runs as root
// (journalctl -u trusts OBJECT_SYSTEMD_UNIT only from uid 0) in a
// service whose name its cgroup gives.
func NativeUnit(f *os.File) (string, bool) {
	if !IsStream(f) || os.Geteuid() != 0 || !journal.Enabled() {
		return "", false
	}
	u := OwnUnit()
	return u, u != ""
}
